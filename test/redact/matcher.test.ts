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
const smallBytes = (maxLength: number, minLength = 0) => fc.uint8Array({ minLength, maxLength }).map((bytes) => Buffer.from(bytes.map((byte) => 97 + (byte % 3))));
const anyBytes = (maxLength: number, minLength = 0) => fc.uint8Array({ minLength, maxLength }).map((bytes) => Buffer.from(bytes));

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

/** The leftmost position whose suffix is a proper prefix of some pattern, by brute force. */
function naiveHoldStart(buffer: Buffer, patterns: Buffer[]): number {
  for (let start = 0; start < buffer.length; start++) {
    const suffix = buffer.subarray(start);
    if (patterns.some((pattern) => pattern.length > suffix.length && pattern.subarray(0, suffix.length).equals(suffix))) return start;
  }
  return buffer.length;
}

/** `text` copied to a buffer whose byteOffset is `misalign` past a multiple of 4. */
function misaligned(text: Buffer, misalign: number): Buffer {
  const backing = Buffer.alloc(text.length + misalign);
  text.copy(backing, misalign);
  return backing.subarray(misalign);
}

// Long patterns make the scan sample one word in up to 32 bytes; these are built to be hard for
// that: prefixes of one another, runs of one repeated first byte, every byte value 0x00-0xff.
const longPatterns = fc.oneof(
  // Prefixes (and extensions) of one base: every occurrence of a longer one holds the shorter ones.
  fc.tuple(anyBytes(140, 40), fc.array(fc.integer({ min: 35, max: 140 }), { minLength: 1, maxLength: 5 }))
    .map(([base, lengths]) => lengths.map((length) => base.subarray(0, Math.min(length, base.length)))),
  // The same first bytes again and again, then a tail: words at every stride offset collide.
  fc.array(fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 20, max: 60 }), anyBytes(40)), { minLength: 1, maxLength: 5 })
    .map((specs) => specs.map(([byte, run, tail]) => Buffer.concat([Buffer.alloc(run, byte), tail]))),
  fc.array(fc.oneof(anyBytes(120, 35), smallBytes(90, 35)), { minLength: 1, maxLength: 6 }),
);

