/*
 * Where a stream must start holding bytes back (Matcher#holdStart): hashes of every proper prefix
 * of every pattern, so that a buffer's tail is held only while it could still become a pattern.
 * Apart from the scan (matcher.ts) because it reads only the tail of each chunk, once per chunk,
 * with hashes of its own; the scan never consults it.
 */

import { KeySet } from './tables';

const LF = 0x0a;
const CR = 0x0d;

/** Proper prefixes of the patterns, raw and (for the line-tolerant ones) with line breaks left out. */
export class PrefixIndex {
  readonly #maxLength: number;
  // Hashes of every proper prefix of every pattern, keyed with the prefix length (see holdStart);
  // the same for the line-tolerant patterns alone (see holdJoined).
  readonly #prefixes = new KeySet();
  readonly #tolerantPrefixes = new KeySet();
  #maxTolerantLength = 0;

  /** `tolerant[index]` is 1 for a line-tolerant pattern (see matcher.ts). */
  constructor(patterns: readonly Buffer[], tolerant: Uint8Array, maxLength: number) {
    this.#maxLength = maxLength;
    patterns.forEach((pattern, index) => {
      if (tolerant[index] === 1 && pattern.length > this.#maxTolerantLength) this.#maxTolerantLength = pattern.length;
      let hash = 0;
      for (let length = 1; length < pattern.length; length++) {
        hash = prefixStep(hash, pattern[length - 1]);
        this.#prefixes.add(prefixKey(hash, length));
        if (tolerant[index] === 1) this.#tolerantPrefixes.add(prefixKey(hash, length));
      }
    });
    this.#prefixes.seal();
    this.#tolerantPrefixes.seal();
  }

  /** The leftmost position whose suffix of `buffer` may begin a pattern (Matcher#holdStart says why). */
  holdStart(buffer: Buffer): number {
    return Math.min(this.#holdRaw(buffer), this.#holdJoined(buffer));
  }

  #holdRaw(buffer: Buffer): number {
    const length = buffer.length;
    if (this.#prefixes.size === 0) return length;
    const from = Math.max(0, length - this.#maxLength + 1);
    const prefixes = this.#prefixes;
    // Polynomial hashes, so each suffix's hash extends the next one's by one byte at the front:
    // H(b[p..n)) = b[p] * B^(n-1-p) + H(b[p+1..n)). One pass from the end; the leftmost hit wins.
    let hash = 0;
    let power = 1;
    let hold = length;
    for (let start = length - 1; start >= from; start--) {
      hash = (hash + Math.imul(buffer[start], power)) | 0;
      power = Math.imul(power, PREFIX_BASE);
      const key = prefixKey(hash, length - start);
      if (prefixes.mayHave(key) && prefixes.has(key)) hold = start;
    }
    return hold;
  }

  /**
   * The same for line-tolerant patterns read with the buffer's line breaks left out: where a
   * suffix of the buffer, breaks skipped, is a proper prefix of one. Only a tail that holds a
   * break can differ from the raw reading, so a buffer without one near its end costs one search.
   */
  #holdJoined(buffer: Buffer): number {
    const length = buffer.length;
    const prefixes = this.#tolerantPrefixes;
    if (prefixes.size === 0) return length;
    const from = Math.max(0, length - this.#maxTolerantLength + 1);
    // Only the tail is searched (lastIndexOf would read a buffer without breaks to its start).
    let broken = false;
    for (let at = length - 1; at >= from && !broken; at--) broken = buffer[at] === LF || buffer[at] === CR;
    if (!broken) return length;
    let hash = 0;
    let power = 1;
    let characters = 0;
    let hold = length;
    for (let start = length - 1; start >= 0 && characters < this.#maxTolerantLength - 1; start--) {
      const byte = buffer[start];
      if (byte === LF || byte === CR) continue;
      hash = (hash + Math.imul(byte, power)) | 0;
      power = Math.imul(power, PREFIX_BASE);
      characters++;
      const key = prefixKey(hash, characters);
      if (prefixes.mayHave(key) && prefixes.has(key)) hold = start;
    }
    return hold;
  }
}

const PREFIX_BASE = 0x01000193;

function prefixStep(hash: number, byte: number): number {
  return (Math.imul(hash, PREFIX_BASE) + byte) | 0;
}

function prefixKey(hash: number, length: number): number {
  return (Math.imul(hash, 0x2545f491) ^ Math.imul(length, 0x9e3779b1)) | 0;
}
