/*
 * The full (redacted) combined output of a run whose capture was cut. Bytes are buffered in
 * memory until a capture overflows; only then is the file opened, so runs with small output
 * never touch the disk. The file is created 0600 inside the 0700 state directory and is itself
 * capped, with a notice, so a runaway child cannot fill the disk.
 *
 * The disk may be full (or read-only, or failing) all the same. Writes happen in the run's
 * output handler, where a throw would take the host down, so a failed write ends the file
 * instead: it is removed (a partial file would pass for the whole output, and its space is
 * better given back), the run goes on with its captures in memory, and `failure` says why for
 * the result's notice.
 */
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir } from '../../home';

export class OutputSpill {
  readonly path: string;
  readonly #dir: string;
  readonly #maxFileBytes: number;
  readonly #pendingLimit: number;
  #pending: Buffer[] | undefined = [];
  #pendingBytes = 0;
  #fd: number | undefined;
  #written = 0;
  #cut = 0;
  #closed = false;
  #failure: string | undefined;

  constructor(options: { dir: string; runId: string; maxFileBytes: number; pendingLimit: number }) {
    this.#dir = options.dir;
    this.path = join(options.dir, `${options.runId}.log`);
    this.#maxFileBytes = options.maxFileBytes;
    this.#pendingLimit = options.pendingLimit;
  }

  get active(): boolean {
    return this.#fd !== undefined || this.#failure !== undefined;
  }

  get cutBytes(): number {
    return this.#cut;
  }

  /** Why the file could not be written (an errno code), if it could not. */
  get failure(): string | undefined {
    return this.#failure;
  }

  write(chunk: Buffer): void {
    if (this.#closed || this.#failure !== undefined || chunk.length === 0) return;
    if (this.#fd !== undefined) {
      this.#writeFile(chunk);
      return;
    }
    if (this.#pending) {
      this.#pending.push(Buffer.from(chunk));
      this.#pendingBytes += chunk.length;
      // Captures overflow long before this; past it the early bytes cannot be kept anyway.
      if (this.#pendingBytes > this.#pendingLimit) this.activate();
    }
  }

  /** Open the file and write everything buffered so far. */
  activate(): void {
    if (this.#fd !== undefined || this.#closed || this.#failure !== undefined) return;
    const pending = this.#pending ?? [];
    this.#pending = undefined;
    this.#pendingBytes = 0;
    try {
      ensureDir(this.#dir);
      this.#fd = openSync(this.path, 'wx', 0o600);
    } catch (error) {
      this.#fail(error);
      return;
    }
    for (const chunk of pending) this.#writeFile(chunk);
  }

  #fail(error: unknown): void {
    this.#failure = (error as NodeJS.ErrnoException).code ?? String(error);
    this.#pending = undefined;
    if (this.#fd !== undefined) {
      try { closeSync(this.#fd); } catch { /* closing is all that is left */ }
      this.#fd = undefined;
    }
    rmSync(this.path, { force: true });
  }

  #writeFile(chunk: Buffer): void {
    if (this.#fd === undefined) return;
    const room = this.#maxFileBytes - this.#written;
    if (room <= 0) {
      this.#cut += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    try {
      let offset = 0;
      while (offset < part.length) offset += writeSync(this.#fd, part, offset, part.length - offset);
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#written += part.length;
    this.#cut += chunk.length - part.length;
  }

  /** Close the file (with a notice if it was cut); returns the path if a whole file was written. */
  close(trailer?: string): string | undefined {
    if (this.#closed) return this.#fd === undefined || this.#failure !== undefined ? undefined : this.path;
    this.#closed = true;
    this.#pending = undefined;
    if (this.#fd === undefined) return undefined;
    const notes: string[] = [];
    if (this.#cut > 0) notes.push(`[execgate: output file cut at ${this.#written} bytes; ${this.#cut} more bytes were discarded]`);
    if (trailer) notes.push(trailer);
    const fd = this.#fd;
    try {
      if (notes.length > 0) writeSync(fd, `\n${notes.join('\n')}\n`);
    } catch (error) {
      this.#fail(error);
      return undefined;
    }
    closeSync(fd);
    return this.path;
  }
}
