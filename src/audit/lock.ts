/*
 * Serializes writers of one audit chain across processes (a CLI run beside a long-lived MCP
 * server, both under the same state directory), so that two processes never link two records
 * to the same predecessor. Held for one record at a time: a few system calls.
 *
 * Synchronous on purpose: a record is sealed and written before the call that produced it goes
 * on. The lock is a file created with O_EXCL holding `pid host`; a holder that died (same host,
 * pid gone) or a lock left unreadable for a while is stale and broken under a short "breaker"
 * file, so two waiters never both break it and one delete the lock the other just took.
 */
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { ExecgateError } from '../errors';

const WAIT_MS = 10_000;
const UNREADABLE_GRACE_MS = 2000;
const BREAKER_GRACE_MS = 5000;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function createExclusive(path: string, content: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return true;
}

function readLock(path: string): { content: string; ageMs: number } | undefined {
  try {
    const ageMs = Date.now() - statSync(path).mtimeMs;
    return { content: readFileSync(path, 'utf8'), ageMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function isStale(lock: { content: string; ageMs: number }): boolean {
  const match = /^(\d+) (\S+)\n$/.exec(lock.content);
  if (match === null) return lock.ageMs > UNREADABLE_GRACE_MS;
  const pid = Number(match[1]);
  return match[2] === hostname() && pid !== process.pid && !isProcessAlive(pid);
}

function breakStale(path: string, seen: string): void {
  const breaker = `${path}.breaker`;
  if (!createExclusive(breaker, `${process.pid}\n`)) {
    const old = readLock(breaker);
    if (old !== undefined && old.ageMs > BREAKER_GRACE_MS) {
      try {
        unlinkSync(breaker);
      } catch {
        // someone else removed it
      }
    }
    return;
  }
  try {
    if (readLock(path)?.content === seen) unlinkSync(path);
  } finally {
    unlinkSync(breaker);
  }
}

/** Run `fn` holding the lock file `path`. */
export function withLockSync<T>(path: string, fn: () => T): T {
  const content = `${process.pid} ${hostname()}\n`;
  const deadline = Date.now() + WAIT_MS;
  let delay = 1;
  for (;;) {
    let taken: boolean;
    try {
      taken = createExclusive(path, content);
    } catch (error) {
      throw new ExecgateError('EXECGATE_ERR_AUDIT_IO', `Cannot create the audit lock \`${path}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`, { path }, { cause: error });
    }
    if (taken) break;
    const holder = readLock(path);
    if (holder !== undefined && isStale(holder)) {
      breakStale(path, holder.content);
      continue;
    }
    if (Date.now() > deadline) {
      throw new ExecgateError(
        'EXECGATE_ERR_AUDIT_LOCKED',
        `Another process (${holder?.content.trim() || 'unknown'}) held the audit log lock \`${path}\` for more than ${WAIT_MS / 1000} s. If no execgate process is running, remove the lock file.`,
        { path },
      );
    }
    sleepSync(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 50);
  }
  try {
    return fn();
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // broken as stale by another process after a very long hold; nothing left to release
    }
  }
}
