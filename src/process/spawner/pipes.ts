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
 * fresh 0700 directory (0600 each, removed once opened), ahead of need, so a run's start pays a
 * few opens, not a process.
 *
 * Where mkfifo is missing or fails (or /tmp cannot take a FIFO), `take` resolves to undefined
 * and the run gets child_process's sockets as before.
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { getRuntimeBase } from '../../fs/runtime-dir';

/** A pipe this process holds both ends of: `read` stays here, `write` goes to the child. */
export interface PipePair {
  readonly read: number;
  readonly write: number;
}

/** Pipes made per batch (one mkfifo process), and the stock below which the next batch is made. */
const BATCH = 32;
const LOW = 8;
/** How long one batch may take before the runs waiting for it get sockets instead. */
const BATCH_TIMEOUT_MS = 10_000;

export class PipePool {
  readonly #free: PipePair[] = [];
  #making: Promise<void> | undefined;
  /** Set once a batch failed: mkfifo is not there or FIFOs cannot be made; runs get sockets. */
  #broken = false;

  /** Two pipes (stdout, stderr), or undefined when none can be made here. */
  async take(): Promise<[PipePair, PipePair] | undefined> {
    if (this.#free.length < 2 + LOW) this.#refill();
    while (this.#free.length < 2) {
      if (this.#broken || this.#making === undefined) return undefined;
      await this.#making;
    }
    return [this.#free.pop()!, this.#free.pop()!];
  }

  /** Whether pipes are made here (false once mkfifo failed). */
  get works(): boolean {
    return !this.#broken;
  }

  #refill(): void {
    if (this.#making !== undefined || this.#broken) return;
    this.#making = this.#makeBatch().catch(() => { this.#broken = true; }).finally(() => { this.#making = undefined; });
  }

  async #makeBatch(): Promise<void> {
    const dir = mkdtempSync(join(getRuntimeBase(), 'execgate-pipes-'));
    try {
      const names = Array.from({ length: BATCH }, (_, i) => join(dir, String(i)));
      await new Promise<void>((resolve, reject) => {
        execFile('mkfifo', ['-m', '600', '--', ...names], { timeout: BATCH_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' } }, (error) => {
          if (error) reject(new Error(`mkfifo failed: ${error.message}`));
          else resolve();
        });
      });
      for (const name of names) this.#free.push(openPipe(name));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** Both ends of the FIFO at `path`, which is unlinked: from then on only these descriptors reach it. */
function openPipe(path: string): PipePair {
  // Read end first (non-blocking: no writer yet); then the write end opens at once. Both close-on-exec.
  const read = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let write: number;
  try {
    write = openSync(path, constants.O_WRONLY);
  } catch (error) {
    closeSync(read);
    throw error;
  } finally {
    unlinkSync(path);
  }
  return { read, write };
}

export function closePipe(pair: PipePair): void {
  for (const fd of [pair.read, pair.write]) {
    try { closeSync(fd); } catch { /* already closed */ }
  }
}

let pool: PipePool | undefined;

/** This process's pool. */
export function getPipePool(): PipePool {
  pool ??= new PipePool();
  return pool;
}
