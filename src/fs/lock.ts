/*
 * One lock, two faces: `withLockSync` (the audit log seals a record before the call that
 * produced it returns) and `withLock` (vault writers, which await I/O while holding it).
 *
 * The lock is a symbolic link whose target says who holds it (`execgate-lock:1:pid:start:since:
 * token:host`). symlink(2) creates the name and its content in one step, so there is no moment
 * when the lock exists but says nothing (a file created with O_EXCL and then written is empty
 * in between, and stays empty when the write fails on a full disk: the next caller misread it).
 * A short target lives in the inode, so taking the lock needs no data block on a full disk.
 *
 * Why not the kernel's flock: Node has no binding, and the helper way (a `flock(1)` child
 * locking an inherited descriptor) measured 2.5 ms per acquisition against 0.2 ms for this
 * lock, on a lock taken once per audit record.
 *
 * Waiting is fair: a waiter that finds the lock taken joins a queue of tickets beside it,
 * symlinks named by the system-wide monotonic clock (`<lock>.q.<ns>.<pid>`), so the names sort
 * in arrival order. Only the first live ticket tries the lock every millisecond; the others
 * watch the ticket ahead of theirs and sleep longer the further back they stand. A ticket or a
 * lock whose process is gone (the same host, and the pid's start time no longer matches) is
 * removed by whoever sees it; a holder on another host is never judged dead.
 *
 * The wait has no deadline while the lock changes hands: a waiter behind many holders is
 * served, not refused. Nor while the holder works: on a machine with a load of 80, a writer
 * that needs a second of CPU holds the lock for most of a minute. A waiter gives up only when
 * one holder has held the lock for `timeoutMs` without using any CPU (read from /proc: a hung or
 * stopped process), and the error names that holder and how long it has held the lock. Breaking a dead holder's lock happens under a breaker link, so two waiters cannot
 * both judge the same lock dead and one remove the lock the other has just taken.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, unlinkSync, watch, type FSWatcher } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { ExecgateError } from '../errors';
import { isProcessAlive } from './process';

export interface LockFileOptions {
  /** How long a holder may hold the lock without using the CPU before a waiter gives up, in milliseconds (default 30 s). */
  readonly timeoutMs?: number;
  /**
   * The coded error when a live holder made no progress for `timeoutMs`: `holder` says who,
   * `heldMs` how long it has held the lock, `stillMs` how long it has not used the CPU.
   */
  readonly onTimeout: (holder: string, heldMs: number, stillMs: number) => ExecgateError;
  /** The coded error when the lock cannot be created at all (a full disk, read-only file system). */
  readonly onError?: (error: NodeJS.ErrnoException) => ExecgateError;
  /**
   * `withLockSync` only: keep the lock after `fn` returns, for up to this many milliseconds of
   * disuse, so that this process's next call under the same lock takes none of its own (see
   * "Leases" below). Off by default.
   */
  readonly leaseMs?: number;
}

interface Holder {
  readonly pid: number;
  /** For a lease (see "Leases"): the thread of the holding process that keeps it. */
  readonly leaseThread?: number;
  /** The process's start time in clock ticks since boot (empty: unknown). */
  readonly start: string;
  readonly host: string;
  /** Epoch milliseconds when it took the lock (NaN: unknown). */
  readonly since: number;
  /** The raw target or content: what identifies this very acquisition. */
  readonly raw: string;
}

const PREFIX = 'execgate-lock:1:';
export const DEFAULT_HOLD_TIMEOUT_MS = 30_000;
/** A legacy lock file (JSON, from an older execgate) that says nothing is stale after this long. */
const UNREADABLE_GRACE_MS = 2000;
/** A waiter that finds the lock free this long while the head of the queue does not take it stops waiting its turn. */
const STUCK_QUEUE_MS = 500;

let ownStart: string | undefined;

/** Fields of /proc/PID/stat after the command name (field 3 is index 0). */
function readStat(pid: number | 'self'): string[] {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return [];
  }
}

/** Field 22: when the process started, which a reused pid does not share. */
function readStart(pid: number | 'self'): string {
  return readStat(pid)[19] ?? '';
}

/** Fields 14 and 15: the CPU time the process has used; undefined when it cannot be read. */
function readCpu(pid: number): string | undefined {
  const fields = readStat(pid);
  return fields.length > 13 ? `${fields[11]}+${fields[12]}` : undefined;
}

