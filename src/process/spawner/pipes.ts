/*
 * Real pipes for a run's stdout and stderr. child_process's `'pipe'` gives a child connected UNIX
 * sockets (libuv makes its stdio with socketpair(2)), and a program that opens its own output by
 * name (`echo x > /dev/stdout`, `tee /dev/stderr`, `> /proc/self/fd/2`) fails there with ENXIO:
 * a socket cannot be opened through /proc. A pipe can, as in a terminal's shell pipeline.
 *
 * Node has no pipe(2). A FIFO is a pipe with a name: opened once for reading (non-blocking,
 * so the open does not wait for a writer) and once for writing, then unlinked, it is a pipe
 * only this process holds, whose write end goes to the child as its descriptor 1 or 2 and whose
 * read end this process reads (output-reader.ts). They are made in batches by one `mkfifo` in a
 * fresh 0700 directory (each 0600), ahead of need, so a run's start pays two opens and an unlink
 * per pipe, not a process. The batch waits as names, not as open descriptors: every run's start
 * looks at each descriptor this process holds (process/inherited-fds.ts), so a stock of open
 * pipes would cost every run. A batch's directory is removed once used up or when this process
 * exits, and one whose process is gone (killed) by the next process that makes pipes.
 *
 * Where mkfifo is missing or fails (or /tmp cannot take a FIFO, or is full), `take` resolves
 * to undefined and the run gets child_process's sockets as before; the pool tries again after a
 * pause that doubles with each failure in a row (1 s up to 5 min), so that a passing fault (a
 * full disk, a descriptor limit, a loaded machine's timeout) does not take pipes from every
 * later run of a long-lived gateway, and a missing mkfifo costs one fork per 5 minutes.
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { getRuntimeBase } from '../../fs/runtime-dir';

/** A pipe this process holds both ends of: `read` stays here, `write` goes to the child. */
export interface PipePair {
  readonly read: number;
  readonly write: number;
}

/**
 * Pipes made per batch (one mkfifo process), and the stock below which the next batch is made.
 * A long-lived gateway's batches are large: spawning mkfifo blocks the event loop for a fork
 * (about 2 ms here), which a batch of 256 spreads over 128 runs; a name costs nothing until it is
 * used. But a process that makes one run (the CLI) paid for 256 FIFOs made and 254 removed at
 * its exit (some 20 ms of its CPU under load, in profiles). So batches grow with use: the first
 * holds FIRST_BATCH, each later one twice the pipes taken so far (up to BATCH), and the next is
 * made once the stock falls below as many as were taken so far (up to LOW).
 */
const BATCH = 256;
const FIRST_BATCH = 8;
const LOW = 64;
/** How long one batch may take before the runs waiting for it get sockets instead. */
const BATCH_TIMEOUT_MS = 10_000;
/** The pause after a failed batch before the next is tried, doubling per failure in a row, and its ceiling. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 300_000;

export interface PipePoolOptions {
  /** Where batch directories are made (tests); default getRuntimeBase(). */
  readonly base?: string;
  /** The first pause after a failed batch (tests); it doubles per failure in a row up to RETRY_MAX_MS. */
  readonly retryMs?: number;
  /** The clock the pause is read on (tests); default Date.now. */
  readonly now?: () => number;
}

interface Batch {
  readonly dir: string;
  readonly names: string[];
}

export class PipePool {
  /** Batches made and not used up, oldest first. */
  readonly #batches: Batch[] = [];
  #stock = 0;
  /** Pipes taken so far (the batches and the stock kept grow with it). */
  #taken = 0;
  #making: Promise<void> | undefined;
  /** After a failed batch: no batch is tried before this time (on #now); runs get sockets. */
  #retryAt = 0;
  /** Batches failed in a row (the pause doubles with each). */
  #failures = 0;
  #swept = false;
  readonly #base: string | undefined;
  readonly #retryMs: number;
  readonly #now: () => number;

  constructor(options: PipePoolOptions = {}) {
    this.#base = options.base;
    this.#retryMs = options.retryMs ?? RETRY_FIRST_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Whether the last batch failed and the pause before the next has not passed. */
  get #pausing(): boolean {
    return this.#failures > 0 && this.#now() < this.#retryAt;
  }

