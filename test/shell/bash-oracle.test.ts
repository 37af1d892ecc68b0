/*
 * The differential tests' bash oracle leaves nothing running: not what a script starts and
 * leaves behind when it ends, not a `setsid` daemon, and not the children of a script killed at
 * its bound. The control runs the same script the way the oracle used to (spawnSync's timeout,
 * which kills bash alone) and finds the survivors, so the hunt for them can see one.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir, waitFor } from '../helpers/tmp';
import { processesWith, runBashOracle } from './bash-oracle';

let tmp: ReturnType<typeof makeTempDir>;
beforeAll(() => {
  tmp = makeTempDir('execgate-oracle-');
});
afterAll(() => tmp.cleanup());

const env = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp.dir });

/** Descendants of every kind, named by `marker`: a background job, a double fork, a new session, a coprocess. */
function leaver(marker: string, hang: boolean): string {
  return [
    `(exec -a ${marker}-bg sleep 600) &`,
    `( (exec -a ${marker}-orphan sleep 600) & )`,
    `setsid bash -c 'exec -a ${marker}-session sleep 600' &`,
    `coproc { exec -a ${marker}-coproc sleep 600; }`,
    `echo started > started-${marker}`,
    hang ? `exec -a ${marker}-hung sleep 600` : 'exit 0',
  ].join('\n');
}

const started = (marker: string): boolean => {
  try {
    return readFileSync(join(tmp.dir, `started-${marker}`), 'utf8') === 'started\n';
  } catch {
    return false;
  }
};

test('the control: spawnSync with a timeout alone leaves the children of a hung script running', () => {
  const marker = `oracle-control-${randomBytes(6).toString('hex')}`;
  spawnSync('bash', ['--norc', '--noprofile', '-c', leaver(marker, true)], { cwd: tmp.dir, env: env(), stdio: 'ignore', timeout: 3_000 });
  try {
    expect(started(marker)).toBe(true);
    expect(processesWith(marker).length).toBeGreaterThanOrEqual(3);
  } finally {
    for (const pid of processesWith(marker)) { try { process.kill(pid, 'SIGKILL'); } catch { /* ended since the listing */ } }
  }
});

test.each([
  ['a script that ends', false],
  ['a script killed at its bound', true],
] as const)('%s: nothing it started outlives the oracle', async (_name, hang) => {
  const marker = `oracle-${randomBytes(6).toString('hex')}`;
  const result = runBashOracle(leaver(marker, hang), { cwd: tmp.dir, env: env(), timeoutMs: hang ? 3_000 : 60_000 });
  expect(started(marker)).toBe(true);
  if (hang) expect((result.error as NodeJS.ErrnoException | undefined)?.code).toBe('ETIMEDOUT');
  else expect(result.status).toBe(0);
  // At a timeout unshare is killed and the kernel takes the namespace down just after; at a
  // normal end it is down before unshare returns.
  if (hang) expect(await waitFor(() => processesWith(marker).length === 0, 10_000)).toBe(true);
  else expect(processesWith(marker)).toEqual([]);
});

test("the script's exit status and its view: bash is not the namespace's init", () => {
  const result = runBashOracle('test "$$" != 1 && exit 7', { cwd: tmp.dir, env: env(), timeoutMs: 60_000 });
  expect(result.status).toBe(7);
});
