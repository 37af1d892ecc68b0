/*
 * Cross-process serialization of vault writers with a lock file.
 *
 * The lock is a file created with O_EXCL holding {pid, host, token, time}. A writer that finds
 * the lock taken waits (with jitter) up to a bound, then fails with a coded error naming the
 * holder. A lock whose process is gone (same host, pid no longer alive) is stale: a killed
 * writer must not block the vault forever. Breaking a stale lock is itself guarded by a short
 * "breaker" file so that two waiters cannot both judge the same lock stale and one of them
 * delete the fresh lock the other has just taken: the breaker re-reads the lock and removes it
 * only if it still carries the stale token.
 *
 * Readers take no lock: writers replace vault.json by atomic rename, so a reader always sees a
 * complete file.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { ExecgateError } from '../errors';

export interface LockOptions {
  /** How long to wait for another writer, in milliseconds (default 10 s). */
  timeoutMs?: number;
}

interface LockInfo {
  readonly pid: number;
  readonly host: string;
  readonly token: string;
  readonly time: string;
}

/** A lock file whose content never became readable is stale after this long (its writer died between create and write). */
const UNREADABLE_GRACE_MS = 2000;
/** The breaker is held for a few system calls; one older than this belonged to a dead process. */
const BREAKER_GRACE_MS = 5000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readLock(path: string): Promise<{ info?: LockInfo; ageMs: number } | undefined> {
  let text: string;
  let ageMs: number;
  try {
    const [content, stat] = await Promise.all([fs.readFile(path, 'utf8'), fs.stat(path)]);
    text = content;
    ageMs = Date.now() - stat.mtimeMs;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const data = JSON.parse(text) as LockInfo;
    if (typeof data.pid === 'number' && typeof data.host === 'string' && typeof data.token === 'string') {
      return { info: data, ageMs };
    }
  } catch {
    // unreadable: being written right now, or its writer died mid-write
  }
  return { ageMs };
}

function isStale(lock: { info?: LockInfo; ageMs: number }): boolean {
  if (lock.info === undefined) return lock.ageMs > UNREADABLE_GRACE_MS;
  return lock.info.host === hostname() && lock.info.pid !== process.pid && !isProcessAlive(lock.info.pid);
}

async function createExclusive(path: string, content: string): Promise<boolean> {
  let handle;
  try {
    handle = await fs.open(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
  return true;
}

/** Remove the lock at `path` if it is stale. True when the caller should retry at once. */
async function breakStaleLock(path: string): Promise<boolean> {
  const seen = await readLock(path);
  if (seen === undefined) return true;
  if (!isStale(seen)) return false;
  const breaker = `${path}.break`;
  if (!(await createExclusive(breaker, JSON.stringify({ pid: process.pid, host: hostname() })))) {
    const other = await readLock(breaker);
    if (other !== undefined && other.ageMs > BREAKER_GRACE_MS) await fs.rm(breaker, { force: true });
    return false;
  }
  try {
    const again = await readLock(path);
    if (again === undefined) return true;
    const same = seen.info === undefined ? again.info === undefined : again.info?.token === seen.info.token;
    if (same && isStale(again)) {
      await fs.rm(path, { force: true });
      return true;
    }
    return false;
  } finally {
    await fs.rm(breaker, { force: true });
  }
}

function describeHolder(lock: { info?: LockInfo; ageMs: number } | undefined): string {
  if (lock?.info === undefined) return 'another process';
  return `process ${lock.info.pid} on ${lock.info.host} (since ${lock.info.time})`;
}

/** Run `fn` while holding the lock file at `path`. */
export async function withLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const token = randomBytes(16).toString('hex');
  const content = JSON.stringify({ pid: process.pid, host: hostname(), token, time: new Date().toISOString() });
  const deadline = Date.now() + timeoutMs;
  let delay = 5;
  for (;;) {
    if (await createExclusive(path, content)) break;
    if (await breakStaleLock(path)) continue;
    if (Date.now() >= deadline) {
      const holder = describeHolder(await readLock(path).catch(() => undefined));
      throw new ExecgateError(
        'EXECGATE_ERR_VAULT_LOCKED',
        `The vault is locked by ${holder}; waited ${timeoutMs} ms. Retry when it finishes; if no such process is running, remove \`${path}\`.`,
        { path },
      );
    }
    await sleep(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 100);
  }
  try {
    return await fn();
  } finally {
    // Remove only our own lock: if it was wrongly broken, the file now belongs to someone else.
    const current = await readLock(path).catch(() => undefined);
    if (current?.info?.token === token) await fs.rm(path, { force: true });
  }
}
