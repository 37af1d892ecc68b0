/*
 * The policy file format, written once: a TypeBox definition from which come both the JSON Schema
 * (policies/schema.json, for editors, `$schema` users and ajv) and the TypeScript types of a file
 * as read, before defaults are applied and durations, sizes and host patterns are parsed
 * (PolicyDocument and its parts, below). The sections the egress proxy reads are in
 * schema-def-egress.ts.
 *
 * Build input only: scripts/postbuild.js emits the JSON Schema from here (schema-def-text.ts)
 * and compiles the validator from it, so the package never loads TypeBox (the runtime imports
 * types from these modules, never values, and they are left out of the package). The public
 * types (effective.ts) stay plain interfaces, so that a consumer's declarations do not reach
 * TypeBox either.
 *
 * `$ref`s point into `$defs` as before; `ref` gives each the type of the definition it names.
 * Keywords TypeBox has no builder for (`enum`, `const`, `dependentRequired`, `oneOf` of required
 * keys, `propertyNames`) are written as JSON Schema and typed with Type.Unsafe.
 */
import { Type, type Static } from '@sinclair/typebox';
import { oneOfValues, ref } from './schema-def-builders';
import { HostPattern, HttpToken, Network, SecretBinding, Upstream } from './schema-def-egress';

// --- shared definitions ($defs) ---------------------------------------------------------------

const ExtendsTarget = Type.String({
  title: 'a policy file path (relative to this file) or `execgate:NAME`',
  minLength: 1,
  maxLength: 4096,
  pattern: '^[^\\u0000]+$',
});

const Duration = Type.Union([
  Type.Integer({ minimum: 0, maximum: 2147483647 }),
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$' }),
], { title: 'a duration: whole milliseconds, or a number with a unit such as `500ms`, `30s`, `5m`, `2h`, `1d`' });

const Size = Type.Union([
  Type.Integer({ minimum: 0 }),
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$' }),
], { title: 'a size: whole bytes, or a number with a unit such as `64KiB`, `1MiB`, `2GiB`, `500KB`' });

const Mode = Type.Object({
  allowed: Type.Optional(Type.Boolean({ description: 'Whether requests may use this mode.' })),
  timeout: Type.Optional(ref('duration', Duration, {
    description: 'The timeout a request gets when it asks for none. 0 = none (then `maxTimeout`, when set, applies).',
  })),
  maxTimeout: Type.Optional(ref('duration', Duration, {
    description: 'The longest timeout a request may ask for; longer ones (and `timeout: 0`) are cut to it. 0 = no maximum.',
  })),
}, { additionalProperties: false, description: 'One execution mode.' });

const Exec = Type.Object({
  modes: Type.Optional(Type.Object({
    sync: Type.Optional(ref('mode', Mode)),
    pty: Type.Optional(ref('mode', Mode)),
    background: Type.Optional(ref('mode', Mode)),
  }, { additionalProperties: false })),
  grace: Type.Optional(ref('duration', Duration, { description: 'Time between SIGTERM and SIGKILL when a run is stopped.' })),
  drainTimeout: Type.Optional(ref('duration', Duration, {
    description: 'After the main process exits, how long to keep reading output that escaped processes may still hold open.',
  })),
  output: Type.Optional(Type.Object({
    maxBytes: Type.Optional(ref('size', Size, {
      description: 'Bytes of each stream kept in memory (head + tail); the middle is cut with a notice. At least 1KiB.',
    })),
    maxFileBytes: Type.Optional(ref('size', Size, {
      description: 'Cap of the full (redacted) output file kept when output was cut. At least 1KiB.',
    })),
  }, { additionalProperties: false })),
  background: Type.Optional(Type.Object({
    maxConcurrent: Type.Optional(Type.Integer({
      minimum: 1,
      maximum: 10000,
      description: 'Background processes that may run at once per gateway; one more is refused.',
    })),
    maxFileBytes: Type.Optional(ref('size', Size, { description: 'Cap of each background output file. At least 1KiB.' })),
    ringBytes: Type.Optional(ref('size', Size, { description: 'Recent output kept in memory per background process. At least 1KiB.' })),
    onClose: Type.Optional(oneOfValues(['kill', 'keep'], {
      description: 'What closing the gateway does with background processes still running.',
    })),
  }, { additionalProperties: false })),
}, { additionalProperties: false, description: 'Modes, timeouts, the grace period, output limits and background limits.' });