let host: string | undefined;

/** This host's name as a lock names it, read once per process (uname(2) on every record added up). */
function getHost(): string {
  host ??= hostname().replace(/:/g, '_').slice(0, 48);
  return host;
}

/*
 * What makes one acquisition's target unique among this process's: a random part drawn once
 * per process and a counter (the pid and start time tell processes apart). A fresh random
 * draw for every record cost more than the rest of the target.
 */
let tokenBase: string | undefined;
let tokenCount = 0;

function makeTarget(lease = false): string {
  ownStart ??= readStart('self');
  tokenBase ??= randomBytes(4).toString('hex');
  tokenCount = (tokenCount + 1) % 0x100000000;
  // A lease's token says so, and on which thread of its process it is kept (`l<threadId>`).
  const token = `${tokenBase}${tokenCount.toString(16)}${lease ? `l${threadId}` : ''}`;
  return `${PREFIX}${process.pid}:${ownStart}:${Date.now()}:${token}:${getHost()}`;
}

function parseTarget(raw: string): Holder | undefined {
  if (!raw.startsWith(PREFIX)) return undefined;
  const [pid, start, since, token, ...host] = raw.slice(PREFIX.length).split(':');
  if (!/^\d+$/.test(pid ?? '')) return undefined;
  const lease = /l(\d+)$/.exec(token ?? '');
  return { pid: Number(pid), start: start ?? '', host: host.join(':'), since: Number(since), raw, ...(lease ? { leaseThread: Number(lease[1]) } : {}) };
}

/** A lock file of an older execgate: JSON with pid, host and time, written after it was created. */
function readLegacy(path: string): Holder | undefined {
  let raw: string;
  let mtime: number;
  try {
    mtime = statSync(path).mtimeMs;
    raw = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const data = JSON.parse(raw) as { pid?: unknown; host?: unknown; time?: unknown };
    if (typeof data.pid === 'number' && typeof data.host === 'string') {
      return { pid: data.pid, start: '', host: data.host, since: typeof data.time === 'string' ? Date.parse(data.time) : mtime, raw };
    }
  } catch {
    // empty or half written
  }
  return { pid: 0, start: '', host: '', since: mtime, raw: `unreadable:${mtime}:${raw.length}` };
}

/** Who holds the lock at `path`, or undefined when nobody does. */
function readHolder(path: string): Holder | undefined {
  try {
    const raw = readlinkSync(path);
    return parseTarget(raw) ?? { pid: 0, start: '', host: '', since: Number.NaN, raw };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'EINVAL') return readLegacy(path);
    throw error;
  }
}

function isGone(holder: Holder): boolean {
  if (holder.pid === 0) return holder.raw.startsWith('unreadable:') && Date.now() - holder.since > UNREADABLE_GRACE_MS;
  if (holder.host !== getHost() && holder.host !== hostname()) return false;
  if (holder.pid === process.pid) return false;
  if (!isProcessAlive(holder.pid)) return true;
  return holder.start !== '' && readStart(holder.pid) !== holder.start;
}

function describeHolder(holder: Holder | undefined): string {
  if (holder === undefined || holder.pid === 0) return 'another process';
  const since = Number.isFinite(holder.since) ? ` (since ${new Date(holder.since).toISOString()})` : '';
  // A stopped holder (SIGSTOP, a shell's Ctrl-Z, a debugger) says so: resuming it releases the lock.
  const state = holder.host === getHost() ? readStat(holder.pid)[0] : undefined;
  const stopped = state === 'T' || state === 't' ? `, stopped${state === 't' ? ' by a debugger' : ''} (\`kill -CONT ${holder.pid}\` resumes it)` : '';
  return `process ${holder.pid} on ${holder.host}${since}${stopped}`;
}

