/*
 * Concurrency is served, not refused: many `execgate run` processes and several `secret set` on
 * one state directory at once, while two `yes >/dev/null` keep the machine's cores busy. Every
 * run succeeds and has its records, every secret is stored and recorded, and the chain verifies.
 * (40 runs and 3 writers here; EXECGATE_FAULT_LONG=1: 100 and 5.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { execgate, execgateAsync, LONG, readAudit, verifyAudit } from './helpers';

const RUNS = LONG ? 100 : 40;
const WRITERS = LONG ? 5 : 3;

let work: ReturnType<typeof makeTempDir>;
const hogs: ChildProcess[] = [];

beforeEach(() => {
  work = makeTempDir();
});

afterEach(() => {
  for (const hog of hogs.splice(0)) hog.kill('SIGKILL');
  work.cleanup();
});

test(`${RUNS} concurrent CLI runs and ${WRITERS} concurrent secret writers on one state directory, on a busy machine: none refused`, async () => {
  const home = join(work.dir, 'home');
  for (let index = 0; index < 2; index++) hogs.push(spawn('sh', ['-c', 'exec yes >/dev/null'], { stdio: 'ignore' }));
  const runs = Array.from({ length: RUNS }, (_, index) => execgateAsync(['run', '--', `echo run-${index}`], { home, cwd: work.dir }));
  const writers = Array.from({ length: WRITERS }, (_, index) =>
    execgateAsync(['secret', 'set', '--store', 'vault', `writer-${index}`], { home, cwd: work.dir, input: `writer-value-${index}-xyz` }));
  const [ran, wrote] = await Promise.all([Promise.all(runs), Promise.all(writers)]);
  for (const hog of hogs.splice(0)) hog.kill('SIGKILL');
  const refused = [...ran, ...wrote].filter((result) => result.status !== 0).map((result) => result.stderr.trim());
  expect(refused).toEqual([]);
  expect(ran.map((result) => result.stdout)).toEqual(Array.from({ length: RUNS }, (_, index) => `run-${index}\n`));
  const records = readAudit(home);
  const finished = new Set(records.filter((record) => record.event === 'exec.finished').map((record) => record.command));
  expect(Array.from({ length: RUNS }, (_, index) => `echo run-${index}`).filter((command) => !finished.has(command))).toEqual([]);
  expect(records.filter((record) => record.event === 'secret.set').map((record) => record.name).sort()).toEqual(Array.from({ length: WRITERS }, (_, index) => `writer-${index}`).sort());
  for (let index = 0; index < WRITERS; index++) {
    expect(execgate(['secret', 'test', `writer-${index}`], { home, cwd: work.dir }).stdout).toMatch(/resolves from vault/);
  }
  expect(verifyAudit(home, work.dir).ok).toBe(true);
}, LONG ? 900_000 : 300_000);
