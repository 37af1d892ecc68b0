/*
 * `execgate policy ...` and `execgate run --policy` as users run them: the built CLI
 * (`npm run build` first) in a real node process.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { POLICIES, REPO, writeFiles } from './helpers';

const CLI = join(REPO, 'dist', 'cli', 'main.js');
let tmp: ReturnType<typeof makeTempDir>;

beforeEach(() => { tmp = makeTempDir('execgate-policy-cli-'); });
afterEach(() => tmp.cleanup());

function execgate(args: string[], extraEnv: Record<string, string> = {}, nodeArgs: string[] = []): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [...nodeArgs, CLI, ...args], {
    cwd: tmp.dir,
    env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), ...extraEnv }) as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 30_000,
  });
}

const DENY_SUDO = 'version: 1\nrules:\n  list:\n    - id: no-sudo\n      action: deny\n      command: sudo\n      reason: Agents do not get root.\n';

describe('execgate policy check', () => {
  test('valid files: exit 0, one `FILE: ok` line each', () => {
    writeFiles(tmp.dir, { 'team.yaml': DENY_SUDO });
    const result = execgate(['policy', 'check', 'team.yaml', join(POLICIES, 'ci.yaml')]);
    expect(result.stdout).toBe(`team.yaml: ok\n${join(POLICIES, 'ci.yaml')}: ok\n`);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  test('problems: exit 1, one FILE:LINE:COL line each, valid files still reported', () => {
    writeFiles(tmp.dir, {
      'good.yaml': 'version: 1\n',
      'bad.yaml': 'version: 1\nexec:\n  modes:\n    sync:\n      timout: 30s\n  grace: soon\n',
    });
    const result = execgate(['policy', 'check', 'good.yaml', 'bad.yaml', 'missing.yaml']);
    expect(result.status).toBe(1);
    expect(result.stdout.split('\n')).toEqual([
      'good.yaml: ok',
      'bad.yaml:5:7: `exec.modes.sync.timout`: unknown key; did you mean `timeout`?',
      'bad.yaml:6:10: `exec.grace`: expected a duration: whole milliseconds, or a number with a unit such as `500ms`, `30s`, `5m`, `2h`, `1d`, got `"soon"` (string)',
      'missing.yaml:1:1: cannot read the policy file: no such file',
      '',
    ]);
  });

  test('--json: one object with every result', () => {
    writeFiles(tmp.dir, { 'good.yaml': 'version: 1\n', 'bad.yaml': 'version: 2\n' });
    const result = execgate(['policy', 'check', '--json', 'good.yaml', 'bad.yaml']);
    expect(result.status).toBe(1);
    const json = JSON.parse(result.stdout);
    expect(json.ok).toBe(false);
    expect(json.files[0]).toMatchObject({ file: 'good.yaml', ok: true, files: [join(tmp.dir, 'good.yaml')] });
    expect(json.files[1]).toEqual({
      file: 'bad.yaml',
      ok: false,
      problems: [{
        code: 'EXECGATE_ERR_POLICY_INVALID',
        file: 'bad.yaml',
        line: 1,
        column: 10,
        path: 'version',
        message: 'this execgate reads policy format version 1, got `2` (whole number); check which execgate release the file was written for',
        text: 'bad.yaml:1:10: `version`: this execgate reads policy format version 1, got `2` (whole number); check which execgate release the file was written for',
      }],
    });
  });
});

describe('execgate policy explain', () => {
  test('shows the decision and the rule; exit 1 when denied; nothing runs', () => {
    writeFiles(tmp.dir, { 'team.yaml': DENY_SUDO });
    const marker = join(tmp.dir, 'MARKER');
    const denied = execgate(['policy', 'explain', '--policy', 'team.yaml', '--', `touch ${marker}; sudo id`]);
    expect(denied.status).toBe(1);
    expect(denied.stdout).toContain('decision:   deny\nrule:       no-sudo\nreason:     Agents do not get root.\npolicy:     team.yaml\n');
    expect(denied.stdout).toContain(`commands:   touch ${marker} | sudo id`);
    expect(existsSync(marker)).toBe(false);

    const allowed = execgate(['policy', 'explain', '--policy', 'team.yaml', '--', 'git', 'status']);
    expect(allowed.status).toBe(0);
    expect(allowed.stdout).toContain('decision:   allow\nrule:       rules.default\n');
  });

  test('--json, --mode and --cwd; $EXECGATE_POLICY when no --policy is given', () => {
    writeFiles(tmp.dir, { 'team.yaml': 'version: 1\nexec: { modes: { pty: { allowed: false } } }\n' });
    const result = execgate(['policy', 'explain', '--json', '--mode', 'pty', '--cwd', '/', '--', 'echo <<secret:x>>'], { EXECGATE_POLICY: 'team.yaml' });
    expect(result.status).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      allowed: false,
      decision: 'deny',
      rule: 'exec.modes.pty.allowed',
      reason: 'the `pty` mode is turned off by the policy',
      policy: 'team.yaml',
      mode: 'pty',
      cwd: '/',
      references: ['<<secret:x>>'],
      commands: [{ words: ['echo', '<<secret:x>>(?)'] }],
      tokens: [{ reference: '<<secret:x>>', offset: 5, refused: false, context: 'unquoted' }],
      uncertain: [],
      sinks: [],
      sets: [],
      // The sandbox a run would get here (test/sandbox checks its contents).
      sandbox: expect.objectContaining({ sandboxed: expect.any(Boolean) }),
      // What the run could reach (test/egress checks it): the default `open`, or the host's network unsandboxed.
      network: expect.objectContaining({ mode: expect.stringMatching(/^(open|host)$/), allow: [], deny: [], bound: [], injected: [] }),
      // No `secrets.sources`: no program would be asked (test/refs/process-source.test.ts).
      sources: [],
    });
  });

  test('the variables a text sets are listed: they are part of the command', () => {
    const result = execgate(['policy', 'explain', '--', 'PATH=.:$PATH git status; export HOME=/x']);
    expect(result.stdout).toContain('sets:       PATH (assignment at 0), HOME (export at 32)');
    const json = JSON.parse(execgate(['policy', 'explain', '--json', '--', 'env GIT_DIR=x git log']).stdout) as { sets: unknown };
    expect(json.sets).toEqual([{ name: 'GIT_DIR', offset: 4, how: 'env' }]);
  });

  test('an invalid policy: exit 125 and one coded line', () => {
    writeFiles(tmp.dir, { 'bad.yaml': 'version: 1\nrules: { list: [{ action: deny, regex: "(" }] }\n' });
    const result = execgate(['policy', 'explain', '--policy', 'bad.yaml', '--', 'true']);
    expect(result.status).toBe(125);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('execgate: EXECGATE_ERR_POLICY_INVALID: The policy bad.yaml was not loaded: bad.yaml:2:40: `rules.list[0].regex`: invalid regular expression (RE2 syntax, which runs in linear time): missing closing ): `(`\n');
  });
});

describe('execgate policy schema and show', () => {
  test('schema prints policies/schema.json', () => {
    const result = execgate(['policy', 'schema']);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(readFileSync(join(POLICIES, 'schema.json'), 'utf8'));
    expect(JSON.parse(result.stdout).$schema).toBe('https://json-schema.org/draft/2020-12/schema');
  });

  test('show prints the resolved policy (after extends), itself a valid policy', () => {
    writeFiles(tmp.dir, { 'team.yaml': `version: 1\nextends: execgate:strict\n${DENY_SUDO.replace('version: 1\n', '')}` });
    const result = execgate(['policy', 'show', '--policy', 'team.yaml']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^# The resolved policy: team\.yaml <- .*strict\.yaml\n/);
    expect(result.stdout).toContain('mode: allowlist');
    expect(result.stdout).toMatch(/id: no-privilege-escalation[\s\S]*id: no-sudo/);
    writeFileSync(join(tmp.dir, 'shown.yaml'), result.stdout);
    expect(execgate(['policy', 'check', 'shown.yaml']).status).toBe(0);

    const json = JSON.parse(execgate(['policy', 'show', '--json', '--policy', 'team.yaml']).stdout);
    expect(json.exec.modes.background.allowed).toBe(false);
    expect(json.rules.list.at(-1)).toEqual({ id: 'no-sudo', action: 'deny', command: 'sudo', reason: 'Agents do not get root.' });
  });

  test('show without a policy prints the embedded default', () => {
    const result = execgate(['policy', 'show']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('# The resolved policy: <embedded default>');
  });

  test('`policy` alone prints its help; an unknown subcommand is a usage error naming that help', () => {
    const help = execgate(['policy']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/check[\s\S]*explain[\s\S]*schema[\s\S]*show[\s\S]*init/);
    const result = execgate(['policy', 'frob']);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe("execgate: EXECGATE_ERR_CLI_USAGE: unknown command 'frob' (see `execgate policy --help`)\n");
  });
});

describe('execgate run --policy', () => {
  test('a denied command: exit 125, one coded line with the rule and reason, nothing ran', () => {
    writeFiles(tmp.dir, { 'team.yaml': DENY_SUDO });
    const result = execgate(['run', '--policy', 'team.yaml', '--', 'touch MARKER; sudo id']);
    expect(result.status).toBe(125);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_POLICY_DENIED: .*Agents do not get root\. \(rule `no-sudo`\)\. Nothing was run\.\n$/);
    expect(existsSync(join(tmp.dir, 'MARKER'))).toBe(false);
  });

  test('an allowed command runs under the policy', () => {
    writeFiles(tmp.dir, { 'team.yaml': DENY_SUDO });
    const result = execgate(['run', '--policy', 'team.yaml', '--', 'echo ok']);
    expect(result.stdout).toBe('ok\n');
    expect(result.status).toBe(0);
  });

  test('an invalid or missing policy: exit 125, the FILE:LINE:COL problem, nothing ran', () => {
    writeFiles(tmp.dir, { 'bad.yaml': 'version: 1\nexec:\n  timeout: 5s\n' });
    const bad = execgate(['run', '--policy', 'bad.yaml', '--', 'touch MARKER']);
    expect(bad.status).toBe(125);
    expect(bad.stderr).toBe('execgate: EXECGATE_ERR_POLICY_INVALID: The policy bad.yaml was not loaded: bad.yaml:3:3: `exec.timeout`: unknown key; expected one of `modes`, `grace`, `drainTimeout`, `output`, `background`\n');
    const missing = execgate(['run', '--policy', 'nope.yaml', '--', 'touch MARKER']);
    expect(missing.status).toBe(125);
    expect(missing.stderr).toBe('execgate: EXECGATE_ERR_POLICY_NOT_FOUND: The policy nope.yaml was not loaded: nope.yaml:1:1: cannot read the policy file: no such file\n');
    expect(existsSync(join(tmp.dir, 'MARKER'))).toBe(false);
  });

  test('$EXECGATE_POLICY applies when --policy is not given', () => {
    writeFiles(tmp.dir, { 'team.yaml': DENY_SUDO });
    const result = execgate(['run', '--', 'sudo id'], { EXECGATE_POLICY: join(tmp.dir, 'team.yaml') });
    expect(result.status).toBe(125);
    expect(result.stderr).toContain('EXECGATE_ERR_POLICY_DENIED');
  });

  test('without a policy file neither the YAML parser nor ajv is loaded; with one, only ajv\'s small runtime helpers are', () => {
    // The validator is generated ahead of time: loading a policy needs `ajv/dist/runtime/*`, never ajv's compiler.
    const hook = join(tmp.dir, 'hook.js');
    writeFileSync(hook, "process.on('exit', () => { const loaded = Object.keys(require.cache).map((p) => /node_modules\\/(ajv\\/dist\\/runtime|ajv|yaml)\\//.exec(p)).filter(Boolean).map((m) => m[1]); process.stderr.write('LOADED:' + [...new Set(loaded)].sort().join(',') + '\\n'); });\n");
    const plain = execgate(['run', '--', 'true'], {}, ['-r', hook]);
    expect(plain.stderr).toBe('LOADED:\n');
    writeFiles(tmp.dir, { 'team.yaml': DENY_SUDO });
    const withPolicy = execgate(['run', '--policy', 'team.yaml', '--', 'true'], {}, ['-r', hook]);
    expect(withPolicy.status).toBe(0);
    expect(withPolicy.stderr).toBe('LOADED:ajv/dist/runtime,yaml\n');
  });
});
