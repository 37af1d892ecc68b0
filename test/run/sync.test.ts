import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { baseEnv, makeTempDir, UNSANDBOXED_POLICY, waitFor } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir });
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

describe('sync mode', () => {
  test('echo hello: stdout, empty stderr, exit 0', async () => {
    const result = await gateway.exec({ command: 'echo hello' });
    expect(result).toMatchObject({ stdout: 'hello\n', stderr: '', output: 'hello\n', exitCode: 0, signal: null, timedOut: false, mode: 'sync' });
    expect(result.command).toBe('echo hello');
    expect(result.id).toMatch(/^run_/);
    expect(result.durationMs).toBeGreaterThan(0);
  });

  test('non-zero exit is data, not an error, and both streams are kept', async () => {
    const result = await gateway.exec({ command: 'echo out; echo err >&2; exit 42' });
    expect(result.exitCode).toBe(42);
    expect(result.stdout).toBe('out\n');
    expect(result.stderr).toBe('err\n');
    expect(result.message).toBe('Command exited with code 42.');
  });

  test('combined output keeps arrival order', async () => {
    const result = await gateway.exec({ command: 'echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three' });
    expect(result.output).toBe('one\ntwo\nthree\n');
  });

  test('cwd defaults to the gateway cwd and can be set per request (relative to it)', async () => {
    mkdirSync(join(tmp.dir, 'sub'));
    expect((await gateway.exec({ command: 'pwd' })).stdout).toBe(`${tmp.dir}\n`);
    expect((await gateway.exec({ command: 'pwd', cwd: 'sub' })).stdout).toBe(`${join(tmp.dir, 'sub')}\n`);
    expect((await gateway.exec({ command: 'pwd', cwd: '/' })).stdout).toBe('/\n');
  });

  test('missing or non-directory cwd is a coded error before anything runs', async () => {
    const marker = join(tmp.dir, 'ran');
    await expect(gateway.exec({ command: `touch ${marker}`, cwd: join(tmp.dir, 'nope') })).rejects.toMatchObject({ code: 'EXECGATE_ERR_CWD_NOT_FOUND' });
    writeFileSync(join(tmp.dir, 'file'), 'x');
    await expect(gateway.exec({ command: `touch ${marker}`, cwd: join(tmp.dir, 'file') })).rejects.toMatchObject({ code: 'EXECGATE_ERR_CWD_NOT_DIRECTORY' });
    expect(() => readFileSync(marker)).toThrow();
  });

  test('request env overrides the inherited environment (seed 000)', async () => {
    const gw = createGateway({ home: join(tmp.dir, 'h2'), env: baseEnv({ GREETING: 'inherited', KEEP: 'kept' }), cwd: tmp.dir });
    try {
      const result = await gw.exec({ command: 'echo "$GREETING $KEEP $EXTRA"', env: { GREETING: 'override', EXTRA: 'extra' } });
      expect(result.stdout).toBe('override kept extra\n');
    } finally {
      await gw.close();
    }
  });

  test('envMode replace starts from the request env alone', async () => {
    const gw = createGateway({ home: join(tmp.dir, 'h3'), env: baseEnv({ INHERITED: 'yes' }), cwd: tmp.dir });
    try {
      const result = await gw.exec({ command: 'echo "[${INHERITED:-unset}] [$ONLY]"', env: { ONLY: 'mine', PATH: '/usr/bin:/bin' }, envMode: 'replace' });
      expect(result.stdout).toBe('[unset] [mine]\n');
    } finally {
      await gw.close();
    }
  });

  test('stdin is /dev/null, no TTY, pagers are cat', async () => {
    const result = await gateway.exec({ command: 'cat; readlink /proc/self/fd/0; [ -t 1 ] && echo tty || echo notty; echo "$PAGER $GIT_PAGER"; tty || true' });
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe('/dev/null');
    expect(lines[1]).toBe('notty');
    expect(lines[2]).toBe('cat cat');
    expect(result.stdout).toContain('not a tty');
  });

  test('each run is its own session and process group', async () => {
    const result = await gateway.exec({ command: 'ps -o pid=,pgid=,sid= -p $$' });
    const [pid, pgid, sid] = result.stdout.trim().split(/\s+/).map(Number);
    expect(pgid).toBe(pid);
    expect(sid).toBe(pid);
    expect(pgid).not.toBe(process.pid);
  });

  test('the child carries the run id cookie', async () => {
    const result = await gateway.exec({ command: 'echo "$EXECGATE_RUN_ID"' });
    expect(result.stdout.trim()).toBe(result.id);
  });

  test('a shell given per request is used', async () => {
    const result = await gateway.exec({ command: 'echo "$0"', shell: '/bin/sh' });
    expect(result.stdout).toBe('/bin/sh\n');
  });

  test('a closed gateway refuses new requests with a coded error', async () => {
    await gateway.close();
    await expect(gateway.exec({ command: 'true' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_GATEWAY_CLOSED' });
  });

  test('close() stops a running command', async () => {
    // close() once the shell is running (its marker is there), not after a fixed delay that a
    // loaded machine may spend before the spawn.
    const run = gateway.exec({ command: 'touch started; sleep 30', timeout: 60_000, grace: 200 });
    expect(await waitFor(() => existsSync(join(tmp.dir, 'started')), 30_000)).toBe(true);
    await gateway.close();
    const result = await run;
    expect(result.killed).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.signal).toBe('SIGTERM');
  });
});

describe('host prologue and epilogue', () => {
  test('run in the same shell around the command, but results and audit show the command alone', async () => {
    const result = await gateway.exec({ command: 'cd /tmp; echo body', prologue: "trap 'echo \"final:$PWD\"' EXIT", epilogue: 'echo after' });
    expect(result.stdout).toBe('body\nafter\nfinal:/tmp\n');
    expect(result.command).toBe('cd /tmp; echo body');
  });
});

describe('start-up files', () => {
  test("bash never sources the user's ~/.bashrc, not even with a socket on stdin (background) or SSH_CLIENT set", async () => {
    // The home directory apart from the workspace (which may not hold it), the marker in the workspace.
    const userHome = makeTempDir('execgate-userhome-');
    const home = userHome.dir;
    writeFileSync(join(home, '.bashrc'), `touch ${join(tmp.dir, 'bashrc-ran')}\n`);
    const gw = createGateway({ home: join(tmp.dir, 'h4'), env: baseEnv({ HOME: home, SSH_CLIENT: '10.0.0.1 5000 22' }), cwd: tmp.dir });
    try {
      await gw.exec({ command: 'true' });
      const bg = await gw.exec({ command: 'true', mode: 'background' });
      await gw.background.wait(bg.id, 30_000);
    } finally {
      await gw.close();
      userHome.cleanup();
    }
    expect(() => readFileSync(join(tmp.dir, 'bashrc-ran'))).toThrow();
  });
});
