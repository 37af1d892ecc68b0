/*
 * `execgate run` and signals: a closing terminal, Ctrl-C or a supervisor's SIGTERM end the run
 * and record its end; SIGKILL of the CLI (no code runs) still takes the run with it, through
 * the containment watchdog. Ordering is proved with files: the command says it is ready only
 * once every process it starts is running.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, isAlive, makeTempDir, UNSANDBOXED_POLICY_FILE, waitFor } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
let tmp: ReturnType<typeof makeTempDir>;

beforeEach(() => { tmp = makeTempDir(); });
afterEach(() => tmp.cleanup());

const COMMAND = 'echo $$ > shell.pid; setsid sleep 994 >/dev/null 2>&1 & echo $! > escaped.pid; sleep 995 & echo $! > member.pid; touch ready; wait';

function readPid(name: string): number {
  return Number(readFileSync(join(tmp.dir, name), 'utf8'));
}

async function startCli(): Promise<{ pid: number; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [CLI, 'run', '--', COMMAND], {
    cwd: tmp.dir,
    // Unsandboxed: the test follows the run's processes from the host.
    env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), EXECGATE_POLICY: UNSANDBOXED_POLICY_FILE }) as NodeJS.ProcessEnv,
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  expect(await waitFor(() => existsSync(join(tmp.dir, 'ready')), 60_000)).toBe(true);
  return { pid: child.pid as number, exited };
}

function expectAllGone(): Promise<boolean> {
  const pids = ['shell.pid', 'escaped.pid', 'member.pid'].map(readPid);
  return waitFor(() => pids.every((pid) => !isAlive(pid)), 60_000);
}

describe('execgate run under signals', () => {
  test.each(['SIGHUP', 'SIGINT', 'SIGTERM'] as const)('%s ends the run, escaped children included, and records its end', async (signal) => {
    const cli = await startCli();
    process.kill(cli.pid, signal);
    await cli.exited;
    expect(await expectAllGone()).toBe(true);
    const audit = readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    const finished = audit.find((record) => record.event === 'exec.finished');
    expect(finished).toMatchObject({ killed: true, command: COMMAND });
    expect(audit.at(-1).event).toBe('gateway.stopped');
  }, 120_000);

  test('SIGKILL of the CLI still ends the run and what escaped its group', async () => {
    const cli = await startCli();
    process.kill(cli.pid, 'SIGKILL');
    await cli.exited;
    expect(await expectAllGone()).toBe(true);
  }, 120_000);
});
