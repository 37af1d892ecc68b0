import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { findByCookie, findByCookies } from '../../src/process/terminate';
import { baseEnv, isAlive, makeTempDir, waitFor, UNSANDBOXED_POLICY } from '../helpers/tmp';

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

function readPids(file: string): number[] {
  return readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number);
}

describe('timeouts and containment', () => {
  test('a timeout returns the output so far, flags it, and kills the whole group', async () => {
    const result = await gateway.exec({ command: 'echo before; sleep 300 & echo $! > pids; sleep 300', timeout: 3000, grace: 300 });
    expect(result.timedOut).toBe(true);
    expect(result.killed).toBe(true);
    expect(result.stdout).toBe('before\n');
    expect(result.exitCode).toBeNull();
    expect(result.signal).toBe('SIGTERM');
    expect(result.message).toMatch(/timed out after 3000 ms/);
    const pids = readPids(join(tmp.dir, 'pids'));
    expect(pids).toHaveLength(1);
    expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
  });

  test('setsid-ed, set -m and double-forked children are gone after a timeout', async () => {
    const command = [
      'setsid sleep 301 & echo $! >> pids',
      "bash -c 'set -m; sleep 302 & echo $! >> pids'",
      // Double-forked: its pid arrives on its own time; the loop below waits for it.
      "( setsid sh -c 'sleep 303 & echo $! >> pids' & )",
      'nohup sleep 304 >/dev/null 2>&1 & echo $! >> pids',
      '( sleep 305 & echo $! >> pids )',
      // `started` only once all five pids are on file: the timeout then finds every process up.
      'while [ "$(wc -l < pids)" -lt 5 ]; do sleep 0.01; done; echo started; sleep 300',
    ].join('\n');
    const result = await gateway.exec({ command, timeout: 3000, grace: 300 });
    expect(result.timedOut).toBe(true);
    expect(result.stdout).toBe('started\n');
    const pids = readPids(join(tmp.dir, 'pids'));
    expect(pids).toHaveLength(5);
    expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
    expect(findByCookie(result.id)).toEqual([]);
  });

  test('SIGTERM is tried first; a process that ignores it is killed after the grace period', async () => {
    // Room for a loaded machine: the trap must be set before the timeout, and the handler must
    // have printed before the grace period ends.
    const command = "trap 'echo got-term' TERM; echo ready; while :; do sleep 0.05; done";
    const result = await gateway.exec({ command, timeout: 2000, grace: 2000 });
    expect(result.timedOut).toBe(true);
    expect(result.stdout).toContain('got-term');
    expect(result.signal).toBe('SIGKILL');
  });

  test('an escaped process holding the pipe cannot hang the call (bounded drain), and is then killed', async () => {
    const result = await gateway.exec({ command: 'setsid sleep 60 & echo $! > pid; echo done' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('done\n');
    const [pid] = readPids(join(tmp.dir, 'pid'));
    expect(await waitFor(() => !isAlive(pid), 20_000)).toBe(true);
  });

  test('leftovers: keep leaves background processes running', async () => {
    const result = await gateway.exec({ command: 'sleep 60 > /dev/null 2>&1 & echo $! > pid', leftovers: 'keep' });
    expect(result.exitCode).toBe(0);
    const [pid] = readPids(join(tmp.dir, 'pid'));
    try {
      expect(isAlive(pid)).toBe(true);
    } finally {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone already: the assertion above says why */ }
    }
  });

  test('leftovers in the group are killed by default after the shell exits', async () => {
    const result = await gateway.exec({ command: 'sleep 60 > /dev/null 2>&1 & echo $! > pid' });
    expect(result.exitCode).toBe(0);
    const [pid] = readPids(join(tmp.dir, 'pid'));
    expect(await waitFor(() => !isAlive(pid), 20_000)).toBe(true);
  });

  test('a program waiting on stdin does not hang (stdin is /dev/null)', async () => {
    const result = await gateway.exec({ command: 'read -r line; echo "read returned $?"', timeout: 5000 });
    expect(result.timedOut).toBe(false);
    expect(result.stdout).toBe('read returned 1\n');
  });
});

describe('the sweep after a run reads only what the run can have started', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });

  test('a cookie in an earlier session is not the run\'s; a new session (setsid) since the shell is', async () => {
    const runId = `run_test_${process.pid}_${Date.now()}`;
    const env = { PATH: '/usr/bin:/bin', EXECGATE_RUN_ID: runId };
    // A session begun before the run's shell (pids wrap around on a busy host: this process's
    // own session may have a higher id than any new pid), which starts a process only later.
    const older = spawn('/bin/sh', ['-c', 'read -r _; sleep 60 & echo $!; wait'], { env, stdio: ['pipe', 'pipe', 'ignore'], detached: true });
    // The "shell": its pid is where the run's pids begin, and its session is its own.
    const shell = spawn('/bin/sleep', ['0'], { detached: true, stdio: 'ignore' });
    await new Promise((resolve) => shell.once('exit', resolve));
    children.push(older);
    // A wrap-around between the two spawns would put the older session after the shell.
    if (older.pid! > shell.pid!) return;
    // Started after the shell, carrying its cookie, but in that earlier session: nothing a run
    // starts can be there.
    const foreignPid = await new Promise<number>((resolve) => {
      older.stdout!.once('data', (data: Buffer) => resolve(Number(String(data).trim())));
      older.stdin!.write('go\n');
    });
    // Started after the shell in a session of its own, as `setsid` in the run would.
    const escaped = spawn('/bin/sleep', ['60'], { env, stdio: 'ignore', detached: true });
    children.push(escaped);
    // Until each has exec'd, /proc shows the environment of its parent.
    expect(await waitFor(() => findByCookie(runId).includes(foreignPid) && findByCookie(runId).includes(escaped.pid!), 10_000)).toBe(true);
    if (foreignPid < shell.pid!) return; // pids wrapped meanwhile: the sweep reads every session then
    const found = findByCookies(new Set([runId]), shell.pid!).get(runId) ?? [];
    expect(found).toContain(escaped.pid);
    expect(found).not.toContain(foreignPid);
    // Without a shell to start from (gateway close), every session is read.
    expect(findByCookie(runId)).toEqual(expect.arrayContaining([foreignPid, escaped.pid]));
    try { process.kill(foreignPid, 'SIGKILL'); } catch { /* gone already */ }
  });
});
