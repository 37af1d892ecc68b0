/*
 * The full (redacted) combined output of a run whose capture was cut. Bytes are buffered in
 * memory until a capture overflows; only then is the file opened, so runs with small output
 * never touch the disk. The file is created 0600 inside the 0700 state directory and is itself
 * capped, with a notice, so a runaway child cannot fill the disk.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
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

  constructor(options: { dir: string; runId: string; maxFileBytes: number; pendingLimit: number }) {
    this.#dir = options.dir;
    this.path = join(options.dir, `${options.runId}.log`);
    this.#maxFileBytes = options.maxFileBytes;
    this.#pendingLimit = options.pendingLimit;
  }

  get active(): boolean {
    return this.#fd !== undefined;
  }

  get cutBytes(): number {
    return this.#cut;
  }

  write(chunk: Buffer): void {
    if (this.#closed || chunk.length === 0) return;
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
    if (this.#fd !== undefined || this.#closed) return;
    ensureDir(this.#dir);
    this.#fd = openSync(this.path, 'wx', 0o600);
    const pending = this.#pending ?? [];
    this.#pending = undefined;
    this.#pendingBytes = 0;
    for (const chunk of pending) this.#writeFile(chunk);
  }

  #writeFile(chunk: Buffer): void {
    const room = this.#maxFileBytes - this.#written;
    if (room <= 0) {
      this.#cut += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    let offset = 0;
    while (offset < part.length) offset += writeSync(this.#fd as number, part, offset, part.length - offset);
    this.#written += part.length;
    this.#cut += chunk.length - part.length;
  }

  /** Close the file (with a notice if it was cut); returns the path if a file was written. */
  close(trailer?: string): string | undefined {
    if (this.#closed) return this.#fd === undefined ? undefined : this.path;
    this.#closed = true;
    this.#pending = undefined;
    if (this.#fd === undefined) return undefined;
    const notes: string[] = [];
    if (this.#cut > 0) notes.push(`[execgate: output file cut at ${this.#written} bytes; ${this.#cut} more bytes were discarded]`);
    if (trailer) notes.push(trailer);
    if (notes.length > 0) writeSync(this.#fd, `\n${notes.join('\n')}\n`);
    closeSync(this.#fd);
    return this.path;
  }
}