const Cwd = Type.Object({
  roots: Type.Optional(Type.Array(Type.String({
    title: 'an absolute directory path, or one starting with `~/`',
    pattern: '^(/|~/|~$)[^\\u0000]*$',
  }), {
    maxItems: 256,
    uniqueItems: true,
    description: "Directories a request's working directory must be inside (symlinks resolved first), and the workspace every sandboxed run may write. Empty: requests may name any directory (outside the workspace it is read-only), and the gateway's own working directory is the workspace. The temp directory itself (/tmp) cannot be one: each run gets a private one.",
  })),
}, { additionalProperties: false, description: 'Where commands may run.' });

const EnvName = Type.String({ title: 'a variable name, or a prefix ending in `*`', pattern: '^[^=\\u0000*]+\\*?$' });

const EnvNames = Type.Array(ref('envName', EnvName), { uniqueItems: true, maxItems: 1024 });

const Flags = Type.Array(Type.String({
  title: 'a flag: one letter (`r`) or a long option name (`force`)',
  pattern: '^[A-Za-z0-9][A-Za-z0-9-]*$',
}), {
  minItems: 1,
  maxItems: 64,
  description: 'With `command`: the command must also carry every one of these options, in any order or cluster (`flags: [r, f]` matches `rm -rf`, `rm -fr`, `rm -r -f`, `rm -Rf`, `rm --recursive --force`). A one-letter flag matches either case and the long option starting with that letter; a longer one matches that long option.',
});

const Regex = Type.String({ title: 'a JavaScript regular expression', minLength: 1, maxLength: 4096 });

const Env = Type.Object({
  mode: Type.Optional(oneOfValues(['inherit', 'allowlist'], {
    description: "`inherit`: start from the gateway's environment (hazards stripped, secrets withheld). `allowlist`: start from HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_*, TZ, TMPDIR and `allowlist`.",
  })),
  allowlist: Type.Optional(ref('envNames', EnvNames, {
    description: 'In allowlist mode, more inherited variables to copy (a trailing `*` makes a prefix).',
  })),
  allowSecrets: Type.Optional(ref('envNames', EnvNames, {
    description: 'Secret-looking variables let through to the child anyway; their values are masked in output.',
  })),
  strip: Type.Optional(ref('envNames', EnvNames, { description: 'More variables to remove, on top of the built-in hazard list.' })),
  secretNamePatterns: Type.Optional(Type.Array(ref('regex', Regex), {
    maxItems: 256,
    description: 'Regular expressions over variable names that mark more variables as secret (withheld).',
  })),
  secretValuePatterns: Type.Optional(Type.Array(ref('regex', Regex), {
    maxItems: 256,
    description: 'Regular expressions over variable values that mark more variables as secret (withheld).',
  })),
  requestable: Type.Optional(ref('envNames', EnvNames, {
    description: "When set, the only variables a request's `env` may set (a trailing `*` makes a prefix); any other is refused (EXECGATE_ERR_ENV_NOT_REQUESTABLE). A policy that allows only some commands should leave out HOME, PATH, XDG_* and GIT_*, which point those commands at other configuration.",
  })),
  // A mapping of any names: TypeBox's Record would say so with `patternProperties`; the names'
  // own rule (`propertyNames`) is what gives a person a message about a bad name.
  set: Type.Optional(Type.Unsafe<Record<string, string>>({
    type: 'object',
    description: 'Variables set in every child, after sanitizing. A variable execgate strips as a hazard cannot be set here (load-time error).',
    maxProperties: 1024,
    propertyNames: { title: 'a variable name (no `=` or NUL)', pattern: '^[^=\\u0000]+$' },
    additionalProperties: Type.String({ title: 'a string value', pattern: '^[^\\u0000]*$' }),
  })),
  path: Type.Optional(Type.String({
    title: 'a PATH value',
    pattern: '^[^\\u0000]*$',
    description: 'PATH for every child (replaces the inherited one).',
  })),
}, { additionalProperties: false, description: 'How the child environment is built.' });

