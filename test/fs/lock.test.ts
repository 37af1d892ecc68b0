/*
 * The cross-process lock (src/fs/lock.ts) with real processes: waiters are served in the order
 * they queued, a holder that works is waited for however long it takes, a stopped holder gets a
 * coded error naming it and how long it held the lock, a killed one loses the lock to the next
 * waiter, and the lock is never a file whose content the next caller could misread.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError } from '../../src/errors';
import { releaseLease, withLock, withLockSync } from '../../src/fs/lock';
import { makeTempDir, waitFor } from '../helpers/tmp';

const DIST_LOCK = join(__dirname, '..', '..', 'dist', 'fs', 'lock.js');

let tmp: ReturnType<typeof makeTempDir>;
const children: ChildProcess[] = [];

beforeEach(() => {
  tmp = makeTempDir();
});

afterEach(() => {
  for (const child of children.splice(0)) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
  }
  tmp.cleanup();
});

const timeoutError = (holder: string, held: number, still: number): ExecgateError =>
  new ExecgateError('EXECGATE_ERR_AUDIT_LOCKED', `${holder} held it ${held} ms, idle ${still} ms`, { holder, held, still });

/** A process that takes the lock, says so on stdout, then runs `body` (JS) while holding it. */
function holder(lock: string, body: string, extra = ''): ChildProcess {
  const script = `
    const { withLockSync } = require(${JSON.stringify(DIST_LOCK)});
    ${extra}
    withLockSync(${JSON.stringify(lock)}, () => { process.stdout.write('held\\n'); ${body} }, { onTimeout: () => new Error('timeout') });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child;
}

function said(child: ChildProcess, word: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes(word)) resolve();
    });
    child.once('exit', () => { if (!text.includes(word)) reject(new Error(`exited before saying ${word}`)); });
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

/** Whether a link (or file) is at `path`: existsSync follows the lock's link to its target, which never exists. */
function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function tickets(_lock: string): string[] {
  return readdirSync(tmp.dir).filter((name) => name.startsWith('x.lock.q.'));
}

test('waiters are served in the order they queued', async () => {
  const lock = join(tmp.dir, 'x.lock');
  const order = join(tmp.dir, 'order');
  writeFileSync(order, '');
  const waiters: ChildProcess[] = [];
  await withLock(lock, async () => {
    for (let index = 0; index < 6; index++) {
      waiters.push(holder(lock, `require('node:fs').appendFileSync(${JSON.stringify(order)}, '${index}\\n');`));
      // Each waiter has its ticket before the next starts: that is the order to be kept.
      expect(await waitFor(() => tickets(lock).length === index + 1, 30_000)).toBe(true);
    }
  }, { onTimeout: timeoutError });
  expect(await Promise.all(waiters.map(exited))).toEqual([0, 0, 0, 0, 0, 0]);
  expect(readFileSync(order, 'utf8').trim().split('\n')).toEqual(['0', '1', '2', '3', '4', '5']);
  expect(tickets(lock)).toEqual([]);
  expect(present(lock)).toBe(false);
});

test('a holder that keeps working is waited for past the timeout, not refused', () => {
  const lock = join(tmp.dir, 'x.lock');
  // Busy for about a second: far past the 200 ms a still holder would be allowed.
  const child = holder(lock, 'const end = Date.now() + 1000; while (Date.now() < end) { /* work */ }');
  return said(child, 'held').then(() => {
    let ran = false;
    withLockSync(lock, () => { ran = true; }, { timeoutMs: 200, onTimeout: timeoutError });
    expect(ran).toBe(true);
  });
});

test('a stopped holder: the locked error names it, says it is stopped and how long it held the lock', async () => {
  const lock = join(tmp.dir, 'x.lock');
  const child = holder(lock, 'process.kill(process.pid, "SIGSTOP");');
  await said(child, 'held');
  const started = Date.now();
  let error: ExecgateError | undefined;
  try {
    withLockSync(lock, () => undefined, { timeoutMs: 300, onTimeout: timeoutError });
  } catch (caught) {
    error = caught as ExecgateError;
  }
  expect(error?.code).toBe('EXECGATE_ERR_AUDIT_LOCKED');
  expect(error?.details.holder).toContain(`process ${child.pid} on `);
  expect(error?.details.holder).toContain(`stopped (\`kill -CONT ${child.pid}\` resumes it)`);
  // The duration is the holder's, counted from when it took the lock (before this waiter came).
  expect(error?.details.held as number).toBeGreaterThanOrEqual(300);
  expect(error?.details.held as number).toBeGreaterThanOrEqual(Date.now() - started - 50);
  expect(error?.details.still as number).toBeGreaterThanOrEqual(300);
  // The waiter left no ticket behind; the holder's lock stays its own.
  expect(tickets(lock)).toEqual([]);
  expect(readlinkSync(lock)).toContain(`:${child.pid}:`);
  child.kill('SIGKILL');
});

