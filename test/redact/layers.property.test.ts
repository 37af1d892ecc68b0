/*
 * A masker made of layers (a base built once and a top layer for the values added after it, see
 * src/redact/layers.ts) masks exactly what one matcher built from all the patterns masks: same
 * bytes out, same count, whatever was added when, however the stream was cut.
 */
import fc from 'fast-check';
import { getEncodedForms, Redactor } from '../../src/redact';
import { LayeredMatcher } from '../../src/redact/layers';
import { Matcher } from '../../src/redact/matcher';
import { createRegionState, endRegion, redactRange, type PatternMatcher } from '../../src/redact/regions';

// Few letters, so that patterns overlap, share prefixes and contain one another.
const letters = fc.constantFrom(...'abAB+/=\n'.split(''));
const pattern = fc.array(letters, { minLength: 1, maxLength: 48 }).map((chars) => Buffer.from(chars.join('')));

const scenario = fc
  .record({
    patterns: fc.uniqueArray(pattern, { minLength: 1, maxLength: 24, selector: (bytes) => bytes.toString('latin1') }),
    tolerantBits: fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
    // Where the patterns are cut into batches, each batch added after the previous was compiled.
    batchCuts: fc.array(fc.nat(), { maxLength: 5 }),
    limit: fc.integer({ min: 1, max: 30 }),
  })
  .chain((setup) =>
    fc.record({
      setup: fc.constant(setup),
      pieces: fc.array(fc.oneof(fc.constantFrom(...setup.patterns), pattern, fc.uint8Array({ maxLength: 12 }).map((bytes) => Buffer.from(bytes))), { maxLength: 14 }),
      cuts: fc.array(fc.nat(), { maxLength: 6 }),
    }),
  );

function redactWith(matcher: PatternMatcher, count: number, chunks: Buffer[]): { text: string; count: number } {
  const replacements = Array.from({ length: count }, (_, index) => Buffer.from(`[${index}]`));
  const compiled = { matcher, replacements };
  const state = createRegionState();
  const out: Buffer[] = [];
  let held = Buffer.alloc(0);
  for (const chunk of chunks) {
    const buffer = Buffer.concat([held, chunk]);
    const lastStart = matcher.holdStart(buffer) - 1;
    if (lastStart < 0) {
      held = buffer;
      continue;
    }
    out.push(redactRange(compiled, buffer, lastStart, state));
    held = buffer.subarray(lastStart + 1);
  }
  if (held.length > 0) out.push(redactRange(compiled, held, held.length - 1, state));
  endRegion(state);
  return { text: Buffer.concat(out).toString('latin1'), count: state.count };
}

