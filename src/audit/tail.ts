/*
 * Finding where a chain left off by reading the end of its file, so chain state needs no
 * separate store and survives restarts, rotation and crashes.
 *
 * Crash policy. A record is one write(2) of the whole line; it is acknowledged only when that
 * write returned. A crash (or a full disk) can therefore leave, at worst, an unterminated piece
 * of one unacknowledged record at the end of the file. Whatever follows the last intact record
 * and is not a record itself (an unterminated line, or lines that are not JSON records) is
 * "leftover": the next writer does not build on it. It ends the leftover with a newline if
 * needed and writes a `chain.resumed` record linked to the last intact record, whose
 * `recovered: {offset, bytes}` names exactly the byte range it set aside. `verify` accepts a
 * leftover only when such a record names it, and reports it as a note; anywhere else (a file
 * cut mid-record and never resumed, junk in the middle) it is a break.
 *
 * A last record that has the shape of a record but fails its MAC is never set aside as
 * leftover (that would bless an edit): the writer refuses to extend the chain.
 */
import { readSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { ExecgateError } from '../errors';
import { parseChainLine, type ChainState } from './chain';

const FIRST_WINDOW = 64 * 1024;
/** Leftover larger than this is not a crash remnant: the writer refuses to go on. */
export const MAX_TAIL_WINDOW = 4 * 1024 * 1024;

export interface Leftover {
  /** Byte offset of the first leftover byte. */
  readonly offset: number;
  /** Leftover bytes up to the end of the file. */
  readonly bytes: number;
  /** Whether the file currently ends with a newline. */
  readonly terminated: boolean;
}

export type TailState =
  | { readonly kind: 'empty' }
  | { readonly kind: 'record'; readonly state: ChainState; readonly leftover?: Leftover }
  | { readonly kind: 'no-record'; readonly leftover: Leftover };

function readRange(fd: number, start: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const read = readSync(fd, buffer, done, length - done, start + done);
    if (read === 0) break;
    done += read;
  }
  return buffer.subarray(0, done);
}

function tailInvalid(path: string, why: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_AUDIT_TAIL_INVALID',
    `The audit log \`${path}\` cannot be extended: ${why}. Run \`execgate audit verify\` to see what changed; restore the audit key the log was written under, or move the log files aside to start a new chain.`,
    { path },
  );
}

function scan(path: string, key: KeyObject, buffer: Buffer, base: number, size: number): TailState | 'more' {
  const terminated = buffer[buffer.length - 1] === 0x0a;
  let end = terminated ? buffer.length - 1 : buffer.length;
  let leftoverStart: number | undefined;
  for (;;) {
    const newline = end === 0 ? -1 : buffer.lastIndexOf(0x0a, end - 1);
    const start = newline + 1;
    if (newline < 0 && base > 0) return 'more';
    const isTerminated = end < buffer.length;
    if (isTerminated) {
      const parsed = parseChainLine(key, buffer.subarray(start, end));
      if (parsed.ok) {
        if (!parsed.macOk) {
          throw tailInvalid(path, `its last record (seq ${parsed.record.seq}, at byte ${base + start}) does not verify under the audit key: it was edited, or written under another key`);
        }
        const state = { seq: parsed.record.seq, hash: parsed.record.hash };
        if (leftoverStart === undefined) return { kind: 'record', state };
        return { kind: 'record', state, leftover: { offset: base + leftoverStart, bytes: size - (base + leftoverStart), terminated } };
      }
    }
    leftoverStart = start;
    if (newline < 0) return { kind: 'no-record', leftover: { offset: 0, bytes: size, terminated } };
    end = newline;
  }
}

/** Where the chain in the file open as `fd` (of `size` bytes) left off. */
export function readTail(path: string, fd: number, size: number, key: KeyObject): TailState {
  if (size === 0) return { kind: 'empty' };
  for (const window of [FIRST_WINDOW, MAX_TAIL_WINDOW]) {
    const length = Math.min(size, window);
    const result = scan(path, key, readRange(fd, size - length, length), size - length, size);
    if (result !== 'more') return result;
    if (length === size) break;
  }
  throw tailInvalid(path, `more than ${MAX_TAIL_WINDOW} bytes at its end are not audit records`);
}
