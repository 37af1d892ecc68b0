/*
 * The pool of real pipes for runs' output (src/process/spawner/pipes.ts): a failed batch costs
 * pipes for a pause, not for the rest of the process; a batch whose directory vanished is
 * dropped whole; the sweep of dead processes' batches touches only its own PID namespace's.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { closePipe, getPidNamespace, PipePool, type PipePair } from '../../src/process/spawner/pipes';
import { makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir(); });
afterEach(() => tmp.cleanup());

/** A clock the test moves by hand: the pool's pause is read on it, so nothing here depends on how fast the machine is. */
function makeClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => { t += ms; } };
}

function expectPipes(pipes: [PipePair, PipePair] | undefined): void {
  expect(pipes).toBeDefined();
  for (const pair of pipes!) {
    expect(fstatSync(pair.read).isFIFO()).toBe(true);
    expect(fstatSync(pair.write).isFIFO()).toBe(true);
    closePipe(pair);
  }
}

/** A pid no process has now: one that just exited. */
function deadPid(): number {
  const child = spawnSync('/bin/true');
  return child.pid!;
}

test('a batch that fails (its directory cannot be made) gives sockets for a pause, then pipes again', async () => {
  const base = join(tmp.dir, 'base');
  const clock = makeClock();
  const pool = new PipePool({ base, retryMs: 300, now: clock.now });
  // No base directory: the batch fails, the run gets sockets.
  expect(await pool.take()).toBeUndefined();
  mkdirSync(base);
  // Within the pause no batch is tried: still sockets, nothing made.
  clock.advance(299);
  expect(await pool.take()).toBeUndefined();
  expect(readdirSync(base)).toEqual([]);
  clock.advance(1);
  expectPipes(await pool.take());
  expect(readdirSync(base)).toHaveLength(1);
});

test('the pause doubles with each failure in a row and a success resets it', async () => {
  const base = join(tmp.dir, 'base');
  const clock = makeClock();
  const pool = new PipePool({ base, retryMs: 150, now: clock.now });
  expect(await pool.take()).toBeUndefined();
  clock.advance(150);
  // The second failure in a row: the next try waits 300 ms.
  expect(await pool.take()).toBeUndefined();
  mkdirSync(base);
  clock.advance(299);
  expect(await pool.take()).toBeUndefined();
  expect(readdirSync(base)).toEqual([]);
  clock.advance(1);
  expectPipes(await pool.take());
  // A success resets the pause: the next failure waits the first pause again.
  rmSync(base, { recursive: true, force: true });
  // The batch's directory went with the base: that take fails, the next batch fails (no base).
  await expect(pool.take()).rejects.toMatchObject({ code: 'ENOENT' });
  expect(await pool.take()).toBeUndefined();
  mkdirSync(base);
  clock.advance(149);
  expect(await pool.take()).toBeUndefined();
  clock.advance(1);
  expectPipes(await pool.take());
});

test('a batch whose directory was removed is dropped whole: one run gets sockets, the next a new batch', async () => {
  const base = join(tmp.dir, 'base');
  mkdirSync(base);
  const pool = new PipePool({ base });
  expectPipes(await pool.take());
  const [first] = readdirSync(base);
  rmSync(join(base, first), { recursive: true, force: true });
  await expect(pool.take()).rejects.toMatchObject({ code: 'ENOENT' });
  expectPipes(await pool.take());
  const now = readdirSync(base);
  expect(now).toHaveLength(1);
  expect(now[0]).not.toBe(first);
});

test('batch directories carry the PID namespace; the sweep removes only dead processes\' of its own namespace', async () => {
  const base = join(tmp.dir, 'base');
  mkdirSync(base);
  const ns = getPidNamespace();
  expect(ns).toMatch(/^[1-9][0-9]*$/);
  const dead = deadPid();
  const names = {
    ownDead: `execgate-pipes-${ns}-${dead}-aB3dE6`,
    legacyDead: `execgate-pipes-${dead}-aB3dE7`,
    otherNamespace: `execgate-pipes-${Number(ns) + 1}-${dead}-aB3dE8`,
    ownAlive: `execgate-pipes-${ns}-1-aB3dE9`,
    unrelated: 'execgate-pipesX-1',
  };
  for (const name of Object.values(names)) mkdirSync(join(base, name));
  const pool = new PipePool({ base });
  expectPipes(await pool.take());
  const left = readdirSync(base);
  expect(left).not.toContain(names.ownDead);
  expect(left).not.toContain(names.legacyDead);
  expect(left).toContain(names.otherNamespace);
  expect(left).toContain(names.ownAlive);
  expect(left).toContain(names.unrelated);
  const made = left.filter((name) => !Object.values(names).includes(name));
  expect(made).toEqual([expect.stringMatching(new RegExp(`^execgate-pipes-${ns}-${process.pid}-[A-Za-z0-9]{6}$`))]);
});

test('a pipe taken is a real pipe both ways: what is written to the write end is read from the read end', async () => {
  const base = join(tmp.dir, 'base');
  mkdirSync(base);
  const pool = new PipePool({ base });
  const pipes = await pool.take();
  expect(pipes).toBeDefined();
  const [out] = pipes!;
  const child = spawnSync('/bin/sh', ['-c', 'printf hello >&3'], { stdio: ['ignore', 'ignore', 'ignore', out.write] });
  expect(child.status).toBe(0);
  closeSync(out.write);
  const buffer = Buffer.alloc(16);
  const { readSync } = await import('node:fs');
  const n = readSync(out.read, buffer);
  expect(buffer.subarray(0, n).toString()).toBe('hello');
  closeSync(out.read);
  closePipe(pipes![1]);
});

test('batches grow with use: a process that makes one run makes 8 FIFOs, one that makes many makes few batches', async () => {
  const base = join(tmp.dir, 'base');
  mkdirSync(base);
  const pool = new PipePool({ base });
  expectPipes(await pool.take());
  const [first] = readdirSync(base);
  expect(readdirSync(join(base, first))).toHaveLength(6);
  const seen = new Set([first]);
  for (let run = 1; run < 300; run++) {
    expectPipes(await pool.take());
    for (const name of readdirSync(base)) seen.add(name);
  }
  // 600 pipes: batches of 8, then twice what was taken, up to 256 each.
  expect(seen.size).toBeGreaterThan(3);
  expect(seen.size).toBeLessThanOrEqual(10);
});
