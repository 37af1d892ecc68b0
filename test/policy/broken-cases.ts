/*
 * Broken policy files and the exact first problem each must produce. Shared by the loader test
 * and the gateway test. `files` are written into one directory; `main` is the file loaded.
 */

export interface BrokenCase {
  readonly name: string;
  readonly files: Readonly<Record<string, string | Buffer>>;
  readonly main: string;
  readonly code: string;
  /** The first problem, formatted `FILE:LINE:COL: message`. */
  readonly first: string | RegExp;
  /** How many problems in all (when more than one is expected). */
  readonly count?: number;
}

const garbage = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0xff, 0xfe, 0x10, 0x00, 0x3e, 0x00]);

export const BROKEN_CASES: readonly BrokenCase[] = [
  {
    name: 'wrong type (a word where a duration goes)',
    files: { 'p.yaml': 'version: 1\nexec:\n  grace: soon\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:3:10: `exec.grace`: expected a duration: whole milliseconds, or a number with a unit such as `500ms`, `30s`, `5m`, `2h`, `1d`, got `"soon"` (string)',
  },
  {
    name: 'misspelled key, with a suggestion',
    files: { 'p.yaml': 'version: 1\nexec:\n  modes:\n    sync:\n      timout: 30s\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:5:7: `exec.modes.sync.timout`: unknown key; did you mean `timeout`?',
  },
  {
    name: 'misspelled top-level key',
    files: { 'p.yaml': 'version: 1\nrule:\n  default: deny\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:2:1: `rule`: unknown key; did you mean `rules`?',
  },
  {
    name: 'unknown key with nothing close: the known keys are listed',
    files: { 'p.yaml': 'version: 1\ncwd:\n  sandbox: true\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:3:3: `cwd.sandbox`: unknown key; expected one of `roots`',
  },
  {
    name: 'invalid regular expression',
    files: { 'p.yaml': "version: 1\nrules:\n  list:\n    - id: bad\n      action: deny\n      regex: '(git'\n" },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:6:14: `rules.list[0].regex`: invalid regular expression (RE2 syntax, which runs in linear time): missing closing ): `(git`',
  },
  {
    name: 'conflicting settings: default timeout longer than the maximum',
    files: { 'p.yaml': 'version: 1\nexec:\n  modes:\n    sync: { timeout: 2h, maxTimeout: 1h }\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:38: `exec.modes.sync.maxTimeout`: conflicting settings: `timeout` (2h, from this file) is longer than `maxTimeout` (1h, from this file); the default must not exceed the maximum',
  },
  {
    name: 'conflicting settings across extends: the file that made them contradict is named',
    files: {
      'base.yaml': 'version: 1\nexec:\n  modes:\n    pty: { timeout: 10m }\n',
      'p.yaml': 'version: 1\nextends: ./base.yaml\nexec:\n  modes:\n    pty: { maxTimeout: 5m }\n',
    },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:5:24: `exec.modes.pty.maxTimeout`: conflicting settings: `timeout` (10m, from base.yaml) is longer than `maxTimeout` (5m, from this file); the default must not exceed the maximum',
  },
  {
    name: 'circular extends',
    files: { 'a.yaml': 'version: 1\nextends: ./b.yaml\n', 'b.yaml': 'version: 1\nextends: [./c.yaml]\n', 'c.yaml': 'version: 1\nextends: ./a.yaml\n' },
    main: 'a.yaml',
    code: 'EXECGATE_ERR_POLICY_EXTENDS_CYCLE',
    first: 'c.yaml:2:10: `extends`: circular `extends`: a.yaml -> b.yaml -> c.yaml -> a.yaml; a policy cannot extend itself',
  },
  {
    name: 'a policy that extends itself',
    files: { 'p.yaml': 'version: 1\nextends: p.yaml\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_EXTENDS_CYCLE',
    first: 'p.yaml:2:10: `extends`: circular `extends`: p.yaml -> p.yaml; a policy cannot extend itself',
  },
  {
    name: 'missing extends target',
    files: { 'p.yaml': 'version: 1\nextends:\n  - execgate:default\n  - ./org/base.yaml\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_NOT_FOUND',
    first: /^p\.yaml:4:5: `extends\[1\]`: cannot read the extended policy `org\/base\.yaml` \(\/.*\/org\/base\.yaml\): no such file$/,
  },
  {
    name: 'unknown shipped policy',
    files: { 'p.yaml': 'version: 1\nextends: execgate:strictest\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_NOT_FOUND',
    first: 'p.yaml:2:10: `extends`: no policy named `execgate:strictest` ships with execgate; shipped: `execgate:aws`, `execgate:ci`, `execgate:default`, `execgate:git-over-ssh`, `execgate:local-database`, `execgate:strict`',
  },
  {
    name: 'empty file',
    files: { 'p.yaml': '' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:1:1: the file is empty; a policy needs at least `version: 1`',
  },
  {
    name: 'only comments',
    files: { 'p.yaml': '# nothing here yet\n\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:1:1: the file is empty; a policy needs at least `version: 1`',
  },
  {
    name: 'binary garbage',
    files: { 'p.yaml': garbage },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:1:8: the file holds a NUL byte: it is binary, not a YAML or JSON text file',
  },
  {
    name: 'not UTF-8 (Latin-1 text)',
    files: { 'p.yaml': Buffer.concat([Buffer.from('version: 1\nrules:\n  reason: "Caf'), Buffer.from([0xe9]), Buffer.from('"\n')]) },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:3:15: the file is not valid UTF-8 text (binary data or another encoding); save it as UTF-8',
  },
  {
    name: 'huge file',
    files: { 'p.yaml': `version: 1\n${'# padding padding padding padding padding padding padding padding\n'.repeat(20_000)}` },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_TOO_LARGE',
    first: /^p\.yaml:1:1: the file is 13\d{5} bytes; a policy file may be at most 1048576 bytes \(1 MiB\)\. Is this the right file\?$/,
  },
  {
    name: 'YAML syntax error',
    files: { 'p.yaml': 'version: 1\ncwd:\n  roots: [/srv, /tmp\nenv:\n  mode: inherit\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:1: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
  },
  {
    name: 'duplicate keys',
    files: { 'p.yaml': 'version: 1\nsecrets:\n  minLength: 8\n  alias: false\n  minLength: 4\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:5:3: `secrets.minLength`: duplicate key `minLength`: a key may appear only once in a mapping',
  },
  {
    name: 'format version 2',
    files: { 'p.yaml': 'version: 2\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:1:10: `version`: this execgate reads policy format version 1, got `2` (whole number); check which execgate release the file was written for',
  },
  {
    name: 'missing version',
    files: { 'p.yaml': 'rules:\n  default: deny\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:1:1: missing `version`; a policy starts with `version: 1` (this file is not read as a policy, and nothing of it is shown)',
  },
  {
    // A file that is not a policy: its lines (a password file's hashes) never reach a message.
    name: 'extends a file that is not a policy',
    files: { 'p.yaml': 'version: 1\nextends: shadow\n', shadow: 'root:$6$salt$hash-SECRET-LINE:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'shadow:1:1: missing `version`; a policy starts with `version: 1` (this file is not read as a policy, and nothing of it is shown)',
  },
  {
    name: 'a list at the top level',
    files: { 'p.yaml': '- version: 1\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:1:1: expected a mapping of policy keys at the top level (starting with `version: 1`), got a list',
  },
  {
    name: 'a rule with two match forms',
    files: { 'p.yaml': 'version: 1\nrules:\n  list:\n    - action: deny\n      command: sudo\n      regex: sudo\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:7: `rules.list[0]`: give only one of `command`, `prefix`, `regex`, not `command` and `regex`',
  },
  {
    name: 'a rule with no action',
    files: { 'p.yaml': 'version: 1\nrules:\n  list:\n    - command: sudo\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:7: `rules.list[0]`: missing required key `action`',
  },
  {
    name: 'misspelled enum value',
    files: { 'p.yaml': 'version: 1\nenv:\n  mode: allowlst\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:3:9: `env.mode`: expected one of `inherit`, `allowlist`, got `"allowlst"` (string); did you mean `allowlist`?',
  },
  {
    name: 'a boolean where a command name goes',
    files: { 'p.yaml': 'version: 1\nrules:\n  list:\n    - action: allow\n      command: [make, true]\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:5:23: `rules.list[0].command[1]`: expected a string, got `true` (boolean); put it in quotes (`"true"`) to mean the text',
  },
  {
    name: 'a reference pattern without its kind',
    files: { 'p.yaml': 'version: 1\nsecrets:\n  allow: [github-token]\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:3:11: `secrets.allow[0]`: expected a reference such as `secret:NAME` or `decrypt:ID` (`*` matches any characters), got `"github-token"` (string)',
  },
  {
    name: 'a duration longer than a timer can hold',
    files: { 'p.yaml': 'version: 1\nexec:\n  modes:\n    background: { maxTimeout: 30d }\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:31: `exec.modes.background.maxTimeout`: expected at most 2147483647 ms (about 24.8 days, the longest timer Node.js keeps), got `30d`',
  },
  {
    name: 'an output limit below the minimum',
    files: { 'p.yaml': 'version: 1\nexec:\n  output:\n    maxBytes: 100\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:15: `exec.output.maxBytes`: expected at least 1KiB (1024 bytes), got `100`',
  },
  {
    name: 'two YAML documents',
    files: { 'p.yaml': 'version: 1\n---\nversion: 1\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:2:1: the file holds more than one YAML document (`---`); a policy is one document',
  },
  {
    name: 'a YAML tag',
    files: { 'p.yaml': 'version: 1\nenv:\n  set:\n    TOKEN: !env GITHUB_TOKEN\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:12: YAML tags are not supported in a policy: Unresolved tag: !env',
  },
  {
    name: 'allowlist that does nothing in inherit mode',
    files: { 'p.yaml': 'version: 1\nenv:\n  mode: inherit\n  allowlist: [NODE_ENV]\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:4:14: `env.allowlist`: has no effect with `env.mode: inherit` (set in the same file), which copies every variable; set `env.mode: allowlist` or remove the list',
  },
  {
    name: 'duplicate rule id across extends',
    files: {
      'base.yaml': 'version: 1\nrules:\n  list:\n    - { id: no-sudo, action: deny, command: sudo }\n',
      'p.yaml': 'version: 1\nextends: base.yaml\nrules:\n  list:\n    - { id: no-sudo, action: allow, command: sudo }\n',
    },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.yaml:5:13: `rules.list[0].id`: duplicate id `no-sudo`: already used in base.yaml (rules.list[0].id); ids name one rule each in decisions and audit records',
  },
  {
    name: 'JSON syntax error',
    files: { 'p.json': '{\n  "version": 1,\n  "rules": { "default": "deny", }\n}\n' },
    main: 'p.json',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.json:3:33: invalid JSON: Expected double-quoted property name',
  },
  {
    name: 'JSON with a wrong type',
    files: { 'p.json': '{\n  "version": 1,\n  "secrets": { "minLength": "8" }\n}\n' },
    main: 'p.json',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: 'p.json:3:29: `secrets.minLength`: expected a whole number, got `"8"` (string)',
  },
  {
    name: 'a missing file',
    files: {},
    main: 'nowhere.yaml',
    code: 'EXECGATE_ERR_POLICY_NOT_FOUND',
    first: 'nowhere.yaml:1:1: cannot read the policy file: no such file',
  },
  {
    name: 'several problems in one file are all reported, in order',
    files: { 'p.yaml': 'version: 1\nexec:\n  grace: -1\n  modes:\n    warp: { allowed: true }\ncwd:\n  roots: [relative/dir]\n' },
    main: 'p.yaml',
    code: 'EXECGATE_ERR_POLICY_INVALID',
    first: /^p\.yaml:3:10: `exec\.grace`: expected a duration/,
    count: 3,
  },
];
