/*
 * kill -9 at random points: of a CLI run (sandboxed), of a vault write, of a key rotation, and of
 * a background run's supervisor. After each: nothing of the run is left running, the vault opens
 * with every value it held, the next call works, and `execgate audit verify` passes. A background
 * run whose supervisor died ends as `lost`, recorded once, by whichever process looks first.
 *
 * The delays are random (the seed is printed on failure); EXECGATE_FAULT_LONG=1 runs more trials.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Vault } from '../../src/stores/vault';
import { isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { CLI, cliEnv, execgate, findProcesses, LONG, readAudit, verifyAudit } from './helpers';

const TRIALS = LONG ? 24 : 4;

let work: ReturnType<typeof makeTempDir>;
let home: string;

beforeEach(() => {
  work = makeTempDir();
  home = join(work.dir, 'home');
});

afterEach(() => {
  work.cleanup();
});

/** Start the CLI and kill it with SIGKILL after `delayMs`; resolves once it is gone. */
function killAfter(args: string[], delayMs: number, input = ''): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: work.dir, env: cliEnv(home), stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end(input);
    const timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function delays(max: number): number[] {
  return Array.from({ length: TRIALS }, (_, index) => Math.floor(((index + Math.random()) / TRIALS) * max));
}

test('kill -9 of `execgate run` at random points: nothing left running, the chain verifies, the next run works', async () => {
  const tried = delays(1500);
  for (const delay of tried) {
    const marker = `fault-marker-${randomBytes(6).toString('hex')}`;
    await killAfter(['run', '--', `echo start; sleep 30; echo ${marker}`], delay);
    // The sandbox ends with the process that started it.
    expect(await waitFor(() => findProcesses(marker).length === 0, 15_000)).toBe(true);
  }
  const next = execgate(['run', '--', 'echo after'], { home, cwd: work.dir });
  expect(next.stdout).toBe('after\n');
  const check = verifyAudit(home, work.dir);
  expect({ delays: tried, ok: check.ok, text: check.ok ? '' : check.text }).toMatchObject({ ok: true });
});

test('kill -9 of a vault write and of a key rotation at random points: the vault opens with every value it held', async () => {
  expect(execgate(['secret', 'set', '--store', 'vault', 'stays'], { home, cwd: work.dir, input: 'stays-value-123' }).status).toBe(0);
  const vault = (): Vault => new Vault({ home, env: cliEnv(home), keyring: false });
  const tried: Array<[string, number]> = [];
  for (const [index, delay] of delays(900).entries()) {
    tried.push(['set', delay]);
    await killAfter(['secret', 'set', '--store', 'vault', `added-${index}`], delay, `added-value-${index}-xyz`);
    expect(await vault().get('secret', 'stays')).toBe('stays-value-123');
    // A write either happened whole or not at all.
    const added = await vault().get('secret', `added-${index}`);
    expect([undefined, `added-value-${index}-xyz`]).toContain(added);
  }
  for (const delay of delays(900)) {
    tried.push(['rotate', delay]);
    await killAfter(['vault', 'rotate-key'], delay);
    expect(await vault().get('secret', 'stays')).toBe('stays-value-123');
  }
  expect(execgate(['secret', 'set', '--store', 'vault', 'last'], { home, cwd: work.dir, input: 'last-value-123' }).status).toBe(0);
  expect(await vault().get('secret', 'last')).toBe('last-value-123');
  const check = verifyAudit(home, work.dir);
  expect({ tried, ok: check.ok, text: check.ok ? '' : check.text }).toMatchObject({ ok: true });
});

test('a background run whose supervisor is killed ends as `lost`, with the reason, recorded once by whoever looks first', async () => {
  const marker = `fault-marker-${randomBytes(6).toString('hex')}`;
  const started = execgate(['run', '--mode', 'background', '--json', '--', `sleep 300; echo ${marker}`], { home, cwd: work.dir });
  expect(started.status).toBe(0);
  const { id } = JSON.parse(started.stdout) as { id: string };
  const record = JSON.parse(readFileSync(join(home, 'bg', `${id}.json`), 'utf8')) as { supervisorPid: number; pgid: number };
  // The supervisor dies, and the run with it (the machine's OOM killer takes both, say).
  process.kill(record.supervisorPid, 'SIGKILL');
  try { process.kill(-record.pgid, 'SIGKILL'); } catch { /* gone with its sandbox */ }
  expect(await waitFor(() => !isAlive(record.supervisorPid) && findProcesses(marker).length === 0, 15_000)).toBe(true);
  const listed = JSON.parse(execgate(['ps', '--json'], { home, cwd: work.dir }).stdout) as Array<{ id: string; state: string; reason?: string }>;
  expect(listed.find((entry) => entry.id === id)).toMatchObject({ state: 'lost', reason: expect.stringMatching(/supervising process \(pid \d+\) ended without recording how the run ended/) });
  // Looking again records nothing more.
  execgate(['ps'], { home, cwd: work.dir });
  const ended = readAudit(home).filter((entry) => entry.event === 'background.ended' && entry.runId === id);
  expect(ended).toHaveLength(1);
  expect(ended[0]).toMatchObject({ state: 'lost' });
  expect(readFileSync(join(home, 'bg', `${id}.log`), 'utf8')).toMatch(/\[background process lost: /);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});