test('a holder killed with SIGKILL loses the lock to the next waiter', async () => {
  const lock = join(tmp.dir, 'x.lock');
  const child = holder(lock, 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);');
  await said(child, 'held');
  child.kill('SIGKILL');
  await exited(child);
  let ran = false;
  withLockSync(lock, () => { ran = true; }, { timeoutMs: 60_000, onTimeout: timeoutError });
  expect(ran).toBe(true);
  expect(present(lock)).toBe(false);
});

test('the lock is a link that names its holder from the moment it exists, never an empty file', () => {
  const lock = join(tmp.dir, 'x.lock');
  withLockSync(lock, () => {
    expect(lstatSync(lock).isSymbolicLink()).toBe(true);
    expect(readlinkSync(lock)).toMatch(new RegExp(`^execgate-lock:1:${process.pid}:\\d*:\\d+:[0-9a-f]+:`));
  }, { onTimeout: timeoutError });
  expect(present(lock)).toBe(false);
});

test('an empty lock file left by an older execgate that died is broken after a short grace', () => {
  const lock = join(tmp.dir, 'x.lock');
  writeFileSync(lock, '');
  let ran = false;
  withLockSync(lock, () => { ran = true; }, { timeoutMs: 60_000, onTimeout: timeoutError });
  expect(ran).toBe(true);
});