function split(input: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (input.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let previous = 0;
  for (const point of [...points, input.length]) {
    chunks.push(input.subarray(previous, point));
    previous = point;
  }
  return chunks;
}

describe('a layered matcher masks what one matcher of all its patterns masks', () => {
  test('whatever batches the patterns came in, whatever the limit of the top layer, however the text is cut', () => {
    fc.assert(
      fc.property(scenario, ({ setup: { patterns, tolerantBits, batchCuts, limit }, pieces, cuts }) => {
        const tolerant = new Set(patterns.map((_, index) => index).filter((index) => tolerantBits[index]));
        const whole = new Matcher(patterns, tolerant);
        const ends = [...new Set(batchCuts.map((cut) => 1 + (cut % patterns.length)))].sort((a, b) => a - b);
        if (ends[ends.length - 1] !== patterns.length) ends.push(patterns.length);
        let layered = LayeredMatcher.build(patterns.slice(0, ends[0]), new Set([...tolerant].filter((index) => index < ends[0])));
        for (const end of ends.slice(1)) {
          layered = LayeredMatcher.extend(layered, patterns.slice(0, end), new Set([...tolerant].filter((index) => index < end)), limit);
          // The top layer never holds more than the limit; past it everything is one base again.
          expect(layered.count - layered.baseCount).toBeLessThanOrEqual(limit);
          expect(layered.layers).toBe(layered.count === layered.baseCount ? 1 : 2);
        }
        expect(layered.count).toBe(patterns.length);
        const input = Buffer.concat(pieces);
        const expected = redactWith(whole, patterns.length, [input]);
        expect(redactWith(layered, patterns.length, [input])).toEqual(expected);
        expect(redactWith(layered, patterns.length, split(input, cuts))).toEqual(expected);
      }),
      { numRuns: 400 },
    );
  });

  test('a pattern marked line-tolerant that holds a line break itself is matched as written, in a stream cut anywhere as in the whole text', () => {
    // The property above found it: `bBB+ab\n` tolerant, in `\0bBB+ab\n\na`, was masked in the
    // whole text (the first LF taken as a break, the second as its last character) and not at all
    // when the stream was cut between the two line feeds.
    const patterns = [Buffer.from('bBB+ab\n'), Buffer.from('x\r\nyzwvu')];
    const tolerant = new Set([0, 1]);
    const input = Buffer.from('\0bBB+ab\n\na x\r\nyzwvu x\r\ny\nzwvu');
    const whole = redactWith(new Matcher(patterns, tolerant), 2, [input]);
    expect(whole).toEqual({ text: '\0[0]\na [1] x\r\ny\nzwvu', count: 2 });
    const layered = LayeredMatcher.build(patterns, tolerant);
    for (let cut = 0; cut <= input.length; cut++) expect(redactWith(layered, 2, split(input, [cut]))).toEqual(whole);
  });

  test('a layer of many patterns scans its short and its long spellings apart, and masks what one matcher masks', () => {
    // Enough patterns for the split (layers.ts), short and long ones sharing letters and prefixes.
    const ofLength = (min: number, max: number) => fc.integer({ min, max }).chain((length) => fc.array(letters, { minLength: length, maxLength: length })).map((chars) => Buffer.from(chars.join('')));
    const many = fc
      .tuple(fc.uniqueArray(ofLength(7, 34), { minLength: 40, maxLength: 60, selector: (bytes) => bytes.toString('latin1') }), fc.uniqueArray(ofLength(35, 70), { minLength: 480, maxLength: 500, selector: (bytes) => bytes.toString('latin1') }))
      .chain(([short, long]) => fc.shuffledSubarray([...short, ...long], { minLength: short.length + long.length }));
    fc.assert(
      fc.property(
        many.chain((patterns) =>
          fc.record({
            patterns: fc.constant(patterns),
            tolerantBits: fc.array(fc.boolean(), { minLength: patterns.length, maxLength: patterns.length }),
            pieces: fc.array(fc.oneof(fc.constantFrom(...patterns), fc.uint8Array({ maxLength: 12 }).map((bytes) => Buffer.from(bytes))), { maxLength: 20 }),
            cuts: fc.array(fc.nat(), { maxLength: 6 }),
          }),
        ),
        ({ patterns, tolerantBits, pieces, cuts }) => {
          const tolerant = new Set(patterns.map((_, index) => index).filter((index) => tolerantBits[index]));
          const layered = LayeredMatcher.build(patterns, tolerant);
          expect(layered.parts).toBe(2);
          const input = Buffer.concat(pieces);
          const expected = redactWith(new Matcher(patterns, tolerant), patterns.length, [input]);
          expect(redactWith(layered, patterns.length, split(input, cuts))).toEqual(expected);
        },
      ),
      { numRuns: 25, endOnFailure: true },
    );
  });

  test('a value added after the first redaction lands in a top layer, and a value that already has a pattern changes nothing built', () => {
    const redactor = new Redactor();
    redactor.add('first-secret-value-0123456789', 'secret:a');
    expect(redactor.redactString('x first-secret-value-0123456789 y').text).toBe('x [REDACTED:secret:a] y');
    redactor.add('second-secret-value-abcdefghij', 'secret:b');
    const both = 'first-secret-value-0123456789 and second-secret-value-abcdefghij';
    expect(redactor.redactString(both).text).toBe('[REDACTED:secret:a] and [REDACTED:secret:b]');
    expect(redactor.redactString(Buffer.from('second-secret-value-abcdefghij').toString('base64')).text).toBe('[REDACTED:secret:b]');
  });

  test('values added one at a time, with redaction in between, mask what the same values added at once mask', () => {
    const value = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_+/]{8,40}$/), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 24 }));
    fc.assert(
      fc.property(fc.array(value, { minLength: 2, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 8 }), (values, picks) => {
        const incremental = new Redactor();
        const atOnce = new Redactor();
        values.forEach((secret, index) => atOnce.add(secret, `secret:s${index}`));
        const texts = picks.map((pick) => {
          const forms = getEncodedForms(values[pick % values.length], { minLength: 8, encodings: true });
          return `<${forms[pick % forms.length].text}>`;
        });
        const text = `${texts.join(' ')} ${values.join('|')}`;
        values.forEach((secret, index) => {
          incremental.add(secret, `secret:s${index}`);
          incremental.redactString(text);
        });
        expect(incremental.redactString(text)).toEqual(atOnce.redactString(text));
      }),
      { numRuns: 150 },
    );
  });
});
