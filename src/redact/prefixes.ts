/*
 * Where a stream must start holding bytes back (Matcher#holdStart): a buffer's tail is held only
 * while it could still become a pattern, that is while some suffix of it is a proper prefix of a
 * pattern. Apart from the scan (matcher.ts) because it reads only the tail of each chunk, once per
 * chunk; the scan never consults it.
 *
 * The patterns are kept sorted (as latin1 strings, whose order is their bytes' order), so the
 * patterns that begin with a given suffix are a contiguous range that starts at the first pattern
 * not below it: one binary search answers "is this suffix a proper prefix of some pattern". In
 * front of it, an exact set of the patterns' first 4 bytes: most suffixes of a chunk's tail begin
 * no pattern and end at one probe. An index of every proper prefix of every pattern (the earlier
 * design: one hash per prefix) cost a hash-set insert per pattern byte, which was most of the
 * build time with many secrets (8 million prefixes with 10,000 secrets, seconds to build and tens
 * of MiB) and had to be rebuilt whenever a value was added.
 */

import { WordSet } from './tables';

const LF = 0x0a;
const CR = 0x0d;

/** A sorted set of patterns and their first words: answers whether a byte string begins one of them. */
class PrefixSet {
  readonly #sorted: string[];
  readonly #firstWords = new WordSet();
  // One bit per first two bytes of a pattern of 3 bytes or more (8 KiB): most positions of a tail end here.
  readonly #firstPairs = new Int32Array(2048);
  readonly maxLength: number;

  constructor(patterns: readonly Buffer[]) {
    this.#sorted = patterns.map((pattern) => pattern.toString('latin1'));
    // The default order compares UTF-16 code units; latin1 strings have one per byte.
    this.#sorted.sort();
    let maxLength = 0;
    for (const pattern of patterns) {
      if (pattern.length > maxLength) maxLength = pattern.length;
      if (pattern.length > 4) this.#firstWords.add(pattern.readInt32LE(0));
      if (pattern.length > 2) {
        const pair = pattern[0] | (pattern[1] << 8);
        this.#firstPairs[pair >>> 5] |= 1 << (pair & 31);
      }
    }
    this.maxLength = maxLength;
  }

  get size(): number {
    return this.#sorted.length;
  }

  /** True when `bytes[start..end)` is a proper prefix of some pattern. */
  beginsPattern(bytes: Buffer, start: number, end: number): boolean {
    const length = end - start;
    if (length >= 2) {
      const pair = bytes[start] | (bytes[start + 1] << 8);
      if ((this.#firstPairs[pair >>> 5] & (1 << (pair & 31))) === 0) return false;
    }
    if (length >= 4 && !this.#firstWords.has(bytes.readInt32LE(start))) return false;
    const prefix = bytes.toString('latin1', start, end);
    const sorted = this.#sorted;
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (sorted[middle] < prefix) low = middle + 1;
      else high = middle;
    }
    // The patterns that begin with `prefix` follow it in order; one equal to it is not a proper
    // continuation, the next one may be.
    while (low < sorted.length && sorted[low] === prefix) low++;
    return low < sorted.length && sorted[low].startsWith(prefix);
  }
}

/** Proper prefixes of the patterns, raw and (for the line-tolerant ones) with line breaks left out. */
export class PrefixIndex {
  readonly #all: PrefixSet;
  readonly #tolerant: PrefixSet;
  readonly #joined: Buffer;
  readonly #positions: Int32Array;

  /** `tolerant[index]` is 1 for a line-tolerant pattern (see matcher.ts). */
  constructor(patterns: readonly Buffer[], tolerant: Uint8Array) {
    this.#all = new PrefixSet(patterns);
    this.#tolerant = new PrefixSet(patterns.filter((_, index) => tolerant[index] === 1));
    this.#joined = Buffer.alloc(Math.max(0, this.#tolerant.maxLength - 1));
    this.#positions = new Int32Array(this.#joined.length);
  }

  /** The leftmost position whose suffix of `buffer` may begin a pattern (Matcher#holdStart says why). */
  holdStart(buffer: Buffer): number {
    return Math.min(this.#holdRaw(buffer), this.#holdJoined(buffer));
  }

  #holdRaw(buffer: Buffer): number {
    const length = buffer.length;
    const set = this.#all;
    if (set.size === 0) return length;
    // The leftmost hit wins: searched from the left, the first one found ends the search.
    for (let start = Math.max(0, length - set.maxLength + 1); start < length; start++) {
      if (set.beginsPattern(buffer, start, length)) return start;
    }
    return length;
  }

  /**
   * The same for line-tolerant patterns read with the buffer's line breaks left out: where a
   * suffix of the buffer, breaks skipped, is a proper prefix of one. Only a tail that holds a
   * break can differ from the raw reading, so a buffer without one near its end costs one search.
   */
  #holdJoined(buffer: Buffer): number {
    const length = buffer.length;
    const set = this.#tolerant;
    if (set.size === 0) return length;
    const from = Math.max(0, length - set.maxLength + 1);
    // Only the tail is searched (lastIndexOf would read a buffer without breaks to its start).
    let broken = false;
    for (let at = length - 1; at >= from && !broken; at--) broken = buffer[at] === LF || buffer[at] === CR;
    if (!broken) return length;
    // The tail's last maxLength - 1 characters with the breaks left out, and where each one was,
    // written from the end of buffers kept for it (no allocation per chunk).
    const joined = this.#joined;
    const positions = this.#positions;
    let first = joined.length;
    for (let at = length - 1; at >= 0 && first > 0; at--) {
      const byte = buffer[at];
      if (byte === LF || byte === CR) continue;
      first--;
      joined[first] = byte;
      positions[first] = at;
    }
    for (let index = first; index < joined.length; index++) {
      if (set.beginsPattern(joined, index, joined.length)) return positions[index];
    }
    return length;
  }
}
