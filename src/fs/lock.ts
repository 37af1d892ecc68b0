/*
 * One lock file, two faces: `withLockSync` (the audit log seals a record before the call that
 * produced it returns) and `withLock` (vault writers, which await I/O while holding it).
 *
 * The lock is a file created with O_EXCL holding {pid, host, token, time}. A holder that died
 * (same host, pid gone), or a lock whose content never became readable, is stale; breaking it
 * happens under a short "breaker" file, so two waiters cannot both judge the same lock stale
 * and one delete the fresh lock the other just took: the breaker re-reads the lock and removes
 * it only if it still carries the stale token. Release checks ownership the same way: a lock
 * that was wrongly broken now belongs to someone else and is left alone.
 * Each step is a few system calls, done synchronously; only the waits differ between faces.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ExecgateError } from '../errors';
import { isProcessAlive } from './process';

export interface LockFileOptions {
  /** How long to wait for another holder, in milliseconds (default 10 s). */
  readonly timeoutMs?: number;
  /** The coded error when the wait ran out; `holder` describes who holds the lock. */
  readonly onTimeout: (holder: string, waitedMs: number) => ExecgateError;
  /** The coded error when the lock file cannot be created at all (default: rethrow). */
  readonly onError?: (error: NodeJS.ErrnoException) => ExecgateError;
}

interface LockInfo {
  readonly pid: number;
  readonly host: string;
  readonly token: string;
  readonly time: string;
}

interface SeenLock {
  readonly info?: LockInfo;
  readonly raw: string;
  readonly ageMs: number;
}

/** A lock file whose content never became readable is stale after this long (its writer died between create and write). */
const UNREADABLE_GRACE_MS = 2000;
/** The breaker is held for a few system calls; one older than this belonged to a dead process. */
const BREAKER_GRACE_MS = 5000;

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

function readLock(path: string): SeenLock | undefined {
  let raw: string;
  let ageMs: number;
  try {
    ageMs = Date.now() - statSync(path).mtimeMs;
    raw = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const data = JSON.parse(raw) as LockInfo;
    if (typeof data.pid === 'number' && typeof data.host === 'string' && typeof data.token === 'string') return { info: data, raw, ageMs };
  } catch {
    // being written right now, or its writer died mid-write
  }
  return { raw, ageMs };
}

function isStale(lock: SeenLock): boolean {
  if (lock.info === undefined) return lock.ageMs > UNREADABLE_GRACE_MS;
  return lock.info.host === hostname() && lock.info.pid !== process.pid && !isProcessAlive(lock.info.pid);
}

/** Remove the lock at `path` if it is stale. True when the caller should retry at once. */
function breakStale(path: string): boolean {
  const seen = readLock(path);
  if (seen === undefined) return true;
  if (!isStale(seen)) return false;
  const breaker = `${path}.break`;
  if (!createExclusive(breaker, JSON.stringify({ pid: process.pid, host: hostname() }))) {
    const other = readLock(breaker);
    if (other !== undefined && other.ageMs > BREAKER_GRACE_MS) rmSync(breaker, { force: true });
    return false;
  }
  try {
    const again = readLock(path);
    if (again === undefined) return true;
    if (again.raw === seen.raw && isStale(again)) {
      rmSync(path, { force: true });
      return true;
    }
    return false;
  } finally {
    rmSync(breaker, { force: true });
  }
}

function describeHolder(lock: SeenLock | undefined): string {
  if (lock?.info === undefined) return 'another process';
  return `process ${lock.info.pid} on ${lock.info.host} (since ${lock.info.time})`;
}

/** One attempt: taken, or how long to wait before the next. */
class Attempt {
  readonly #path: string;
  readonly #options: LockFileOptions;
  readonly #token = randomBytes(16).toString('hex');
  readonly #content: string;
  readonly #deadline: number;
  #delay = 2;

  constructor(path: string, options: LockFileOptions) {
    this.#path = path;
    this.#options = options;
    this.#content = JSON.stringify({ pid: process.pid, host: hostname(), token: this.#token, time: new Date().toISOString() });
    this.#deadline = Date.now() + (options.timeoutMs ?? 10_000);
  }

  /** 0 when taken; otherwise milliseconds to wait. Throws the coded error past the deadline. */
  next(): number {
    for (;;) {
      let taken: boolean;
      try {
        taken = createExclusive(this.#path, this.#content);
      } catch (error) {
        throw this.#options.onError?.(error as NodeJS.ErrnoException) ?? error;
      }
      if (taken) return 0;
      if (breakStale(this.#path)) continue;
      if (Date.now() >= this.#deadline) {
        throw this.#options.onTimeout(describeHolder(readLock(this.#path)), this.#options.timeoutMs ?? 10_000);
      }
      const wait = this.#delay + Math.random() * this.#delay;
      this.#delay = Math.min(this.#delay * 2, 100);
      return wait;
    }
  }

  /** Remove the lock only if it is still ours. */
  release(): void {
    try {
      if (readLock(this.#path)?.info?.token === this.#token) rmSync(this.#path, { force: true });
    } catch {
      // unreadable now: not provably ours, so not ours to remove
    }
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Run `fn` holding the lock file `path`, blocking while waiting for it. */
export function withLockSync<T>(path: string, fn: () => T, options: LockFileOptions): T {
  const attempt = new Attempt(path, options);
  for (let wait = attempt.next(); wait > 0; wait = attempt.next()) Atomics.wait(sleeper, 0, 0, wait);
  try {
    return fn();
  } finally {
    attempt.release();
  }
}

/** Run `fn` holding the lock file `path`. */
export async function withLock<T>(path: string, fn: () => Promise<T>, options: LockFileOptions): Promise<T> {
  const attempt = new Attempt(path, options);
  for (let wait = attempt.next(); wait > 0; wait = attempt.next()) await new Promise((resolve) => setTimeout(resolve, wait));
  try {
    return await fn();
  } finally {
    attempt.release();
  }
}
