/*
 * The two properties everything else rests on: streaming never changes the result, whatever the
 * chunking, and no registered spelling survives outside a replacement. Spellings also come with
 * line breaks in them, which the base64 ones must match across and the others must not.
 */
import fc from 'fast-check';
import { getEncodedForms, Redactor } from '../../src/redact';
import { findLeaks } from '../helpers/leak';
import { referenceRedact, type Registration } from './reference';

const awkwardChar = fc.constantFrom(...'\'"$()`\\\n\r\t {}[]|&;<>*?!#~=%+/:,é中😀\u0000\u001b'.split(''), 'a', 'b', 'Z', '7');
const awkwardValue = fc.oneof(
  fc.array(awkwardChar, { minLength: 1, maxLength: 24 }).map((chars) => chars.join('')),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
  fc.stringMatching(/^[A-Za-z0-9_]{8,40}$/),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 30 }),
);

/** Registered values plus a text of random bytes interleaved with spellings of those values. */
const scenario = fc
  .array(awkwardValue, { minLength: 1, maxLength: 4 })
  .chain((values) =>
    fc.record({
      values: fc.constant(values),
      encodings: fc.array(fc.boolean(), { minLength: values.length, maxLength: values.length }),
      pieces: fc.array(
        fc.oneof(
          fc.uint8Array({ maxLength: 24 }).map((bytes) => Buffer.from(bytes)),
          fc.constantFrom(...values).chain((value) => fc.constantFrom(...getEncodedForms(value, { minLength: 8, encodings: true }))).map(({ text }) => Buffer.from(text, 'utf8')),
          fc.string({ unit: 'grapheme-ascii', maxLength: 10 }).map((text) => Buffer.from(text)),
          // A spelling with line breaks in it, as a wrapping encoder writes base64 (the others must not match).
          fc.tuple(fc.constantFrom(...values).chain((value) => fc.constantFrom(...getEncodedForms(value, { minLength: 8, encodings: true }))), fc.integer({ min: 1, max: 9 }), fc.constantFrom('\n', '\r\n', '\r'))
            .map(([{ text }, width, eol]) => Buffer.from(text.replace(new RegExp(`.{${width}}`, 'g'), `$&${eol}`), 'utf8')),
        ),
        { maxLength: 12 },
      ),
      cuts: fc.array(fc.nat(), { maxLength: 10 }),
    }),
  );

function build({ values, encodings }: { values: string[]; encodings: boolean[] }): { redactor: Redactor; registrations: Registration[] } {
  const registrations = values.map((value, index) => ({ value, label: `secret:s${index}`, encodings: encodings[index] }));
  const redactor = new Redactor();
  for (const { value, label, encodings: withEncodings } of registrations) redactor.add(value, label, { encodings: withEncodings });
  return { redactor, registrations };
}

function streamThrough(redactor: Redactor, chunks: Buffer[]): { buffer: Buffer; count: number } {
  const stream = redactor.createStream();
  const out = chunks.map((chunk) => stream.push(chunk));
  out.push(stream.flush());
  return { buffer: Buffer.concat(out), count: stream.count };
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

const bytewise = (input: Buffer): Buffer[] => [...input].map((byte) => Buffer.from([byte]));

test('any chunking, 1-byte chunks included, gives exactly the whole-buffer result, which matches the naive model', () => {
  fc.assert(
    fc.property(scenario, (sample) => {
      const { redactor, registrations } = build(sample);
      const input = Buffer.concat(sample.pieces);
      const whole = redactor.redactBuffer(input);
      const expected = referenceRedact(input, registrations);
      expect(whole.buffer.equals(expected.buffer)).toBe(true);
      expect(whole.count).toBe(expected.count);
      for (const chunks of [split(input, sample.cuts), bytewise(input), [input]]) {
        const streamed = streamThrough(redactor, chunks);
        expect(streamed.buffer.equals(whole.buffer)).toBe(true);
        expect(streamed.count).toBe(whole.count);
      }
    }),
    { numRuns: 1200 },
  );
});

test('no registered spelling survives between replacements', () => {
  fc.assert(
    fc.property(scenario, (sample) => {
      const { redactor, registrations } = build(sample);
      const output = streamThrough(redactor, split(Buffer.concat(sample.pieces), sample.cuts)).buffer.toString('latin1');
      const markers = registrations.map(({ label }) => Buffer.from(`[REDACTED:${label}]`).toString('latin1'));
      let fragments = [output];
      for (const marker of markers) fragments = fragments.flatMap((fragment) => fragment.split(marker));
      for (const fragment of fragments) {
        const leaks = findLeaks(Buffer.from(fragment, 'latin1'), registrations.filter((r) => r.encodings !== false).map((r) => r.value));
        expect(leaks.map(({ form }) => form)).toEqual([]);
        for (const { value } of registrations) expect(Buffer.from(fragment, 'latin1').includes(Buffer.from(value, 'utf8'))).toBe(false);
      }
    }),
    { numRuns: 800 },
  );
});

test('with large random chunks of filler, output keeps pace: at most maxLength - 1 bytes are held back', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ minLength: 1, maxLength: 2000 }), { minLength: 1, maxLength: 6 }), (chunks) => {
      const redactor = new Redactor();
      redactor.add('ghp_0123456789abcdefghijklmnopqrstuvwxyzAB', 'secret:token');
      const longest = Math.max(...getEncodedForms('ghp_0123456789abcdefghijklmnopqrstuvwxyzAB', { minLength: 8, encodings: true }).map(({ text }) => text.length));
      const stream = redactor.createStream();
      let pushed = 0;
      let emitted = 0;
      for (const chunk of chunks) {
        // Filler bytes above 0x7f cannot be part of any ASCII spelling, so nothing is replaced.
        const bytes = Buffer.from(chunk.map((byte) => byte | 0x80));
        pushed += bytes.length;
        emitted += stream.push(bytes).length;
        expect(pushed - emitted).toBeLessThanOrEqual(longest - 1);
      }
      expect(emitted + stream.flush().length).toBe(pushed);
    }),
    { numRuns: 200 },
  );
});

