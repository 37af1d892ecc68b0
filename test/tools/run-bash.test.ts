import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { createDefaultToolRegistry } from '../../src/tools/defaults';
import type { ToolRegistry } from '../../src/tools/registry';
import { RUN_BASH_MAX_STREAM_BYTES } from '../../src/tools/run-bash';
import { isAlive, makeTempDir, waitFor, UNSANDBOXED_POLICY } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
let registry: ToolRegistry;

function gatewayEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // (HOME is the runner's: a workspace may not hold the home directory)
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', EXECGATE_KEYRING: 'off', ...extra };
}

beforeEach(() => {
  tmp = makeTempDir('execgate-run-bash-');
  gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: gatewayEnv({ GREETING: 'from-gateway' }), cwd: tmp.dir });
  registry = createDefaultToolRegistry({ gateway, workdir: tmp.dir });
  registry.enableTool('run_bash');
});
afterEach(async () => {
  await registry.close();
  await gateway.close();
  tmp.cleanup();
});

async function runBash(args: Record<string, unknown>): Promise<{ stdout: string; stderr: string; exit_code: number }> {
  const text = await registry.execute('run_bash', args);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`run_bash did not return JSON: ${text}`);
  }
}

describe('seed 000: run_bash tool executes shell commands', () => {
  test('Execute a simple command', async () => {
    const text = await registry.execute('run_bash', { command: 'echo hello' });
    expect(text).toBe('{"stdout":"hello\\n","stderr":"","exit_code":0}');
  });

  test('Command with non-zero exit code', async () => {
    const result = await runBash({ command: 'echo out; echo err >&2; exit 3' });
    expect(result).toEqual({ stdout: 'out\n', stderr: 'err\n', exit_code: 3 });
  });

  test('Command with custom working directory', async () => {
    const sub = join(tmp.dir, 'sub dir');
    mkdirSync(sub);
    expect(await runBash({ command: 'pwd', cwd: sub })).toEqual({ stdout: `${sub}\n`, stderr: '', exit_code: 0 });
    // A relative cwd is taken from the default working directory.
    expect((await runBash({ command: 'pwd', cwd: 'sub dir' })).stdout).toBe(`${sub}\n`);
  });

  test('Command with additional environment variables', async () => {
    const result = await runBash({ command: 'echo "$GREETING $EXTRA"; echo "$PATH"', env: { GREETING: 'from-request', EXTRA: 'added' } });
    expect(result.stdout).toBe(`from-request added\n${process.env.PATH}\n`);
    // Without env, the inherited value is there.
    expect((await runBash({ command: 'echo "$GREETING"' })).stdout).toBe('from-gateway\n');
  });

  test('Command exceeds timeout', async () => {
    const pidFile = join(tmp.dir, 'pid');
    const result = await runBash({ command: `echo partial-out; echo partial-err >&2; sleep 5 & echo $! > ${pidFile}; wait`, timeout: 3000 });
    expect(result.exit_code).toBe(-1);
    expect(result.stdout).toBe('partial-out\n');
    expect(result.stderr.startsWith('partial-err\n')).toBe(true);
    expect(result.stderr).toMatch(/timed out after 3000 ms/);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(await waitFor(() => !isAlive(pid), 20_000)).toBe(true);
  });

  test('Command exceeds timeout: a plain `sleep 5` with timeout 300', async () => {
    const result = await runBash({ command: 'sleep 5', timeout: 300 });
    expect(result.exit_code).toBe(-1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^\[run_bash: Command timed out after 300 ms .*\]\n$/);
  });

  describe('Output truncation on large stdout or stderr', () => {
    const LIMIT = RUN_BASH_MAX_STREAM_BYTES;

    test('stdout over 50 KB is cut to its first 50 KB with a notice; stderr is untouched', async () => {
      const result = await runBash({ command: `head -c 60000 /dev/zero | tr '\\0' a; echo small >&2` });
      const [kept, notice] = [result.stdout.slice(0, LIMIT), result.stdout.slice(LIMIT)];
      expect(kept).toBe('a'.repeat(LIMIT));
      expect(notice).toMatch(/^\n\[\.\.\. stdout truncated: showing the first 51200 of 60000 bytes; full output: .+ \.\.\.\]\n$/);
      expect(result.stderr).toBe('small\n');
      expect(result.exit_code).toBe(0);
      // The full (redacted) output, both streams, is kept once in a 0600 file the notice names.
      const file = /full output: (.+) \.\.\.\]/.exec(notice)![1]!;
      expect(readFileSync(file, 'utf8')).toBe(`${'a'.repeat(60000)}small\n[execgate: Command exited with code 0.]\n`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
    });

    test('stderr over 50 KB is cut to its first 50 KB with a notice', async () => {
      const result = await runBash({ command: `echo fine; head -c 70000 /dev/zero | tr '\\0' e >&2; exit 1` });
      expect(result.stdout).toBe('fine\n');
      expect(result.stderr.slice(0, LIMIT)).toBe('e'.repeat(LIMIT));
      expect(result.stderr.slice(LIMIT)).toMatch(/^\n\[\.\.\. stderr truncated: showing the first 51200 of 70000 bytes; full output: .+ \.\.\.\]\n$/);
      expect(result.exit_code).toBe(1);
    });

    test('a stream far over the limit (the gateway already cut it) still returns its first 50 KB', async () => {
      const result = await runBash({ command: `seq 1 100000` });
      let expected = '';
      for (let i = 1; expected.length < LIMIT; i += 1) expected += `${i}\n`;
      expect(result.stdout.slice(0, LIMIT)).toBe(expected.slice(0, LIMIT));
      expect(result.stdout.slice(LIMIT)).toMatch(/^\n\[\.\.\. stdout truncated: showing the first 51200 of 588895 bytes; full output: .+ \.\.\.\]\n$/);
      const file = /full output: (.+) \.\.\.\]/.exec(result.stdout)![1]!;
      expect(readFileSync(file, 'utf8')).toContain('\n99999\n100000\n');
    });

    test('exactly 50 KB is not cut', async () => {
      const result = await runBash({ command: `head -c ${LIMIT} /dev/zero | tr '\\0' b` });
      expect(result.stdout).toBe('b'.repeat(LIMIT));
    });

    test('a cut never splits a UTF-8 character', async () => {
      // 3-byte characters: 51200 is not a multiple of 3.
      const result = await runBash({ command: `for i in $(seq 1 20000); do printf '\\xe2\\x82\\xac'; done` });
      const kept = result.stdout.slice(0, result.stdout.indexOf('\n[... stdout truncated'));
      expect(kept).toBe('€'.repeat(Math.floor(LIMIT / 3)));
      expect(result.stdout).toMatch(/showing the first 51198 of 60000 bytes/);
    });
  });

  test('tokens resolve, and their values are masked in the JSON result', async () => {
    const value = 'tok-9f8e7d6c5b4a3210-NOT-REAL';
    gateway.refs.set('secret', 'api-token', value);
    const text = await registry.execute('run_bash', { command: 'echo "token=<<secret:api-token>>"; printf %s <<secret:api-token>> | wc -c; echo <<secret:api-token>> >&2' });
    expect(text).not.toContain(value);
    expect(JSON.parse(text)).toEqual({
      stdout: `token=[REDACTED:secret:api-token]\n${value.length}\n`,
      stderr: '[REDACTED:secret:api-token]\n',
      exit_code: 0,
    });
  });

  test('a gateway refusal becomes "Error executing run_bash: CODE: message"', async () => {
    const text = await registry.execute('run_bash', { command: 'true', cwd: join(tmp.dir, 'missing') });
    expect(text).toMatch(/^Error executing run_bash: EXECGATE_ERR_CWD_NOT_FOUND: The working directory `.*missing` does not exist/);
    await expect(registry.execute('run_bash', { command: '   ' })).resolves.toMatch(/^Error executing run_bash: EXECGATE_ERR_INVALID_COMMAND: /);
  });

  test('a policy denial becomes "Error executing run_bash: EXECGATE_ERR_POLICY_DENIED: ..." and nothing runs', async () => {
    const policyFile = join(tmp.dir, 'policy.yaml');
    writeFileSync(policyFile, 'version: 1\nrules:\n  list:\n    - id: no-sudo\n      action: deny\n      command: [sudo]\n      reason: Agents do not get root.\n');
    const guarded = createGateway({ home: join(tmp.dir, 'home2'), env: gatewayEnv(), cwd: tmp.dir, policyFile });
    const tools = createDefaultToolRegistry({ gateway: guarded, workdir: tmp.dir });
    tools.enableTool('run_bash');
    const marker = join(tmp.dir, 'MARKER');
    try {
      const text = await tools.execute('run_bash', { command: `touch ${marker}; sudo id` });
      expect(text).toMatch(/^Error executing run_bash: EXECGATE_ERR_POLICY_DENIED: .*Agents do not get root\./);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await guarded.close();
    }
  });

  test('arguments are checked against the schema', async () => {
    await expect(registry.execute('run_bash', {})).resolves.toBe(
      'Error executing run_bash: EXECGATE_ERR_TOOL_ARGS_INVALID: Invalid arguments for run_bash: `command` is required.',
    );
    await expect(registry.execute('run_bash', { command: 'true', timout: 5 })).resolves.toMatch(/unknown argument `timout`/);
    await expect(registry.execute('run_bash', { command: 'true', env: { N: 1 } })).resolves.toMatch(/`env.N` must be string/);
    await expect(registry.execute('run_bash', { command: 'true', timeout: 0 })).resolves.toMatch(/`timeout` must be > 0/);
  });

  test('the run is audited with actor tool:run_bash and the unresolved command', async () => {
    await runBash({ command: 'echo audited' });
    const audit = readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8');
    expect(audit).toMatch(/"actor":"tool:run_bash"/);
    expect(audit).toContain('"command":"echo audited"');
  });

  test('a process killed by a signal it did not get from execgate reports 128 + N', async () => {
    expect((await runBash({ command: 'kill -TERM $$' })).exit_code).toBe(143);
  });
});

