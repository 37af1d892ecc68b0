/*
 * Streams the lines of a set of audit files in bounded memory: one read buffer per file and at
 * most one line carried between reads. A line longer than the cap is not buffered; it is
 * reported as overlong (a writer never produces one) and skipped to its end.
 */
import { createReadStream } from 'node:fs';

/** Longer than any line a writer produces (records are kept under 512 KiB). */
export const MAX_LINE_BYTES = 2 * 1024 * 1024;
const READ_CHUNK = 1024 * 1024;

export interface AuditLine {
  readonly file: string;
  /** 1-based line number in `file`. */
  readonly line: number;
  /** Byte offset of the line in `file`. */
  readonly offset: number;
  /** The line without its newline (empty for an overlong line). */
  readonly bytes: Buffer;
  /** Byte length of the line as stored (without the newline). */
  readonly length: number;
  /** False for a last line with no newline: the file ends in the middle of it. */
  readonly terminated: boolean;
  /** True when the line exceeded MAX_LINE_BYTES and was skipped. */
  readonly overlong: boolean;
}

/** The lines of one file, in batches (one per read). */
export async function* readFileLines(file: string): AsyncGenerator<AuditLine[]> {
  let carry: Buffer | undefined;
  let carryOffset = 0;
  let overlong = false;
  let overlongLength = 0;
  let lineNumber = 0;
  let position = 0;
  const stream = createReadStream(file, { highWaterMark: READ_CHUNK });
  for await (const data of stream) {
    const chunk = data as Buffer;
    const batch: AuditLine[] = [];
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      if (newline < 0) break;
      lineNumber++;
      if (overlong) {
        batch.push({ file, line: lineNumber, offset: carryOffset, bytes: Buffer.alloc(0), length: overlongLength + newline - start, terminated: true, overlong: true });
        overlong = false;
      } else if (carry !== undefined) {
        const bytes = Buffer.concat([carry, chunk.subarray(start, newline)]);
        batch.push({ file, line: lineNumber, offset: carryOffset, bytes, length: bytes.length, terminated: true, overlong: false });
      } else {
        batch.push({ file, line: lineNumber, offset: position + start, bytes: chunk.subarray(start, newline), length: newline - start, terminated: true, overlong: false });
      }
      carry = undefined;
      start = newline + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (overlong) {
        overlongLength += rest.length;
      } else {
        if (carry === undefined) carryOffset = position + start;
        const length = (carry?.length ?? 0) + rest.length;
        if (length > MAX_LINE_BYTES) {
          overlong = true;
          overlongLength = length;
          carry = undefined;
        } else {
          carry = carry === undefined ? Buffer.from(rest) : Buffer.concat([carry, rest]);
        }
      }
    }
    position += chunk.length;
    if (batch.length > 0) yield batch;
  }
  if (overlong) {
    yield [{ file, line: lineNumber + 1, offset: carryOffset, bytes: Buffer.alloc(0), length: overlongLength, terminated: false, overlong: true }];
  } else if (carry !== undefined) {
    yield [{ file, line: lineNumber + 1, offset: carryOffset, bytes: carry, length: carry.length, terminated: false, overlong: false }];
  }
}

/** The lines of several files, in order, in batches. */
export async function* readAuditBatches(files: readonly string[]): AsyncGenerator<AuditLine[]> {
  for (const file of files) yield* readFileLines(file);
}

/** The lines of several files, one at a time. */
export async function* readAuditLines(files: readonly string[]): AsyncGenerator<AuditLine> {
  for await (const batch of readAuditBatches(files)) yield* batch;
}