describe('leases (leaseMs): a writer keeps the lock between its calls until another process queues', () => {
  const opts = { onTimeout: timeoutError, leaseMs: 60_000 };

  /** A process that takes a lease, says `held`, then on each line of stdin appends `<tag>` to `order` under the lock. */
  function leaseHolder(lock: string, order: string, tag: string): ChildProcess {
    const script = `
      const { withLockSync } = require(${JSON.stringify(DIST_LOCK)});
      const { appendFileSync } = require('node:fs');
      const opts = { onTimeout: () => new Error('timeout'), leaseMs: 60000 };
      withLockSync(${JSON.stringify(lock)}, () => appendFileSync(${JSON.stringify(order)}, '${tag}0\\n'), opts);
      process.stdout.write('held\\n');
      let n = 0;
      process.stdin.on('data', () => {
        n += 1;
        withLockSync(${JSON.stringify(lock)}, () => appendFileSync(${JSON.stringify(order)}, '${tag}' + n + '\\n'), opts);
        process.stdout.write('wrote' + n + '\\n');
      });
    `;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    return child;
  }

  test('calls back to back take the lock once; it stays, naming a lease of this thread, and goes when the lease is released', () => {
    const lock = join(tmp.dir, 'x.lock');
    let target = '';
    withLockSync(lock, () => { target = readlinkSync(lock); }, opts);
    expect(target).toMatch(new RegExp(`^execgate-lock:1:${process.pid}:\\d*:\\d+:[0-9a-f]+l0:`));
    for (let i = 0; i < 5; i++) withLockSync(lock, () => expect(readlinkSync(lock)).toBe(target), opts);
    expect(readlinkSync(lock)).toBe(target);
    releaseLease(lock);
    expect(present(lock)).toBe(false);
  });

  test('an unused lease ends by itself after leaseMs', async () => {
    const lock = join(tmp.dir, 'x.lock');
    withLockSync(lock, () => undefined, { ...opts, leaseMs: 50 });
    expect(present(lock)).toBe(true);
    expect(await waitFor(() => !present(lock), 10_000)).toBe(true);
  });

  test('fn throwing ends the lease at once', () => {
    const lock = join(tmp.dir, 'x.lock');
    withLockSync(lock, () => undefined, opts);
    expect(() => withLockSync(lock, () => { throw new Error('boom'); }, opts)).toThrow('boom');
    expect(present(lock)).toBe(false);
    expect(() => withLockSync(lock, () => { throw new Error('boom'); }, opts)).toThrow('boom');
    expect(present(lock)).toBe(false);
  });

  test('a process that exits keeping a lease leaves no lock behind', async () => {
    const lock = join(tmp.dir, 'x.lock');
    const order = join(tmp.dir, 'order');
    const child = leaseHolder(lock, order, 'a');
    await said(child, 'held');
    expect(readlinkSync(lock)).toContain(`:${child.pid}:`);
    child.stdin!.end();
    child.kill('SIGTERM');
    await exited(child);
    // SIGTERM's default action runs no exit handler: the next taker finds a dead holder and breaks it.
    withLockSync(lock, () => undefined, { onTimeout: timeoutError });
    expect(present(lock)).toBe(false);
    const clean = spawn(process.execPath, ['-e', `
      const { withLockSync } = require(${JSON.stringify(DIST_LOCK)});
      withLockSync(${JSON.stringify(lock)}, () => undefined, { onTimeout: () => new Error('timeout'), leaseMs: 60000 });
    `], { stdio: 'ignore' });
    children.push(clean);
    expect(await exited(clean)).toBe(0);
    // A normal exit ends the lease: the lock is gone with the process.
    expect(present(lock)).toBe(false);
  });

  test('a waiter in another process gets the lock while the holder keeps a lease, and the holder\'s next call queues behind it', async () => {
    const lock = join(tmp.dir, 'x.lock');
    const order = join(tmp.dir, 'order');
    const a = leaseHolder(lock, order, 'a');
    await said(a, 'held');
    // B queues while A keeps its lease, idle: A's watch hands it over (the lease's 60 s would keep B waiting).
    const b = holder(lock, `require('node:fs').appendFileSync(${JSON.stringify(order)}, 'b\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);`);
    await said(b, 'held');
    expect(await waitFor(() => readFileSync(order, 'utf8') === 'a0\nb\n', 10_000)).toBe(true);
    // A's next call, while B still holds the lock: it waits for B, then writes.
    a.stdin!.write('\n');
    await said(a, 'wrote1');
    expect(await exited(b)).toBe(0);
    expect(readFileSync(order, 'utf8')).toBe('a0\nb\na1\n');
    // A holds a fresh lease again; nobody left a ticket.
    expect(readlinkSync(lock)).toContain(`:${a.pid}:`);
    expect(tickets(lock)).toEqual([]);
  });

  test('an idle holder\'s lease lapses for a waiter without another call', async () => {
    const lock = join(tmp.dir, 'x.lock');
    const child = spawn(process.execPath, ['-e', `
      const { withLockSync } = require(${JSON.stringify(DIST_LOCK)});
      withLockSync(${JSON.stringify(lock)}, () => process.stdout.write('held\\n'), { onTimeout: () => new Error('timeout'), leaseMs: 200 });
      setInterval(() => undefined, 1000);
    `], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    await said(child, 'held');
    let ran = false;
    withLockSync(lock, () => { ran = true; }, { onTimeout: timeoutError, timeoutMs: 60_000 });
    expect(ran).toBe(true);
    expect(child.exitCode).toBeNull();
  });

  test('an idle holder gives its lease up as soon as a waiter queues (its watch sees the ticket), long before the lease would lapse', async () => {
    const lock = join(tmp.dir, 'x.lock');
    const order = join(tmp.dir, 'order');
    const a = leaseHolder(lock, order, 'a'); // a lease of 60 s, and no further call unless told
    await said(a, 'held');
    let ran = false;
    // This process queues; the holder, idle, is never told to write again.
    withLockSync(lock, () => { ran = true; }, { onTimeout: timeoutError, timeoutMs: 60_000 });
    expect(ran).toBe(true);
    expect(a.exitCode).toBeNull();
    // The holder's next call queues behind rather than taking it back unseen: still one chain of turns.
    a.stdin!.write('\n');
    await said(a, 'wrote1');
    expect(readFileSync(order, 'utf8')).toBe('a0\na1\n');
  });

  test('a waiter already queued when the lock is taken: no lease is kept, the lock goes right after fn', () => {
    const lock = join(tmp.dir, 'x.lock');
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    children.push(sleeper);
    // A ticket of a live process, as a waiter that has not yet looked again would leave it.
    const ticket = join(tmp.dir, `x.lock.q.${process.hrtime.bigint().toString().padStart(20, '0')}.${sleeper.pid}.abcdef`);
    symlinkSync(`execgate-lock:1:${sleeper.pid}::${Date.now()}:00000000l0:elsewhere`, ticket);
    let held = false;
    withLockSync(lock, () => { held = present(lock); }, { ...opts, timeoutMs: 60_000, onTimeout: timeoutError });
    expect(held).toBe(true);
    expect(present(lock)).toBe(false);
  });

  test('a lease left by another copy of this module on the same thread is given up, not waited for', () => {
    const lock = join(tmp.dir, 'x.lock');
    let other: typeof import('../../src/fs/lock') | undefined;
    jest.isolateModules(() => { other = jest.requireActual<typeof import('../../src/fs/lock')>('../../src/fs/lock'); });
    other!.withLockSync(lock, () => undefined, opts);
    const theirs = readlinkSync(lock);
    let ran = false;
    // Without the rule this would wait for the other copy's timer, which cannot fire while this thread waits.
    withLockSync(lock, () => { ran = true; expect(readlinkSync(lock)).not.toBe(theirs); }, { onTimeout: timeoutError, timeoutMs: 2_000 });
    expect(ran).toBe(true);
    // The other copy's next call sees its lease gone and takes the lock anew.
    other!.withLockSync(lock, () => expect(readlinkSync(lock)).not.toBe(theirs), opts);
    other!.releaseLease(lock);
    expect(present(lock)).toBe(false);
  });
});
