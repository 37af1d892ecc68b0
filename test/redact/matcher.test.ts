import fc from 'fast-check';
import { Matcher } from '../../src/redact/matcher';

interface Run {
  start: number;
  end: number;
  pattern: number;
  patternEnd: number;
}

/** Every occurrence of every pattern, by brute force. */
function naiveOccurrences(buffer: Buffer, patterns: Buffer[], lastStart: number): Run[] {
  const matches: Run[] = [];
  patterns.forEach((bytes, pattern) => {
    if (bytes.length === 0) return;
    for (let start = 0; start <= Math.min(lastStart, buffer.length - bytes.length); start++) {
      const end = start + bytes.length;
      if (buffer.subarray(start, end).equals(bytes)) matches.push({ start, end, pattern, patternEnd: end });
    }
  });
  return matches;
}

/** What redaction sees: maximal runs of touching occurrences, each with the longest pattern at its start. */
function regionsOf(runs: Run[]): Array<{ start: number; end: number; pattern: number }> {
  const sorted = [...runs].sort((a, b) => a.start - b.start || b.patternEnd - a.patternEnd || a.pattern - b.pattern);
  const regions: Array<{ start: number; end: number; pattern: number }> = [];
  for (const run of sorted) {
    const last = regions[regions.length - 1];
    if (last !== undefined && run.start <= last.end) last.end = Math.max(last.end, run.end);
    else regions.push({ start: run.start, end: run.end, pattern: run.pattern });
  }
  return regions;
}

function expectSameCover(buffer: Buffer, patterns: Buffer[], lastStart: number): void {
  const cover = new Matcher(patterns).findCover(buffer, lastStart);
  expect(regionsOf(cover)).toEqual(regionsOf(naiveOccurrences(buffer, patterns, lastStart)));
  // Sorted, and each run names a pattern that really occurs at its start.
  cover.forEach((run, index) => {
    expect(buffer.subarray(run.start, run.patternEnd).equals(patterns[run.pattern]!)).toBe(true);
    expect(run.end).toBeGreaterThanOrEqual(run.patternEnd);
    if (index > 0) expect(run.start).toBeGreaterThanOrEqual(cover[index - 1]!.start);
  });
}

// A small alphabet makes overlaps, repeats and shared prefixes common.
const smallBytes = (maxLength: number) => fc.uint8Array({ minLength: 0, maxLength }).map((bytes) => Buffer.from(bytes.map((byte) => 97 + (byte % 3))));
const anyBytes = (maxLength: number) => fc.uint8Array({ minLength: 0, maxLength }).map((bytes) => Buffer.from(bytes));

describe('Matcher', () => {
  test('covers exactly the occurrences brute force finds, at any memory alignment', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(smallBytes(12), anyBytes(20)), { minLength: 1, maxLength: 8 }),
        fc.array(fc.oneof(smallBytes(12), anyBytes(12), fc.nat()), { maxLength: 24 }),
        fc.nat(3),
        fc.nat(),
        (patterns, pieces, misalign, lastStartSeed) => {
          // Text built from filler and copies of the patterns, so that occurrences are common.
          const text = Buffer.concat(pieces.map((piece) => (typeof piece === 'number' ? patterns[piece % patterns.length]! : piece)));
          // Copy into a buffer whose byteOffset is not a multiple of 4, as pooled Buffers often are.
          const backing = Buffer.alloc(text.length + misalign);
          text.copy(backing, misalign);
          const buffer = backing.subarray(misalign);
          const lastStart = text.length === 0 ? 0 : lastStartSeed % (text.length + 1);
          expectSameCover(buffer, patterns, lastStart);
        },
      ),
      { numRuns: 1500 },
    );
  });

  test('patterns embedded in the text are all found', () => {
    fc.assert(
      fc.property(fc.array(anyBytes(40), { minLength: 1, maxLength: 6 }), fc.array(anyBytes(30), { maxLength: 8 }), (patterns, fillers) => {
        const parts: Buffer[] = [];
        fillers.forEach((filler, index) => parts.push(filler, patterns[index % patterns.length]!));
        const buffer = Buffer.concat(parts);
        expectSameCover(buffer, patterns, buffer.length - 1);
      }),
      { numRuns: 500 },
    );
  });

  test('maxLength is the longest pattern; an empty set finds nothing', () => {
    expect(new Matcher([Buffer.from('abc'), Buffer.from('abcdefghij')]).maxLength).toBe(10);
    expect(new Matcher([]).findCover(Buffer.from('anything at all'), 14)).toEqual([]);
    expect(new Matcher([Buffer.from('needle')]).findCover(Buffer.alloc(0), 0)).toEqual([]);
  });

  test('output repeating the bytes of a secret yields one run, not one entry per position', () => {
    const patterns = Array.from({ length: 20 }, (_, index) => Buffer.alloc(8 + index, 'a'));
    const cover = new Matcher(patterns).findCover(Buffer.alloc(65536, 'a'), 65536 - 1);
    expect(cover.length).toBeLessThan(64);
    expect(regionsOf(cover)).toEqual([{ start: 0, end: 65536, pattern: 19 }]);
  });
});