const CommandWords = Type.Union([
  Type.String({ pattern: '\\S' }),
  Type.Array(Type.String({ pattern: '\\S' }), { minItems: 1, maxItems: 256 }),
], { title: 'a command (its first words), or a list of commands' });

const Prefixes = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 256 }),
], { title: 'a text prefix, or a list of them' });

const RuleId = Type.String({
  title: 'an id: letters, digits and `. _ - : / [ ]`, starting with a letter or digit',
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$',
});

const Reason = Type.String({ title: 'a reason shown to the caller (1 to 500 characters)', minLength: 1, maxLength: 500 });

/* "Exactly one of `command`, `prefix`, `regex`" and "`flags` only with `command`": said in JSON
 * Schema for ajv and editors; the static type keeps all three optional (compile.ts picks). */
const ONE_MATCH_FORM = {
  dependentRequired: { flags: ['command'] },
  oneOf: [{ required: ['command'] }, { required: ['prefix'] }, { required: ['regex'] }],
};

const Rule = Type.Object({
  id: Type.Optional(ref('ruleId', RuleId, { description: 'Shown in decisions and audit records; default FILE:rules.list[N].' })),
  action: oneOfValues(['allow', 'deny'], { description: 'What a match decides.' }),
  command: Type.Optional(ref('commandWords', CommandWords, {
    description: 'Word form: a simple command in the text starts with these words (`git`, `git push`), compared after quote removal; commands behind wrappers (`sudo`, `env`, `xargs`, `find -exec`) and in code run by `sh -c` or `eval` count too. A deny rule matches when any simple command does; an allow rule only when every one does and the text was read with confidence.',
  })),
  flags: Type.Optional(ref('flags', Flags)),
  prefix: Type.Optional(ref('prefixes', Prefixes, {
    description: 'Prefix form: a simple command, its words joined by single spaces, starts with this text. Any (deny) / every (allow), as for `command`.',
  })),
  regex: Type.Optional(ref('regex', Regex, {
    description: 'A regular expression in RE2 syntax (no backreferences or lookaround) tested against the whole unresolved command text, in linear time.',
  })),
  reason: Type.Optional(ref('reason', Reason, { description: 'Why; shown to the caller when the rule denies.' })),
}, { additionalProperties: false, description: 'One command rule. Give exactly one of `command`, `prefix`, `regex`.', ...ONE_MATCH_FORM });

const Rules = Type.Object({
  default: Type.Optional(oneOfValues(['allow', 'deny'], { description: 'The decision when no rule matches.' })),
  reason: Type.Optional(ref('reason', Reason, { description: 'Shown to the caller when `default: deny` decides.' })),
  uncertain: Type.Optional(oneOfValues(['allow', 'deny'], {
    description: 'A command text the shell reader cannot read with confidence (a command name held in a variable or built at run time, code `eval` or `sh -c` gets from a variable, a shell reading its script from a pipe, an unterminated quote): `deny` refuses it before any rule is tried; `allow` (default) lets the rules decide, with allow rules and secret restrictions failing closed on it.',
  })),
  list: Type.Optional(Type.Array(ref('rule', Rule), {
    maxItems: 1024,
    description: 'Rules in order. Rules of an extended policy come first.',
  })),
}, { additionalProperties: false, description: 'Ordered command rules: the first rule that matches decides; when none does, `default` decides.' });

const RefPattern = Type.String({
  title: 'a reference such as `secret:NAME` or `decrypt:ID` (`*` matches any characters)',
  pattern: '^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$',
});

