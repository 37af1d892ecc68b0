/*
 * The CLI as users run it: the built `dist/cli/main.js` in a real node process.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { checkSandboxPlatform } from '../../src';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
let tmp: ReturnType<typeof makeTempDir>;

beforeEach(() => { tmp = makeTempDir(); });
afterEach(() => tmp.cleanup());

function execgate(args: string[], extraEnv: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, ...args], {
    cwd: tmp.dir,
    env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), ...extraEnv }) as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 30_000,
    maxBuffer: 64 * 1024 * 1024,
  });
}

describe('execgate run', () => {
  test('streams output and exits with the command status', () => {
    const result = execgate(['run', '--', 'echo out; echo err >&2; exit 3']);
    expect(result.stdout).toBe('out\n');
    expect(result.stderr).toBe('err\n');
    expect(result.status).toBe(3);
  });

  test('several words after -- are an argv; options after the first word belong to the command', () => {
    const result = execgate(['run', 'echo', '--json', 'x']);
    expect(result.stdout).toBe('--json x\n');
    expect(result.status).toBe(0);
  });

  test('masks a secret from the environment source, live', () => {
    const value = 'cli-secret-value-0123456789';
    const result = execgate(['run', '--', 'echo token=<<secret:cli-token>>'], { EXECGATE_SECRET_CLI_TOKEN: value });
    expect(result.stdout).toBe('token=[REDACTED:secret:cli-token]\n');
    expect(result.stderr).not.toContain(value);
    expect(result.status).toBe(0);
  });

  test('--json prints one object with the documented fields and exits 0 on command failure', () => {
    // (`/` holds the home directory: refused as a workspace, EXECGATE_ERR_WORKSPACE_HOLDS_HOME)
    const result = execgate(['run', '--json', '--cwd', '/usr', '--env', 'A=1', '--env', 'B=two=2', '--', 'echo "$A $B"; pwd; exit 7']);
    expect(result.status).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json).toMatchObject({
      stdout: '1 two=2\n/usr\n',
      stderr: '',
      output: '1 two=2\n/usr\n',
      exit_code: 7,
      signal: null,
      timed_out: false,
      truncated: { stdout: false, stderr: false, output: false },
      redactions: 0,
      cwd: '/usr',
      command: 'echo "$A $B"; pwd; exit 7',
    });
    for (const key of ['duration_ms', 'env_removed', 'env_withheld']) expect(json).toHaveProperty(key);
    expect(json).not.toHaveProperty('full_output_path');
  });

  test('--json reports full_output_path when output was cut', () => {
    const result = execgate(['run', '--json', '--', 'yes | head -c 3000000']);
    const json = JSON.parse(result.stdout);
    expect(json.truncated.stdout).toBe(true);
    expect(readFileSync(json.full_output_path).length).toBeGreaterThanOrEqual(3_000_000);
  });

  test('exit 124 on timeout, with a note on stderr', () => {
    const result = execgate(['run', '--timeout', '3', '--', 'echo partial; sleep 30']);
    expect(result.status).toBe(124);
    expect(result.stdout).toBe('partial\n');
    expect(result.stderr).toMatch(/timed out after 3000 ms/);
  });

  test('exit 128+N when the command is killed by signal N', () => {
    const result = execgate(['run', '--', 'kill -9 $$']);
    expect(result.status).toBe(137);
  });

  test.each([
    [['run', '--cwd', '/nonexistent-dir', '--', 'true'], 'EXECGATE_ERR_CWD_NOT_FOUND', 125],
    [['run', '--timeout', '-1', '--', 'true'], 'EXECGATE_ERR_INVALID_TIMEOUT', 125],
    [['run', '--timeout', 'soon', '--', 'true'], 'EXECGATE_ERR_INVALID_TIMEOUT', 125],
    [['run', '--env', 'NOEQUALS', '--', 'true'], 'EXECGATE_ERR_CLI_USAGE', 2],
    [['run', '--pty', '--', 'true'], 'EXECGATE_ERR_INVALID_OPTION', 125],
    [['run', '--mode', 'pty', '--cols', 'wide', '--', 'true'], 'EXECGATE_ERR_CLI_USAGE', 2],
    [['run', '--mode', 'warp', '--', 'true'], 'EXECGATE_ERR_INVALID_MODE', 125],
    [['run', '--policy', 'p.yaml', '--', 'true'], 'EXECGATE_ERR_POLICY_NOT_FOUND', 125],
    [['run', '--shell', 'bash', '--', 'true'], 'EXECGATE_ERR_INVALID_SHELL', 125],
    [['run', '--bogus', '--', 'true'], 'EXECGATE_ERR_CLI_USAGE', 2],
    [['run'], 'EXECGATE_ERR_CLI_USAGE', 2],
    [['frobnicate'], 'EXECGATE_ERR_CLI_USAGE', 2],
  ] as Array<[string[], string, number]>)('%j refuses with %s, exit %d, one coded line', (args, code, status) => {
    const result = execgate(args);
    expect(result.status).toBe(status);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^execgate: ${code}: `));
  });

  test('--help explains run, tokens and exit statuses', () => {
    const top = execgate(['--help']);
    expect(top.status).toBe(0);
    expect(top.stdout).toContain('run');
    expect(top.stdout).toContain('<<secret:NAME>>');
    const run = execgate(['run', '--help']);
    expect(run.status).toBe(0);
    for (const text of ['--json', '--mode', '--cwd', '--timeout', '--env', '--shell', '--policy', '<<secret:NAME>>', '<<decrypt:ID>>', '{{secret:NAME}}', '124', '125', '--verbose', 'curl -H "Authorization: Bearer <<secret:api-token>>"']) {
      expect(run.stdout).toContain(text);
    }
  });
});

describe('a reader that goes away', () => {
  test('piping into head ends quietly (no EPIPE crash)', () => {
    // More output than a pipe holds, so execgate is still writing when head exits.
    const result = spawnSync('bash', ['-c', `"${process.execPath}" "${CLI}" run -- 'echo Usage: execgate; yes | head -c 3000000' | head -1; echo "status=\${PIPESTATUS[0]}"`], {
      cwd: tmp.dir,
      env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home') }) as NodeJS.ProcessEnv,
      encoding: 'utf8',
    });
    expect(result.stdout).toMatch(/^Usage: execgate/);
    expect(result.stdout).toContain('status=0');
    expect(result.stderr).not.toContain('EPIPE');
  });
});

describe('execgate demo', () => {
  test('resolves the env secret, shows it masked, proves the shell got it, prints the audit records', () => {
    const value = 'demo-value-for-test-0123456789';
    const result = execgate(['demo'], { EXECGATE_SECRET_DEMO_TOKEN: value });
    expect(result.status).toBe(0);
    expect(result.stdout).not.toContain(value);
    expect(result.stdout).toContain('the shell received: [REDACTED:secret:demo-token]');
    expect(result.stdout).toContain(createHash('sha256').update(value).digest('hex'));
    expect(result.stdout).toContain('value intact  : yes');
    expect(result.stdout).toMatch(/"event":"exec.finished"/);
    // The other half: the shipped strict policy refuses a command, nothing runs, it is audited.
    expect(result.stdout).toContain('refused       : EXECGATE_ERR_POLICY_DENIED (rule no-privilege-escalation), nothing was run');
    expect(result.stdout).toMatch(/audit record {2}: \{.*"event":"exec.denied".*"command":"sudo id"/);
  });

  test('shows the sandbox: the /proc/$PPID/environ read from inside finds no EXECGATE_SECRET_ variable', () => {
    const result = execgate(['demo'], { EXECGATE_SECRET_DEMO_TOKEN: 'demo-value-for-test-0123456789' });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('sandbox probe : tr "\\0" "\\n" < /proc/$PPID/environ');
    if (checkSandboxPlatform().ok) {
      expect(result.stdout).toContain('sandbox       : yes (bubblewrap');
      expect(result.stdout).toMatch(/probe found {3}: 0; processes visible: \d+ \(.*the parent is the sandbox, not the gateway\)/);
    } else {
      expect(result.stdout).toContain('sandbox       : NO: ');
    }
  });
});

describe('package entry points', () => {
  const root = join(__dirname, '..', '..');
  test('require("execgate") and import("execgate") expose the API after the build', () => {
    const cjs = spawnSync(process.execPath, ['-e', "const e=require('execgate'); console.log(typeof e.createGateway, typeof e.ExecgateError)"], { cwd: root, encoding: 'utf8' });
    expect(cjs.stdout.trim()).toBe('function function');
    const esm = spawnSync(process.execPath, ['--input-type=module', '-e', "import { createGateway, ExecgateError } from 'execgate'; import { RefStore } from 'execgate/parts'; const m = await import('execgate'); console.log(typeof createGateway, typeof ExecgateError, typeof RefStore, typeof m.default.createGateway)"], { cwd: root, encoding: 'utf8' });
    expect(esm.stderr).toBe('');
    expect(esm.stdout.trim()).toBe('function function function function');
  });

  test('importing the library does not load node-pty, the keyring, libsodium or the MCP SDK', () => {
    const script = "require('execgate'); const loaded = Object.keys(require.cache).filter((p) => /node-pty|@napi-rs|libsodium|@modelcontextprotocol|openai/.test(p)); console.log(JSON.stringify(loaded))";
    const out = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
    expect(JSON.parse(out.stdout)).toEqual([]);
  });
});