  /** Two pipes (stdout, stderr), or undefined when none can be made here. */
  async take(): Promise<[PipePair, PipePair] | undefined> {
    this.prefill();
    // Runs that find the stock gone wait for the next batch (one at a time, however many wait).
    while (this.#stock < 2) {
      if (this.#pausing) return undefined;
      this.prefill();
      const making = this.#making;
      if (making === undefined) return undefined;
      await making;
      if (this.#failures > 0 && this.#stock < 2) return undefined;
    }
    this.#taken += 2;
    const first = this.#open();
    try {
      return [first, this.#open()];
    } catch (error) {
      closePipe(first);
      throw error;
    }
  }

  /** Make the next batch now, unless the stock is enough or one is being made (a gateway starts it before its first run). */
  prefill(): void {
    if (this.#making !== undefined || this.#pausing || this.#stock >= 2 + Math.min(LOW, this.#taken)) return;
    this.#making = this.#makeBatch().then(() => {
      this.#failures = 0;
    }, () => {
      this.#failures += 1;
      this.#retryAt = this.#now() + Math.min(RETRY_MAX_MS, this.#retryMs * 2 ** (this.#failures - 1));
    }).finally(() => { this.#making = undefined; });
  }

  /**
   * The next FIFO, opened and unlinked; its batch's directory is removed once used up. A batch
   * whose directory is gone (removed by hand, or by a sweep that took this process for dead) is
   * dropped whole: its other names are gone too, and each would cost a run its pipes.
   */
  #open(): PipePair {
    const batch = this.#batches[0];
    const name = batch.names.pop()!;
    this.#stock -= 1;
    try {
      return openPipe(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && statSync(batch.dir, { throwIfNoEntry: false }) === undefined) {
        this.#stock -= batch.names.length;
        batch.names.length = 0;
      }
      throw error;
    } finally {
      if (batch.names.length === 0) {
        if (this.#batches[0] === batch) this.#batches.shift();
        removeOnExit.delete(batch.dir);
        rmSync(batch.dir, { recursive: true, force: true });
      }
    }
  }

  async #makeBatch(): Promise<void> {
    const base = this.#base ?? getRuntimeBase();
    if (!this.#swept) {
      this.#swept = true;
      sweepDead(base);
    }
    const dir = mkdtempSync(join(base, `${PREFIX}${getPidNamespace()}-${process.pid}-`));
    watchExit();
    removeOnExit.add(dir);
    const size = Math.min(BATCH, Math.max(FIRST_BATCH, 2 * this.#taken));
    const names = Array.from({ length: size }, (_, i) => join(dir, String(i)));
    try {
      await new Promise<void>((resolve, reject) => {
        execFile('mkfifo', ['-m', '600', '--', ...names], { timeout: BATCH_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' } }, (error) => {
          if (error) reject(new Error(`mkfifo failed: ${error.message}`));
          else resolve();
        });
      });
    } catch (error) {
      removeOnExit.delete(dir);
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    this.#batches.push({ dir, names });
    this.#stock += names.length;
  }
}

/**
 * Both ends of the FIFO at `path`, which is unlinked: from then on only these descriptors reach it.
 *
 * The name is checked as opened: a symlink is not followed, and what opened must be a FIFO. A
 * process of this user can replace a name in the batch's directory (a regular file, a symlink
 * to one, a device); the run's output went there, and its reader failed only after the command
 * had started (the run reported as not started, its processes left behind). Such a name throws
 * here, before any spawn, and the run gets sockets. The write end is opened through this
 * process's read end (/proc/self/fd), not the name again: the same pipe, whatever the name has
 * become meanwhile, and an open that cannot wait (the pipe has its reader: this process).
 */
function openPipe(path: string): PipePair {
  // Read end first (non-blocking: no writer yet); then the write end opens at once. Both close-on-exec.
  let pair: PipePair;
  try {
    const read = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      if (!fstatSync(read).isFIFO()) throw new Error(`${path} is no longer the FIFO made for it`);
      pair = { read, write: openSync(`/proc/self/fd/${read}`, constants.O_WRONLY) };
    } catch (error) {
      closeSync(read);
      throw error;
    }
  } catch (error) {
    try { unlinkSync(path); } catch { /* the open's error is the one to tell */ }
    throw error;
  }
  try {
    unlinkSync(path);
  } catch (error) {
    // Opened but still named: not a pipe only this process holds.
    closePipe(pair);
    throw error;
  }
  return pair;
}

export function closePipe(pair: PipePair): void {
  for (const fd of [pair.read, pair.write]) {
    try { closeSync(fd); } catch { /* already closed */ }
  }
}

/**
 * A batch's directory: `execgate-pipes-<PID namespace>-<pid of its process>-XXXXXX`. A pid means
 * something only in its PID namespace: processes that share /tmp (a container given the host's,
 * a sandbox's bind) may not share one, and a live process of another namespace would look dead
 * (or another, live, process would stand for a dead one) to a pid looked up here.
 */
const PREFIX = 'execgate-pipes-';
const OWNED = /^execgate-pipes-(?:([0-9]+)-)?([0-9]+)-[^-]+$/;

let pidNamespace: string | undefined;

/** This process's PID namespace (the inode of /proc/self/ns/pid), or `0` where it cannot be read. */
export function getPidNamespace(): string {
  if (pidNamespace !== undefined) return pidNamespace;
  try {
    pidNamespace = /^pid:\[([0-9]+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    pidNamespace = '0';
  }
  return pidNamespace;
}

/**
 * Batch directories left by processes that are gone (killed before their exit handler ran), so
 * that they do not pile up in /tmp. Once per process, before its first batch; only those made in
 * this PID namespace (a name without one, made before names held it, is taken as this one's).
 */
function sweepDead(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  const namespace = getPidNamespace();
  for (const name of names) {
    const owned = OWNED.exec(name);
    if (!owned || (owned[1] !== undefined && owned[1] !== namespace) || namespace === '0') continue;
    const pid = Number(owned[2]);
    if (pid === 0 || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (error) {
      // ESRCH: no such process. (EPERM: alive, another user's.)
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') rmSync(join(base, name), { recursive: true, force: true });
    }
  }
}

/** Directories of batches not used up, removed when this process exits. */
const removeOnExit = new Set<string>();
let watching = false;

function watchExit(): void {
  if (watching) return;
  watching = true;
  process.once('exit', () => {
    for (const dir of removeOnExit) rmSync(dir, { recursive: true, force: true });
  });
}

let pool: PipePool | undefined;

/** This process's pool. */
export function getPipePool(): PipePool {
  pool ??= new PipePool();
  return pool;
}