const Restriction = Type.Object({
  id: Type.Optional(ref('ruleId', RuleId)),
  ref: Type.Union([
    ref('refPattern', RefPattern),
    Type.Array(ref('refPattern', RefPattern), { minItems: 1, maxItems: 256 }),
  ], { description: 'The reference(s) this restriction applies to.' }),
  command: Type.Optional(ref('commandWords', CommandWords)),
  flags: Type.Optional(ref('flags', Flags)),
  prefix: Type.Optional(ref('prefixes', Prefixes)),
  regex: Type.Optional(ref('regex', Regex)),
  reason: Type.Optional(ref('reason', Reason)),
}, {
  additionalProperties: false,
  description: 'Which commands may use a secret. Give exactly one of `command`, `prefix`, `regex`; every simple command must match.',
  ...ONE_MATCH_FORM,
});

const SecretSource = Type.Object({
  name: Type.String({
    pattern: '^[a-z][a-z0-9-]{0,31}$',
    description: 'Short name for results, errors and audit records (`onepassword`); not `memory`, `env`, `keyring`, `vault` or `process`.',
  }),
  command: Type.Array(Type.String({ minLength: 1, maxLength: 4096, pattern: '^[^\\u0000]+$' }), {
    minItems: 1,
    maxItems: 64,
    description: 'The program and its arguments, run without a shell, outside every sandbox, as the gateway. `{name}` in an argument is replaced by the reference\'s name, `{ref}` by `secret:NAME`. The program is found on the gateway\'s PATH unless the path is absolute.',
  }),
  refs: Type.Array(ref('refPattern', RefPattern), {
    minItems: 1,
    maxItems: 256,
    uniqueItems: true,
    description: 'The `secret:` references this source answers (`secret:gh-*`); the first source whose patterns match is asked, after the environment, the keyring and the vault.',
  }),
  format: Type.Optional(oneOfValues(['text', 'json'], {
    description: '`text` (default): the output is the value (one trailing newline dropped). `json`: an object with `value` and optionally `expiresAt` (ISO date or epoch seconds; `expiration`/`Expiration` too) or `expiresIn` (seconds). No output, or a null `value`: not found.',
  })),
  timeout: Type.Optional(ref('duration', Duration, { description: 'How long the program may take before it (and what it started) is killed and the request fails. Default 10s.' })),
  maxAge: Type.Optional(ref('duration', Duration, { description: 'Longest a value is kept in the gateway\'s memory, whatever expiry the program gave. 0 = asked for on every use. Default 5m.' })),
}, { additionalProperties: false, description: 'A secret manager asked through its command-line client (a credential process).' });

const Secrets = Type.Object({
  alias: Type.Optional(Type.Boolean({ description: 'Accept the `{{secret:NAME}}` / `{{decrypt:ID}}` spelling. When false it is plain text.' })),
  minLength: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 1024,
    description: 'Shortest resolved value that may be used; shorter values are refused (they cannot be masked reliably).',
  })),
  allow: Type.Optional(Type.Array(ref('refPattern', RefPattern), {
    maxItems: 1024,
    uniqueItems: true,
    description: 'References that may be used at all. A command naming any other is denied. Default: all.',
  })),
  restrict: Type.Optional(Type.Array(ref('restriction', Restriction), {
    maxItems: 1024,
    description: 'Per-reference command restrictions; all that apply to a reference must be met.',
  })),
  unknown: Type.Optional(oneOfValues(['literal', 'warn', 'deny'], {
    description: 'A reference no source knows: `literal` (default) passes the token on as text; `warn` does that and logs a warning; `deny` refuses the run (EXECGATE_ERR_REF_UNKNOWN) before anything is spawned.',
  })),
  bind: Type.Optional(Type.Array(ref('secretBinding', SecretBinding), {
    maxItems: 1024,
    description: 'Secrets bound to the hosts they are for. A run using a bound secret may send it only there; with `delivery: inject` the run never receives the value at all (the egress proxy puts it into requests to those hosts). Lists from extended policies are combined.',
  })),
  sources: Type.Optional(Type.Array(ref('secretSource', SecretSource), {
    maxItems: 64,
    description: 'Secret managers asked through a program (`op read ...`, `vault kv get ...`, `gh auth token`) for the references they name. Lists from extended policies are combined; names must differ.',
  })),
}, { additionalProperties: false, description: 'Which references may be used, by which commands, and how.' });