describe('Matcher with long patterns (a stride of more than one word)', () => {
  test('the stride grows with the shortest pattern, up to 8 words, and shrinks for a short one', () => {
    expect(new Matcher([Buffer.alloc(35, 'q')]).stride).toBe(8);
    expect(new Matcher([Buffer.alloc(35, 'q'), Buffer.alloc(19, 'r')]).stride).toBe(4);
    expect(new Matcher([Buffer.alloc(200, 'q'), Buffer.alloc(8, 'r')]).stride).toBe(1);
    expect(new Matcher([Buffer.alloc(200, 'q'), Buffer.alloc(3, 'r')]).stride).toBe(8);
  });

  test('covers exactly the occurrences brute force finds: any alignment, any lastStart, any bytes', () => {
    fc.assert(
      fc.property(
        longPatterns,
        fc.array(fc.oneof(anyBytes(70), smallBytes(40), fc.nat(), fc.tuple(fc.nat(), fc.nat())), { maxLength: 16 }),
        fc.nat(3),
        fc.nat(),
        (patterns, pieces, misalign, lastStartSeed) => {
          expect(new Matcher(patterns).stride).toBeGreaterThan(1);
          // Whole copies, and copies cut short (a prefix that must not match), between filler.
          const text = Buffer.concat(pieces.map((piece) => {
            if (typeof piece === 'number') return patterns[piece % patterns.length]!;
            if (Array.isArray(piece)) {
              const pattern = patterns[piece[0] % patterns.length]!;
              return pattern.subarray(0, piece[1] % pattern.length);
            }
            return piece;
          }));
          const lastStart = text.length === 0 ? 0 : lastStartSeed % (text.length + 1);
          expectSameCover(misaligned(text, misalign), patterns, lastStart);
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('an occurrence at every offset from the start and the end of the buffer, and every lastStart around it', () => {
    const pattern = Buffer.from(Array.from({ length: 37 }, (_, index) => (index * 89 + 7) & 0xff));
    const prefix = pattern.subarray(0, 36);
    const patterns = [pattern, prefix];
    expect(new Matcher(patterns).stride).toBe(8);
    for (let before = 0; before < 36; before++) {
      for (const after of [0, 1, 2, 3, 5, 31, 33]) {
        const text = Buffer.concat([Buffer.alloc(before, 0x00), pattern, Buffer.alloc(after, 0xff)]);
        for (const misalign of [0, 1, 2, 3]) {
          for (const lastStart of [before - 1, before, before + 1, text.length - 1]) {
            if (lastStart >= 0) expectSameCover(misaligned(text, misalign), patterns, lastStart);
          }
        }
      }
    }
  });

  test('output repeating a secret\'s first bytes is still one run, and nothing is missed', () => {
    const patterns = Array.from({ length: 6 }, (_, index) => Buffer.concat([Buffer.alloc(40 + index, 'a'), Buffer.from('Z')]));
    const text = Buffer.concat([Buffer.alloc(65536, 'a'), Buffer.from('Z'), Buffer.alloc(100, 'a')]);
    const cover = new Matcher(patterns).findCover(text, text.length - 1);
    expect(regionsOf(cover)).toEqual([{ start: 65536 - 45, end: 65537, pattern: 5 }]);
    expectSameCover(text, patterns, text.length - 1);
  });
});

describe('Matcher#holdStart', () => {
  test('is the leftmost suffix that is a proper prefix of some pattern, for any bytes and patterns', () => {
    fc.assert(
      fc.property(
        fc.oneof(longPatterns, fc.array(fc.oneof(smallBytes(12), anyBytes(20)), { minLength: 1, maxLength: 8 })),
        fc.oneof(anyBytes(80), smallBytes(80)),
        fc.nat(),
        fc.nat(),
        (patterns, filler, which, cutSeed) => {
          // Often end the text with part of a pattern, so that something must be held.
          const pattern = patterns[which % patterns.length]!;
          const text = Buffer.concat([filler, pattern.subarray(0, cutSeed % (pattern.length + 1))]);
          expect(new Matcher(patterns).holdStart(text)).toBe(naiveHoldStart(text, patterns));
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('line-tolerant patterns (the base64 spellings, as wrapping encoders write them)', () => {
  /** Where `pattern` ends at `start` with LF or CRLF between characters and 4+ between breaks, or -1. */
  function endWrapped(buffer: Buffer, start: number, pattern: Buffer): number {
    let at = start;
    let line = -1;
    for (let index = 0; index < pattern.length; index++) {
      if (index > 0 && (buffer[at] === 10 || buffer[at] === 13)) {
        const eol = buffer[at] === 13 ? 2 : 1;
        if (buffer[at + eol - 1] !== 10 || (line >= 0 && line < 4)) return -1;
        at += eol;
        line = 0;
      }
      if (buffer[at] !== pattern[index]) return -1;
      at++;
      if (line >= 0) line++;
    }
    return at;
  }

  const base64ish = (min: number, max: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9+/]{${min},${max}}$`)).map((text) => Buffer.from(text));
  const wrap = (text: Buffer, width: number, first: number, eol: string): Buffer => {
    const chars = text.toString('latin1');
    let out = chars.slice(0, first);
    for (let at = first; at < chars.length; at += width) out += `${eol}${chars.slice(at, at + width)}`;
    return Buffer.from(out, 'latin1');
  };

  test('covers exactly the wrapped and unwrapped occurrences brute force finds, at any width from 4, any first line, any alignment', () => {
    fc.assert(
      fc.property(
        fc.array(base64ish(7, 60), { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 4, max: 80 }), fc.nat(), fc.constantFrom('\n', '\r\n'), base64ish(0, 12)), { minLength: 1, maxLength: 5 }),
        fc.nat(3),
        (patterns, placements, misalign) => {
          const text = Buffer.concat(placements.map(([which, width, first, eol, filler]) => {
            const pattern = patterns[which % patterns.length]!;
            return Buffer.concat([filler, wrap(pattern, width, 1 + (first % pattern.length), eol), Buffer.from(' ')]);
          }));
          const buffer = misaligned(text, misalign);
          const found = regionsOf(new Matcher(patterns, patterns.map((_, index) => index)).findCover(buffer, buffer.length - 1));
          const runs: Run[] = [];
          patterns.forEach((pattern, index) => {
            for (let start = 0; start < buffer.length; start++) {
              const end = endWrapped(buffer, start, pattern);
              if (end >= 0) runs.push({ start, end, pattern: index, patternEnd: end });
            }
          });
          expect(found.map(({ start, end }) => [start, end])).toEqual(regionsOf(runs).map(({ start, end }) => [start, end]));
          // Every placement is an occurrence: nothing the encoder wrote escapes.
          expect(found.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 800 },
    );
  });

  test('a pattern that is not line-tolerant does not match across a break', () => {
    const pattern = Buffer.from('QUJDREVGR0hJSktM');
    const wrapped = Buffer.from('QUJDREVG\nR0hJSktM');
    expect(new Matcher([pattern]).findCover(wrapped, wrapped.length - 1)).toEqual([]);
    expect(regionsOf(new Matcher([pattern], [0]).findCover(wrapped, wrapped.length - 1))).toEqual([{ start: 0, end: wrapped.length, pattern: 0 }]);
  });
});
