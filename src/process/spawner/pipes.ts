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
 * Where mkfifo is missing or fails (or /tmp cannot take a FIFO), `take` resolves to undefined
 * and the run gets child_process's sockets as before.
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { getRuntimeBase } from '../../fs/runtime-dir';

/** A pipe this process holds both ends of: `read` stays here, `write` goes to the child. */
export interface PipePair {
  readonly read: number;
  readonly write: number;
}

/**
 * Pipes made per batch (one mkfifo process), and the stock below which the next batch is made.
 * Large: spawning mkfifo blocks the event loop for a fork (about 2 ms here), which a batch of
 * 256 spreads over 128 runs; a name costs nothing until it is used.
 */
const BATCH = 256;
const LOW = 64;
/** How long one batch may take before the runs waiting for it get sockets instead. */
const BATCH_TIMEOUT_MS = 10_000;

interface Batch {
  readonly dir: string;
  readonly names: string[];
}

export class PipePool {
  /** Batches made and not used up, oldest first. */
  readonly #batches: Batch[] = [];
  #stock = 0;
  #making: Promise<void> | undefined;
  /** Set once a batch failed: mkfifo is not there or FIFOs cannot be made; runs get sockets. */
  #broken = false;
  #swept = false;

  /** Two pipes (stdout, stderr), or undefined when none can be made here. */
  async take(): Promise<[PipePair, PipePair] | undefined> {
    if (this.#stock < 2 + LOW) this.prefill();
    // Runs that find the stock gone wait for the next batch (one at a time, however many wait).
    while (this.#stock < 2) {
      if (this.#broken) return undefined;
      this.prefill();
      await this.#making;
    }
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
    if (this.#making !== undefined || this.#broken || this.#stock >= 2 + LOW) return;
    this.#making = this.#makeBatch().catch(() => { this.#broken = true; }).finally(() => { this.#making = undefined; });
  }

  /** The next FIFO, opened and unlinked; its batch's directory is removed once used up. */
  #open(): PipePair {
    const batch = this.#batches[0];
    const name = batch.names.pop()!;
    this.#stock -= 1;
    if (batch.names.length === 0) {
      this.#batches.shift();
      removeOnExit.delete(batch.dir);
    }
    try {
      return openPipe(name);
    } finally {
      if (batch.names.length === 0) rmSync(batch.dir, { recursive: true, force: true });
    }
  }

  async #makeBatch(): Promise<void> {
    const base = getRuntimeBase();
    if (!this.#swept) {
      this.#swept = true;
      sweepDead(base);
    }
    const dir = mkdtempSync(join(base, `${PREFIX}${process.pid}-`));
    watchExit();
    removeOnExit.add(dir);
    const names = Array.from({ length: BATCH }, (_, i) => join(dir, String(i)));
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
  try {
    const read = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      if (!fstatSync(read).isFIFO()) throw new Error(`${path} is no longer the FIFO made for it`);
      return { read, write: openSync(`/proc/self/fd/${read}`, constants.O_WRONLY) };
    } catch (error) {
      closeSync(read);
      throw error;
    }
  } finally {
    unlinkSync(path);
  }
}

export function closePipe(pair: PipePair): void {
  for (const fd of [pair.read, pair.write]) {
    try { closeSync(fd); } catch { /* already closed */ }
  }
}

/** A batch's directory: `execgate-pipes-<pid of its process>-XXXXXX`. */
const PREFIX = 'execgate-pipes-';
const OWNED = /^execgate-pipes-([0-9]+)-/;

/**
 * Batch directories left by processes that are gone (killed before their exit handler ran), so
 * that they do not pile up in /tmp. Once per process, before its first batch.
 */
function sweepDead(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(OWNED.exec(name)?.[1] ?? 0);
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