const SandboxPath = Type.String({ title: 'an absolute path, or one starting with `~/`', pattern: '^(/|~/|~$)[^\\u0000]*$' });

const SandboxPaths = Type.Array(ref('sandboxPath', SandboxPath), { maxItems: 1024, uniqueItems: true });

const Sandbox = Type.Object({
  mode: Type.Optional(oneOfValues(['required', 'auto', 'off'], {
    description: '`required`: a run that cannot be sandboxed is refused (EXECGATE_ERR_SANDBOX_UNAVAILABLE) and nothing runs. `auto` (default): sandboxed wherever the platform allows, otherwise the run goes ahead unsandboxed and its result, its audit record and a one-time warning say why. `off`: never sandboxed.',
  })),
  helper: Type.Optional(Type.String({
    title: 'an absolute path to the bubblewrap executable',
    pattern: '^/[^\\u0000]*$',
    description: 'The bubblewrap executable; default the first `bwrap` in /usr/bin, /usr/local/bin, /bin.',
  })),
  network: Type.Optional(Type.Union([
    oneOfValues(['none', 'open'], {
      description: "Every run gets a private network namespace with loopback only, shared by the runs of one gateway (a server one run starts on 127.0.0.1 is reachable from the next); the host's loopback services, abstract UNIX sockets (a D-Bus session bus) and the gateway's own sockets are out of reach. `open` (default): every public host through the gateway's egress proxy. `none`: nothing leaves.",
    }),
    ref('network', Network),
  ], {
    description: "`open` or `none` (see above), or an egress policy `{mode: open|none|allowlist, allow, deny}` for the gateway's egress proxy.",
  })),
  filesystem: Type.Optional(Type.Object({
    hidden: Type.Optional(ref('sandboxPaths', SandboxPaths, {
      description: 'Paths that are empty (directories) or unreadable (files) inside the sandbox. Added to the built-in credential list (~/.ssh, ~/.aws, ~/.gnupg, ~/.kube, ...) and to what is always hidden (the state directory, the audit log, the session bus). A path that does not exist is skipped.',
    })),
    writable: Type.Optional(ref('sandboxPaths', SandboxPaths, {
      description: "Paths writable inside the sandbox besides the workspace (`cwd.roots`, else the gateway's working directory) and the private /tmp. Replaced whole by a policy that extends this one. A path that does not exist is skipped; a hidden path stays hidden; /tmp itself cannot be one.",
    })),
    readOnly: Type.Optional(ref('sandboxPaths', SandboxPaths, {
      description: "Paths kept read-only even inside a writable root (a repository's .git/hooks, say). A path that does not exist is skipped.",
    })),
  }, { additionalProperties: false, description: 'What a run sees of the file system.' })),
}, {
  additionalProperties: false,
  description: "The OS sandbox every run starts in (Linux: bubblewrap): its own user (no nested ones), PID, mount, IPC, UTS and network namespaces and a seccomp filter; the state directory, the audit log, the session bus and credential paths hidden; the file system read-only except the workspace (`cwd.roots`, else the gateway's working directory), a private /tmp and `filesystem.writable`; the mounts checked against the plan before the command starts.",
});

const Audit = Type.Object({
  enabled: Type.Optional(Type.Boolean({ description: 'Write the audit log (default true).' })),
  path: Type.Optional(Type.String({
    title: 'an absolute file path, or one starting with `~/`',
    pattern: '^(/|~/)[^\\u0000]*$',
    description: 'The audit log file; default $EXECGATE_HOME/audit.log.',
  })),
  destination: Type.Optional(oneOfValues(['file', 'stdout'], {
    description: "`file` (default): JSON lines in `path`. `stdout`: the gateway's standard output (for a log collector); the hash chain is kept either way.",
  })),
  maxBytes: Type.Optional(ref('size', Size, {
    description: 'Rotate the audit file before it would exceed this size; 0 turns rotation off. Default 64MiB.',
  })),
  maxFiles: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 100000,
    description: 'Rotated audit files kept (oldest removed first); 0 keeps all. Default 0.',
  })),
  fsync: Type.Optional(oneOfValues(['always', 'before-spawn', 'never'], {
    description: 'When records are flushed to disk: after every record, before anything is spawned (default), or never (the OS decides).',
  })),
  fingerprints: Type.Optional(Type.Boolean({ description: 'Record a keyed fingerprint of each resolved value (never the value).' })),
  env: Type.Optional(Type.Boolean({ description: 'Record the names of variables removed or withheld from each run.' })),
}, { additionalProperties: false, description: 'The audit log: where it goes and what it records. Read when the gateway starts.' });

