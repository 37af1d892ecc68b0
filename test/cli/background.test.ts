/*
 * Background runs from the CLI outlive the CLI process (a detached supervisor holds them), so
 * `ps`, `logs` and `kill` work across invocations.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, isAlive, makeTempDir, waitFor, UNSANDBOXED_POLICY_FILE } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
let tmp: ReturnType<typeof makeTempDir>;

beforeEach(() => { tmp = makeTempDir(); });
afterEach(() => {
  spawnSync(process.execPath, [CLI, 'ps', '--json'], { env: env(), encoding: 'utf8' });
  tmp.cleanup();
});

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // The test follows the run's pids from the host: the unsandboxed path (test/sandbox has the other).
  return baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), PATH: '/usr/bin:/bin', EXECGATE_POLICY: UNSANDBOXED_POLICY_FILE, ...extra });
}

function execgate(args: string[], extra: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: tmp.dir, env: env(extra), encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('background runs from the CLI', () => {
  test('run --mode background prints the id alone; ps, logs and kill work across invocations', async () => {
    const secret = 'bg-cli-secret-0123456789';
    const started = execgate(['run', '--mode', 'background', '--', 'echo "token <<secret:bg-token>>"; setsid sleep 300 & echo $! > pid; sleep 300'], { EXECGATE_SECRET_BG_TOKEN: secret });
    expect(started.status).toBe(0);
    const id = started.stdout.trim();
    expect(id).toMatch(/^run_[a-z0-9]+_[0-9a-f]+$/);
    expect(started.stdout).toBe(`${id}\n`);

    const ps = execgate(['ps', '--json']);
    const listed = JSON.parse(ps.stdout);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id, state: 'running', command: 'echo "token <<secret:bg-token>>"; setsid sleep 300 & echo $! > pid; sleep 300' });
    expect(isAlive(listed[0].pid)).toBe(true);
    expect(execgate(['ps']).stdout).toMatch(new RegExp(`^ID\\s+STATE\\s+PID[\\s\\S]*${id}\\s+running`));

    expect(await waitFor(() => execgate(['logs', id]).stdout.includes('token'), 30_000, 100)).toBe(true);
    const logs = execgate(['logs', id]);
    expect(logs.stdout).toBe('token [REDACTED:secret:bg-token]\n');

    // The shell creates the file before it writes the pid: wait for the whole line.
    expect(await waitFor(() => { try { return readFileSync(join(tmp.dir, 'pid'), 'utf8').endsWith('\n'); } catch { return false; } }, 20_000)).toBe(true);
    const escaped = Number(readFileSync(join(tmp.dir, 'pid'), 'utf8'));
    const killed = execgate(['kill', id]);
    expect(killed.status).toBe(0);
    expect(killed.stdout).toBe(`${id}: killed (killed on request)\n`);
    expect(isAlive(listed[0].pid)).toBe(false);
    expect(escaped).toBeGreaterThan(1);
    expect(await waitFor(() => !isAlive(escaped), 20_000)).toBe(true);
    expect(JSON.parse(execgate(['ps', '--json']).stdout)[0]).toMatchObject({ id, state: 'killed' });
    const after = execgate(['logs', id]).stdout;
    expect(after).toMatch(/\[background process killed \(killed on request\); ended by SIGTERM\]\n$/);
    expect(after).not.toContain(secret);
  });

  test('--json prints the BackgroundProcess; logs --follow ends with the completion line', async () => {
    const started = execgate(['run', '--json', '--mode', 'background', '--', 'for i in 1 2 3; do echo n$i; sleep 0.2; done; exit 4']);
    const bg = JSON.parse(started.stdout);
    expect(bg).toMatchObject({ state: 'running', pty: false, command: 'for i in 1 2 3; do echo n$i; sleep 0.2; done; exit 4' });
    const follow = execgate(['logs', '--follow', bg.id]);
    expect(follow.stdout).toBe('n1\nn2\nn3\n\n[background process completed with exit code 4]\n');
    expect(JSON.parse(execgate(['ps', '--json']).stdout)[0]).toMatchObject({ state: 'exited', exitCode: 4 });
    // The detached supervisor records the end in the same tamper-evident audit log.
    const readRecords = (): Array<Record<string, unknown>> =>
      readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line)).filter((r) => r.runId === bg.id);
    // The supervisor writes it just after it updates the run's record; allow it a moment.
    expect(await waitFor(() => readRecords().some((r) => r.event === 'background.ended'), 20_000)).toBe(true);
    const records = readRecords();
    expect(records.map((r) => r.event)).toEqual(expect.arrayContaining(['exec.started', 'background.started', 'background.ended']));
    expect(records.find((r) => r.event === 'background.ended')).toMatchObject({ state: 'exited', exitCode: 4 });
    const verify = execgate(['audit', 'verify']);
    expect(verify.status).toBe(0);
  });

  test('unknown ids are a coded error', () => {
    for (const args of [['logs', 'run_abc_00'], ['kill', 'run_abc_00']]) {
      const result = execgate(args);
      expect(result.status).toBe(125);
      expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_BACKGROUND_NOT_FOUND: /);
    }
  });
});