function tryLink(target: string, path: string): boolean {
  try {
    symlinkSync(target, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function removeIf(path: string, raw: string): void {
  try {
    if (readlinkSync(path) === raw) unlinkSync(path);
  } catch {
    // gone already, or not ours to remove
  }
}

/** Remove the lock at `path` if its holder is gone. True when the caller should try again at once. */
function breakIfGone(path: string, seen: Holder): boolean {
  if (!isGone(seen)) return false;
  const breaker = `${path}.break`;
  const mine = makeTarget();
  if (!tryLink(mine, breaker)) {
    const other = readHolder(breaker);
    if (other !== undefined && (isGone(other) || Date.now() - other.since > 5000)) rmSync(breaker, { force: true });
    return false;
  }
  try {
    const again = readHolder(path);
    if (again === undefined) return true;
    if (again.raw === seen.raw && isGone(again)) {
      rmSync(path, { force: true });
      return true;
    }
    return false;
  } finally {
    removeIf(breaker, mine);
  }
}

/** This waiter's place in the queue beside the lock. */
class Ticket {
  readonly #dir: string;
  readonly #prefix: string;
  readonly #name: string | undefined;
  #ahead: string | undefined;
  #position = 0;

  constructor(lockPath: string, target: string) {
    this.#dir = dirname(lockPath);
    this.#prefix = `${basename(lockPath)}.q.`;
    const name = `${this.#prefix}${process.hrtime.bigint().toString().padStart(20, '0')}.${process.pid}.${randomBytes(3).toString('hex')}`;
    try {
      symlinkSync(target, join(this.#dir, name));
      this.#name = name;
    } catch {
      // No ticket (no room for even a link): wait unqueued; the lock itself still excludes.
      this.#name = undefined;
    }
  }

  /** How many live tickets stand ahead (0: this waiter's turn). Removes tickets of processes that are gone. */
  refresh(): number {
    if (this.#name === undefined) return 0;
    let names: string[];
    try {
      names = readdirSync(this.#dir).filter((name) => name.startsWith(this.#prefix) && name < (this.#name as string)).sort();
    } catch {
      return 0;
    }
    const live: string[] = [];
    for (const name of names) {
      const pid = Number(name.slice(this.#prefix.length).split('.')[1]);
      const path = join(this.#dir, name);
      const holder = (() => { try { return parseTarget(readlinkSync(path)); } catch { return undefined; } })();
      if (holder !== undefined && isGone(holder)) rmSync(path, { force: true });
      else if (holder !== undefined || isProcessAlive(pid)) live.push(name);
    }
    this.#ahead = live[live.length - 1];
    this.#position = live.length;
    return this.#position;
  }

  get position(): number {
    return this.#position;
  }

  /** Whether the ticket just ahead is still there (cheap: one lstat). */
  aheadStays(): boolean {
    if (this.#ahead === undefined) return false;
    try {
      readlinkSync(join(this.#dir, this.#ahead));
      return true;
    } catch {
      return false;
    }
  }

  leave(): void {
    if (this.#name !== undefined) rmSync(join(this.#dir, this.#name), { force: true });
  }
}

/** One acquisition: taken, or how long to sleep before looking again. */
class Attempt {
  readonly #path: string;
  readonly #options: LockFileOptions;
  readonly #target: string;
  readonly #timeoutMs: number;
  /** Join the queue before trying the lock (this process just handed it to a waiter). */
  readonly #queueFirst: boolean;
  #ticket: Ticket | undefined;
  /** The holder last seen, when this waiter first saw it, and when it last saw it use the CPU. */
  #seen: { raw: string; at: number; cpu: string | undefined; busyAt: number } | undefined;
  #freeSince: number | undefined;
  #checks = 0;

  constructor(path: string, options: LockFileOptions, queueFirst = false, lease = false) {
    this.#path = path;
    this.#options = options;
    this.#target = makeTarget(lease);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_HOLD_TIMEOUT_MS;
    this.#queueFirst = queueFirst;
  }

  /** What this acquisition's lock says (its identity). */
  get target(): string {
    return this.#target;
  }

  #fail(error: unknown): never {
    this.#ticket?.leave();
    throw this.#options.onError?.(error as NodeJS.ErrnoException) ?? error;
  }

  #take(): boolean {
    let taken: boolean;
    try {
      taken = tryLink(this.#target, this.#path);
    } catch (error) {
      this.#fail(error);
    }
    if (taken) this.#ticket?.leave();
    return taken;
  }

  /** 0 when taken; otherwise milliseconds to sleep. Throws the coded error when a live holder hung. */
  next(): number {
    if (this.#ticket === undefined) {
      // The uncontended path: one symlink(2).
      if (!this.#queueFirst && this.#take()) return 0;
      this.#ticket = new Ticket(this.#path, this.#target);
      this.#ticket.refresh();
    }
    this.#checks += 1;
    let ahead = this.#ticket.position;
    // The ticket ahead gone (its waiter took the lock or left) or now and then (its process
    // may have died): where this waiter stands now.
    if (ahead > 0 && (!this.#ticket.aheadStays() || this.#checks % 16 === 0)) ahead = this.#ticket.refresh();
    // The head of the queue looks at the lock every time; the others now and then, for a holder
    // that hung or a head that stopped taking its turn.
    if (ahead > 0 && this.#checks % 8 !== 0) return Math.min(20, 1 + ahead);
    let holder: Holder | undefined;
    try {
      holder = readHolder(this.#path);
    } catch (error) {
      this.#fail(error);
    }
    const now = Date.now();
    if (holder === undefined) {
      this.#freeSince ??= now;
      if (ahead === 0 || now - this.#freeSince >= STUCK_QUEUE_MS) {
        if (this.#take()) return 0;
        this.#freeSince = undefined;
      }
      return ahead === 0 ? 1 : Math.min(20, 1 + ahead);
    }
    this.#freeSince = undefined;
    // A lease kept by this very thread is never in use while this code runs: give it up.
    if (isOwnLease(holder)) {
      dropLease(this.#path, holder.raw);
      return ahead === 0 && this.#take() ? 0 : 1;
    }
    if (breakIfGone(this.#path, holder)) return ahead === 0 && this.#take() ? 0 : 1;
    // A holder that is slow because the machine is busy still uses the CPU; a hung or stopped
    // one does not. Only time without progress counts (wall time for a holder on another host).
    const local = holder.pid > 0 && (holder.host === getHost() || holder.host === hostname());
    const cpu = local ? readCpu(holder.pid) : undefined;
    if (this.#seen?.raw !== holder.raw) this.#seen = { raw: holder.raw, at: now, cpu, busyAt: now };
    else if (cpu !== undefined && cpu !== this.#seen.cpu) this.#seen = { ...this.#seen, cpu, busyAt: now };
    const held = Number.isFinite(holder.since) && holder.since <= now ? now - holder.since : now - this.#seen.at;
    if (now - this.#seen.busyAt >= this.#timeoutMs) {
      this.#ticket.leave();
      throw this.#options.onTimeout(describeHolder(holder), held, now - this.#seen.busyAt);
    }
    return ahead === 0 ? 1 : Math.min(20, 1 + ahead);
  }

  /** Remove the lock only if it is still ours. */
  release(): void {
    removeIf(this.#path, this.#target);
  }

  abandon(): void {
    this.#ticket?.leave();
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/*
 * Leases. A process that writes one record after another (a run's start and then its end, runs
 * back to back) need not take and give back the lock for each: with `leaseMs`, `withLockSync`
 * keeps the lock after `fn` and the next call under it runs at once, after two cheap checks: the
 * lock still names this acquisition (readlink), and nobody queues for it (a listing of its
 * directory). The lease ends
 * - as soon as another process queues a ticket: a watch on the lock's directory (inotify) sees
 *   the ticket made and gives the lock up on this process's next turn of its event loop; a
 *   ticket already there when the lock was taken means no lease at all; and the next call looks
 *   too (where no watch can be had, it is the next call or the timer that hands it over). This
 *   process then queues behind whoever was waiting (it does not barge back in);
 * - after `leaseMs` without a call (a timer that does not keep the process alive);
 * - when `fn` throws, at `releaseLease`, and when the process exits.
 * A waiter therefore waits for the holder's event loop to be free, at most `leaseMs` where no
 * watch could be set. A lease is kept per thread of a process (its
 * target says which: `l<threadId>`): another copy of this module on the same thread (a test
 * runner's module registry) that finds one its copy left gives it up, since the thread that kept
 * it is not inside a record while the finder runs.
 */
interface Lease {
  readonly target: string;
  readonly timer: NodeJS.Timeout;
  /** Watches the lock's directory for a ticket (undefined where it cannot: the timer alone then). */
  readonly watcher: FSWatcher | undefined;
}

const leases = new Map<string, Lease>();
/** Locks this process gave up to a waiter: its next call queues behind, rather than barging in. */
const handedOver = new Set<string>();
let exitHook = false;

function dropAllLeases(): void {
  for (const path of [...leases.keys()]) dropLease(path);
}

/** End this process's lease on `path` (when it is `raw`, or any), removing the lock if it still names the lease. */
function dropLease(path: string, raw?: string): void {
  const lease = leases.get(path);
  if (lease !== undefined && (raw === undefined || lease.target === raw)) {
    leases.delete(path);
    clearTimeout(lease.timer);
    lease.watcher?.close();
    removeIf(path, lease.target);
  } else if (raw !== undefined) {
    removeIf(path, raw);
  }
}

/** A watch (inotify) on the lock's directory that ends the lease as soon as another waiter queues a ticket. */
function watchForTickets(path: string, target: string): FSWatcher | undefined {
  const prefix = `${basename(path)}.q.`;
  try {
    const watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
      if (typeof name === 'string' && name.startsWith(prefix) && leases.get(path)?.target === target) {
        dropLease(path, target);
        handedOver.add(path);
      }
    });
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return undefined; // no inotify watch left (fs.inotify.max_user_watches): the timer and the next call hand it over
  }
}

/**
 * Keep the lock just taken as a lease, unless a waiter queued meanwhile (then it goes at once).
 * The watch is set before the look, so that a ticket made between them is seen by one or the other.
 */
function keepLease(path: string, target: string, ms: number): boolean {
  const watcher = watchForTickets(path, target);
  if (hasWaiters(path)) {
    watcher?.close();
    handedOver.add(path);
    return false;
  }
  const timer = setTimeout(() => dropLease(path, target), ms);
  timer.unref();
  leases.set(path, { target, timer, watcher });
  if (!exitHook) {
    exitHook = true;
    process.once('exit', dropAllLeases);
  }
  return true;
}

function isOwnLease(holder: Holder): boolean {
  return holder.leaseThread === threadId && holder.pid === process.pid && holder.start === (ownStart ??= readStart('self')) && holder.host === getHost();
}

/** Whether a ticket of another waiter stands beside the lock. */
function hasWaiters(path: string): boolean {
  const prefix = `${basename(path)}.q.`;
  try {
    return readdirSync(dirname(path)).some((name) => name.startsWith(prefix));
  } catch {
    return true;
  }
}

function stillNames(path: string, target: string): boolean {
  try {
    return readlinkSync(path) === target;
  } catch {
    return false;
  }
}

/** End this process's lease on the lock at `path`, if it keeps one (a writer closing). */
export function releaseLease(path: string): void {
  dropLease(path);
}

/** Run `fn` holding the lock `path`, blocking while waiting for it. */
export function withLockSync<T>(path: string, fn: () => T, options: LockFileOptions): T {
  const leaseMs = options.leaseMs ?? 0;
  let queueFirst = handedOver.delete(path);
  const lease = leases.get(path);
  if (lease !== undefined) {
    const waiting = hasWaiters(path);
    if (!waiting && stillNames(path, lease.target)) {
      try {
        const result = fn();
        lease.timer.refresh();
        return result;
      } catch (error) {
        dropLease(path);
        throw error;
      }
    }
    dropLease(path);
    queueFirst ||= waiting;
  }
  const attempt = new Attempt(path, options, queueFirst, leaseMs > 0);
  try {
    for (let wait = attempt.next(); wait > 0; wait = attempt.next()) Atomics.wait(sleeper, 0, 0, wait);
  } catch (error) {
    attempt.abandon();
    throw error;
  }
  let kept = false;
  try {
    const result = fn();
    if (leaseMs > 0) kept = keepLease(path, attempt.target, leaseMs);
    return result;
  } finally {
    if (!kept) attempt.release();
  }
}

/** Run `fn` holding the lock `path`. */
export async function withLock<T>(path: string, fn: () => Promise<T>, options: LockFileOptions): Promise<T> {
  dropLease(path);
  const attempt = new Attempt(path, options);
  try {
    for (let wait = attempt.next(); wait > 0; wait = attempt.next()) await new Promise((resolve) => setTimeout(resolve, wait));
  } catch (error) {
    attempt.abandon();
    throw error;
  }
  try {
    return await fn();
  } finally {
    attempt.release();
  }
}
