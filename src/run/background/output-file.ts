/*
 * The output file of a background run: redacted bytes only, written synchronously as they
 * leave the redactor (so a reader never sees a value that a later chunk would have masked),
 * capped with a notice, plus reading by byte range for paging.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { ExecgateError } from '../../errors';
import { getIncompleteTail } from '../output/utf8';
import type { OutputSlice } from './types';

export class OutputFile {
  readonly path: string;
  readonly #maxBytes: number;
  #fd: number | undefined;
  #written = 0;
  #cut = 0;
  /** Bytes that could not be written (a full disk), since the last write that could, and why. */
  #lost = 0;
  #lostTotal = 0;
  #failure: string | undefined;

  /** Throws EXECGATE_ERR_BACKGROUND_IO when the file cannot be created (nothing is started then). */
  constructor(path: string, maxBytes: number) {
    this.path = path;
    this.#maxBytes = maxBytes;
    try {
      this.#fd = openSync(path, 'wx', 0o600);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new ExecgateError(
        'EXECGATE_ERR_BACKGROUND_IO',
        `Cannot create the output file \`${path}\` of a background process (${code}). Nothing was started; free some space in the state directory and start it again.`,
        { path, errno: code },
        { cause: error },
      );
    }
  }

  get bytesWritten(): number {
    return this.#written;
  }

  /** What could not be written, in words, or undefined when everything was. */
  get notice(): string | undefined {
    if (this.#lostTotal === 0) return undefined;
    return `${this.#lostTotal} bytes of output could not be written to the output file (${this.#failure}) and are missing from it`;
  }

  /**
   * Append redacted bytes. Never throws: it runs in the run's output handler. Bytes that cannot
   * be written are counted, and the first write that works again starts with a line saying how
   * many are missing, so a reader of the file sees the gap where it is.
   */
  write(bytes: Buffer): void {
    if (this.#fd === undefined || bytes.length === 0) return;
    const room = this.#maxBytes - this.#written;
    const part = bytes.length > room ? bytes.subarray(0, Math.max(0, room)) : bytes;
    this.#cut += bytes.length - part.length;
    if (part.length === 0) return;
    if (this.#lost > 0 && !this.#tryWrite(Buffer.from(`\n[execgate: ${this.#lost} bytes of output could not be written here (${this.#failure})]\n`), false)) {
      this.#lose(part.length);
      return;
    }
    this.#lost = 0;
    if (!this.#tryWrite(part, true)) this.#lose(part.length);
  }

  #lose(bytes: number): void {
    this.#lost += bytes;
    this.#lostTotal += bytes;
  }

  /** Write all of `bytes` or none (what a short write left is cut off again). */
  #tryWrite(bytes: Buffer, counted: boolean): boolean {
    const fd = this.#fd as number;
    let offset = 0;
    try {
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      this.#failure = (error as NodeJS.ErrnoException).code ?? String(error);
      if (offset > 0) {
        try {
          ftruncateSync(fd, fstatSync(fd).size - offset);
        } catch { /* the gap notice still follows */ }
      }
      return false;
    }
    if (counted) this.#written += bytes.length;
    return true;
  }

  /** Append the closing lines (not counted against the cap) and close. False when they could not be written. */
  close(lines: string[]): boolean {
    if (this.#fd === undefined) return true;
    const notes = [...lines];
    if (this.#lostTotal > 0) notes.unshift(`[execgate: ${this.notice}]`);
    if (this.#cut > 0) notes.unshift(`[execgate: output file cut at ${this.#maxBytes} bytes; ${this.#cut} more bytes were discarded]`);
    const written = notes.length === 0 || this.#tryWrite(Buffer.from(`\n${notes.join('\n')}\n`), false);
    closeSync(this.#fd);
    this.#fd = undefined;
    return written;
  }
}

const DEFAULT_PAGE = 64 * 1024;
const DEFAULT_TAIL = 4 * 1024;
const MAX_READ = 1024 * 1024;

export function readOutputSlice(path: string, options: { offset?: number; length?: number; ended: boolean }): OutputSlice {
  let totalBytes: number;
  try {
    totalBytes = statSync(path).size;
  } catch {
    return { text: '', offset: 0, nextOffset: 0, totalBytes: 0, eof: options.ended };
  }
  const tail = options.offset === undefined;
  const length = Math.min(MAX_READ, Math.max(1, Math.floor(options.length ?? (tail ? DEFAULT_TAIL : DEFAULT_PAGE))));
  let offset = tail ? Math.max(0, totalBytes - length) : Math.floor(options.offset as number);
  if (!Number.isFinite(offset) || offset < 0) {
    throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected \`offset\` to be a non-negative integer, got ${String(options.offset)}.`, { option: 'offset' });
  }
  offset = Math.min(offset, totalBytes);
  const fd = openSync(path, 'r');
  try {
    const size = Math.min(length, fstatSync(fd).size - offset);
    const buffer = Buffer.alloc(Math.max(0, size));
    const read = size > 0 ? readSync(fd, buffer, 0, size, offset) : 0;
    let bytes = buffer.subarray(0, read);
    const atEnd = offset + read >= totalBytes;
    if (!(atEnd && options.ended)) bytes = bytes.subarray(0, bytes.length - getIncompleteTail(bytes));
    const nextOffset = offset + bytes.length;
    return { text: bytes.toString('utf8'), offset, nextOffset, totalBytes, eof: options.ended && nextOffset >= totalBytes };
  } finally {
    closeSync(fd);
  }
}
