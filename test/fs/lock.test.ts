/*
 * The cross-process lock (src/fs/lock.ts) with real processes: waiters are served in the order
 * they queued, a holder that works is waited for however long it takes, a stopped holder gets a
 * coded error naming it and how long it held the lock, a killed one loses the lock to the next
 * waiter, and the lock is never a file whose content the next caller could misread.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError } from '../../src/errors';
import { withLock, withLockSync } from '../../src/fs/lock';
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
  expect(existsSync(lock)).toBe(false);
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

test('a stopped holder: the locked error names it and how long it held the lock', async () => {
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
  expect(existsSync(lock)).toBe(false);
});

test('the lock is a link that names its holder from the moment it exists, never an empty file', () => {
  const lock = join(tmp.dir, 'x.lock');
  withLockSync(lock, () => {
    expect(lstatSync(lock).isSymbolicLink()).toBe(true);
    expect(readlinkSync(lock)).toMatch(new RegExp(`^execgate-lock:1:${process.pid}:\\d*:\\d+:[0-9a-f]+:`));
  }, { onTimeout: timeoutError });
  expect(existsSync(lock)).toBe(false);
});

test('an empty lock file left by an older execgate that died is broken after a short grace', () => {
  const lock = join(tmp.dir, 'x.lock');
  writeFileSync(lock, '');
  let ran = false;
  withLockSync(lock, () => { ran = true; }, { timeoutMs: 60_000, onTimeout: timeoutError });
  expect(ran).toBe(true);
});