// --- the file -----------------------------------------------------------------------------------

/** The policy file format: the root schema, with every shared definition in its `$defs`. */
export const PolicySchema = Type.Object({
  $schema: Type.Optional(Type.String({ description: 'The JSON Schema of this file, for editors (ignored by execgate).' })),
  version: Type.Unsafe<1>({
    title: 'the policy format version `1`',
    description: 'The policy format version. This execgate reads version 1.',
    const: 1,
  }),
  extends: Type.Optional(Type.Union([
    ref('extendsTarget', ExtendsTarget),
    Type.Array(ref('extendsTarget', ExtendsTarget), { minItems: 1, maxItems: 16 }),
  ], {
    title: 'a policy file path or a list of them',
    description: 'Policies this one is layered on, applied in order, then this file on top. Paths are relative to this file; `execgate:NAME` names a policy shipped with execgate (`execgate:default`, `execgate:strict`, `execgate:ci`).',
  })),
  exec: Type.Optional(ref('exec', Exec)),
  cwd: Type.Optional(ref('cwd', Cwd)),
  env: Type.Optional(ref('env', Env)),
  rules: Type.Optional(ref('rules', Rules)),
  secrets: Type.Optional(ref('secrets', Secrets)),
  audit: Type.Optional(ref('audit', Audit)),
  sandbox: Type.Optional(ref('sandbox', Sandbox)),
}, {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'urn:execgate:policy:1',
  title: 'execgate policy',
  description: 'What agents may run through execgate, with which secrets, in which directories, and how runs are limited and audited. Every key is optional except `version`; a key left out keeps the value of the policy this one extends, or of the embedded default.',
  additionalProperties: false,
  $defs: {
    extendsTarget: ExtendsTarget,
    duration: Duration,
    size: Size,
    mode: Mode,
    exec: Exec,
    cwd: Cwd,
    envName: EnvName,
    envNames: EnvNames,
    flags: Flags,
    regex: Regex,
    env: Env,
    commandWords: CommandWords,
    prefixes: Prefixes,
    ruleId: RuleId,
    reason: Reason,
    rule: Rule,
    rules: Rules,
    refPattern: RefPattern,
    restriction: Restriction,
    secrets: Secrets,
    secretBinding: SecretBinding,
    secretSource: SecretSource,
    httpToken: HttpToken,
    hostPattern: HostPattern,
    network: Network,
    sandboxPath: SandboxPath,
    sandboxPaths: SandboxPaths,
    sandbox: Sandbox,
    audit: Audit,
  },
});

// --- the file as read ---------------------------------------------------------------------------

/** A policy file as read and validated: every key as written, nothing defaulted or parsed. */
export type PolicyDocument = Static<typeof PolicySchema>;
/** `exec.modes.MODE`. */
export type ModeDocument = Static<typeof Mode>;
/** A duration as written: milliseconds, or text with a unit. */
export type DurationDocument = Static<typeof Duration>;
/** A size as written: bytes, or text with a unit. */
export type SizeDocument = Static<typeof Size>;
/** One entry of `rules.list`. */
export type RuleDocument = Static<typeof Rule>;
/** One entry of `secrets.restrict`. */
export type RestrictionDocument = Static<typeof Restriction>;
/** One entry of `secrets.sources`. */
export type SecretSourceDocument = Static<typeof SecretSource>;
/** One entry of `secrets.bind`. */
export type SecretBindingDocument = Static<typeof SecretBinding>;
/** `sandbox.network` in its object form. */
export type NetworkDocument = Static<typeof Network>;
/** `sandbox.network.upstream`. */
export type UpstreamDocument = Static<typeof Upstream>;