describe('seed 000: run_bash is disabled by default', () => {
  test('run_bash is registered but disabled in default factory', () => {
    const fresh = createDefaultToolRegistry({ gateway, workdir: tmp.dir });
    expect(fresh.hasTool('run_bash')).toBe(true);
    expect(fresh.isToolEnabled('run_bash')).toBe(false);
  });

  test('run_bash rejects execution when disabled', async () => {
    const fresh = createDefaultToolRegistry({ gateway, workdir: tmp.dir });
    const marker = join(tmp.dir, 'ran');
    await expect(fresh.execute('run_bash', { command: `touch ${marker}` })).resolves.toBe('Tool not available: run_bash');
    expect(existsSync(marker)).toBe(false);
  });

  test('run_bash works after explicit enable', async () => {
    const fresh = createDefaultToolRegistry({ gateway, workdir: tmp.dir });
    fresh.enableTool('run_bash');
    await expect(fresh.execute('run_bash', { command: 'echo test' })).resolves.toBe('{"stdout":"test\\n","stderr":"","exit_code":0}');
  });
});

describe('the gateway run_bash uses', () => {
  test('without a gateway, the registry creates one at the first call and closes it in close()', async () => {
    const home = join(tmp.dir, 'own-home');
    const own = createDefaultToolRegistry({ workdir: tmp.dir, gatewayOptions: { home, env: gatewayEnv() } });
    expect(existsSync(join(home, 'audit.log'))).toBe(false);
    own.enableTool('run_bash');
    await expect(own.execute('run_bash', { command: 'pwd' })).resolves.toBe(JSON.stringify({ stdout: `${tmp.dir}\n`, stderr: '', exit_code: 0 }));
    expect(readFileSync(join(home, 'audit.log'), 'utf8')).toContain('gateway.started');
    await own.close();
    expect(readFileSync(join(home, 'audit.log'), 'utf8')).toContain('gateway.stopped');
  });

  test('the default cwd is process.cwd() when no workdir is given', async () => {
    const plain = createDefaultToolRegistry({ gateway });
    plain.enableTool('run_bash');
    expect(JSON.parse(await plain.execute('run_bash', { command: 'pwd' })).stdout).toBe(`${process.cwd()}\n`);
  });
});
