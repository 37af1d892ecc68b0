/*
 * The output file of a background run: redacted bytes only, written synchronously as they
 * leave the redactor (so a reader never sees a value that a later chunk would have masked),
 * capped with a notice, plus reading by byte range for paging.
 */
import { closeSync, fstatSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { ExecgateError } from '../../errors';
import { getIncompleteTail } from '../output/utf8';
import type { OutputSlice } from './types';

export class OutputFile {
  readonly path: string;
  readonly #maxBytes: number;
  #fd: number | undefined;
  #written = 0;
  #cut = 0;

  constructor(path: string, maxBytes: number) {
    this.path = path;
    this.#maxBytes = maxBytes;
    this.#fd = openSync(path, 'wx', 0o600);
  }

  get bytesWritten(): number {
    return this.#written;
  }

  write(bytes: Buffer): void {
    if (this.#fd === undefined || bytes.length === 0) return;
    const room = this.#maxBytes - this.#written;
    const part = bytes.length > room ? bytes.subarray(0, Math.max(0, room)) : bytes;
    this.#writeAll(part);
    this.#cut += bytes.length - part.length;
  }

  #writeAll(bytes: Buffer): void {
    let offset = 0;
    while (offset < bytes.length) offset += writeSync(this.#fd as number, bytes, offset, bytes.length - offset);
    this.#written += bytes.length;
  }

  /** Append the closing lines (not counted against the cap) and close. */
  close(lines: string[]): void {
    if (this.#fd === undefined) return;
    const notes = [...lines];
    if (this.#cut > 0) notes.unshift(`[execgate: output file cut at ${this.#maxBytes} bytes; ${this.#cut} more bytes were discarded]`);
    if (notes.length > 0) this.#writeAll(Buffer.from(`\n${notes.join('\n')}\n`));
    closeSync(this.#fd);
    this.#fd = undefined;
  }
}

const DEFAULT_PAGE = 64 * 1024;
const DEFAULT_TAIL = 4 * 1024;
const MAX_READ = 1024 * 1024;

export function readOutputSlice(path: string, options: { offset?: number; length?: number; ended: boolean }): OutputSlice {
  let totalBytes = 0;
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