test('long values (the matcher samples one word in up to 32 bytes): any chunking gives the naive model\'s result', () => {
  const longValue = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9_-]{27,47}$/),
    // Values that are prefixes of one another, with a repeated first character.
    fc.stringMatching(/^[a-c]{40,60}$/),
    fc.string({ unit: 'binary', minLength: 27, maxLength: 50 }),
  );
  const longScenario = fc.array(longValue, { minLength: 1, maxLength: 3 }).chain((values) =>
    fc.record({
      values: fc.constant<string[]>([...values, ...values.map((value) => value.slice(0, Math.max(27, value.length - 5)))]),
      encodings: fc.constant([...values, ...values].map((value) => value.length < 48)),
      pieces: fc.array(
        fc.oneof(
          fc.uint8Array({ maxLength: 70 }).map((bytes) => Buffer.from(bytes)),
          fc.constantFrom(...values).chain((value) => fc.constantFrom(...getEncodedForms(value, { minLength: 8, encodings: true }))).map(({ text }) => Buffer.from(text, 'utf8')),
          // A spelling cut short: must come through unchanged.
          fc.tuple(fc.constantFrom(...values), fc.nat()).map(([value, cutAt]) => Buffer.from(value, 'utf8').subarray(0, cutAt % Buffer.byteLength(value))),
        ),
        { maxLength: 14 },
      ),
      cuts: fc.array(fc.nat(), { maxLength: 12 }),
    }),
  );
  fc.assert(
    fc.property(longScenario, (sample) => {
      const { redactor, registrations } = build(sample);
      const input = Buffer.concat(sample.pieces);
      const expected = referenceRedact(input, registrations);
      for (const chunks of [split(input, sample.cuts), bytewise(input), [input]]) {
        const streamed = streamThrough(redactor, chunks);
        expect(streamed.buffer.equals(expected.buffer)).toBe(true);
        expect(streamed.count).toBe(expected.count);
      }
    }),
    { numRuns: 600 },
  );
});

test('pushTo hands on what push returns, in pieces, whatever was held: with chunks long enough to decide the held bytes apart', () => {
  fc.assert(
    fc.property(scenario, fc.integer({ min: 1, max: 40 }), (sample, repeat) => {
      const { redactor } = build(sample);
      // The pieces repeated, so that chunks are long beside the longest spelling and most pushes find bytes held.
      const input = Buffer.concat(Array.from({ length: repeat }, () => sample.pieces).flat());
      const chunks = split(input, sample.cuts.slice(0, 3));
      const pushed = streamThrough(redactor, chunks);
      const stream = redactor.createStream();
      const pieces: Buffer[] = [];
      for (const chunk of chunks) stream.pushTo(chunk, (bytes) => {
        expect(bytes.length).toBeGreaterThan(0);
        pieces.push(bytes);
      });
      pieces.push(stream.flush());
      expect(Buffer.concat(pieces).equals(pushed.buffer)).toBe(true);
      expect(stream.count).toBe(pushed.count);
    }),
    { numRuns: 600 },
  );
});
