/*
 * Which words of each pattern the scan looks up, and how far apart its samples are (see the
 * header of matcher.ts for why): the stride, the windows at each offset, the shapes a window
 * takes when a line break falls inside it, and the order candidates are verified in. Chosen once
 * per pattern set, apart from the scan, which only reads what is built here.
 */

import type { PairOrder } from './tables';

const LF = 0x0a;
const CR = 0x0d;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

// A pattern of this length contains a whole aligned word wherever it starts.
export const MIN_WINDOWED_LENGTH = 7;
// At most 32 bytes between sampled words: past that the windows per pattern (4 * stride) grow
// faster than the scan shrinks.
const MAX_STRIDE = 8;
// Windows (pattern x offset) the stride may grow to; beyond this a longer stride would fill the
// bitmap (capped at 2^22 bits) and make false hits common. 2^17 kept 1,000 secrets (16,000
// patterns) at a stride of two words; since the short spellings are scanned apart from the long
// ones (layers.ts), the long ones of 1,000 secrets (about 11,600 patterns) keep the longest
// stride within 2^19.
const WINDOW_BUDGET = 1 << 19;
// Wrapped words (11 per line-tolerant window) registered instead of reading samples joined, at
// most this many: one secret's base64 spellings need about 1,800 at the longest stride; measured
// with bench/redact.js, registering them is faster up to a few dozen secrets.
export const VARIANT_BUDGET = 1 << 15;

/*
 * The words a window's first characters make with a line break among them (lines of 4 or more
 * characters hold at most one break in any 4 bytes: LF, CRLF or CR CR LF): each shape lists what stands at the word's
 * 4 places, a character of the window (its index) or a break byte.
 */
export const WRAPPED_SHAPES: ReadonlyArray<readonly number[]> = [
  [-LF, 0, 1, 2], [0, -LF, 1, 2], [0, 1, -LF, 2], [0, 1, 2, -LF],
  [-CR, -LF, 0, 1], [0, -CR, -LF, 1], [0, 1, -CR, -LF],
  // a CRLF cut after its CR (the LF begins the next word: the first shape)
  [0, 1, 2, -CR],
  // CR CR LF: a CRLF written on a terminal, which turns its LF into CRLF (onlcr); cut after
  // either CR, the rest is one of the shapes above
  [-CR, -CR, -LF, 0], [0, -CR, -CR, -LF], [0, 1, -CR, -CR],
];

export function wrappedWord(pattern: Buffer, offset: number, shape: readonly number[]): number {
  const bytes = Buffer.alloc(4);
  shape.forEach((place, at) => { bytes[at] = place < 0 ? -place : pattern[offset + place]; });
  return readWord(bytes, 0);
}

/**
 * The longest stride every windowed pattern allows (4 * stride + 3 <= its length), within
 * MAX_STRIDE and the window budget.
 */
export function chooseStride(patterns: readonly Buffer[]): number {
  let shortest = Infinity;
  let windowed = 0;
  patterns.forEach((pattern) => {
    if (pattern.length < MIN_WINDOWED_LENGTH) return;
    windowed += 1;
    if (pattern.length < shortest) shortest = pattern.length;
  });
  if (windowed === 0) return 1;
  let stride = Math.min(MAX_STRIDE, Math.floor((shortest - 3) / 4));
  while (stride > 1 && windowed * 4 * stride > WINDOW_BUDGET) stride--;
  return stride;
}

/**
 * The order a word's (pattern, offset) pairs are tried in: by how far past the window the pattern
 * reaches, farthest first (the scan's early end relies on it), then by pattern and offset.
 */
export function byReach(patterns: readonly Buffer[]): PairOrder {
  return (pattern, offset, otherPattern, otherOffset) =>
    patterns[otherPattern].length - otherOffset - (patterns[pattern].length - offset) || pattern - otherPattern || offset - otherOffset;
}

/** The 4 bytes at `offset` as the platform's Int32Array would read them. */
export function readWord(bytes: Buffer, offset: number): number {
  return LITTLE_ENDIAN ? bytes.readInt32LE(offset) : bytes.readInt32BE(offset);
}
