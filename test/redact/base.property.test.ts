/*
 * A redactor with a base (Redactor#setBase: another redactor's values, compiled once, scanned
 * below this one's) masks exactly what one redactor masks that registered this one's values
 * first and then the base's: same bytes out, same labels, same count, however the stream is cut,
 * whichever values the two share, and whether the own values came before or after the base was
 * set. Values are drawn from a few letters so that spellings collide across the two sets.
 */
import fc from 'fast-check';
import { getEncodedForms, Redactor } from '../../src/redact';

const char = fc.constantFrom(...'ab+/=\n"\\'.split(''), 'aaaa', 'abab');
const value = fc.array(char, { minLength: 1, maxLength: 14 }).map((chars) => chars.join(''));

const scenario = fc
  .record({
    own: fc.array(value, { maxLength: 3 }),
    base: fc.array(value, { minLength: 1, maxLength: 4 }),
    // Own values registered after setBase (the rest before it).
    after: fc.nat(),
    minLength: fc.integer({ min: 2, max: 9 }),
  })
  .chain((setup) => {
    const all = [...setup.own, ...setup.base];
    const spellings = all.flatMap((each) => getEncodedForms(each, { minLength: setup.minLength, encodings: true }).map(({ text }) => text));
    return fc.record({
      setup: fc.constant(setup),
      pieces: fc.array(
        fc.oneof(
          fc.constantFrom(...all, ...spellings).map((text) => Buffer.from(text, 'utf8')),
          fc.tuple(fc.constantFrom(...spellings), fc.integer({ min: 1, max: 6 }), fc.constantFrom('\n', '\r\n')).map(([text, width, eol]) => Buffer.from(text.replace(new RegExp(`.{${width}}`, 'g'), `$&${eol}`), 'utf8')),
          fc.uint8Array({ maxLength: 8 }).map((bytes) => Buffer.from(bytes)),
        ),
        { maxLength: 10 },
      ),
      cuts: fc.array(fc.nat(), { maxLength: 6 }),
    });
  });

function streamThrough(redactor: Redactor, chunks: Buffer[]): { text: string; count: number } {
  const stream = redactor.createStream();
  const out = chunks.map((chunk) => stream.push(chunk));
  out.push(stream.flush());
  return { text: Buffer.concat(out).toString('latin1'), count: stream.count };
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

describe('a redactor with a base masks what one redactor of its values, then the base\'s, masks', () => {
  test('same bytes, labels and count, however the text is cut', () => {
    fc.assert(
      fc.property(scenario, ({ setup: { own, base, after, minLength }, pieces, cuts }) => {
        const ownLabels = own.map((_, index) => `secret:own${index}`);
        const baseLabels = base.map((_, index) => `secret:base${index}`);
        const one = new Redactor({ minLength });
        own.forEach((each, index) => one.add(each, ownLabels[index]));
        base.forEach((each, index) => one.add(each, baseLabels[index]));

        const shared = new Redactor({ minLength });
        base.forEach((each, index) => shared.add(each, baseLabels[index]));
        const layered = new Redactor({ minLength });
        const before = own.length - (after % (own.length + 1));
        own.slice(0, before).forEach((each, index) => layered.add(each, ownLabels[index]));
        layered.setBase(shared);
        own.slice(before).forEach((each, index) => layered.add(each, ownLabels[before + index]));

        const input = Buffer.concat(pieces);
        const expected = streamThrough(one, [input]);
        expect(streamThrough(layered, split(input, cuts))).toEqual(expected);
        expect(layered.redactBuffer(input).buffer.toString('latin1')).toBe(expected.text);
      }),
      { numRuns: 600 },
    );
  });

  test('values added to the base later are not seen; the base is shared, not copied', () => {
    const shared = new Redactor();
    shared.add('base-value-1234', 'secret:base');
    const run = new Redactor();
    run.add('own-value-5678', 'secret:own');
    run.setBase(shared);
    shared.add('later-value-9012', 'secret:later');
    expect(run.redactString('base-value-1234 own-value-5678 later-value-9012').text).toBe('[REDACTED:secret:base] [REDACTED:secret:own] later-value-9012');
    expect(shared.redactString('later-value-9012').text).toBe('[REDACTED:secret:later]');
    // The own label wins where both register the same value.
    run.add('base-value-1234', 'secret:mine');
    expect(run.redactString('x base-value-1234 x').text).toBe('x [REDACTED:secret:mine] x');
    expect(run.size).toBe(3);
    run.setBase(undefined);
    expect(run.redactString('base-value-1234 own-value-5678').text).toBe('[REDACTED:secret:mine] [REDACTED:secret:own]');
  });

  test('a spelling that is line-tolerant in the base is so in the redactor with its own label, whether it came before the base or after', () => {
    const base64 = Buffer.from('wrapped-base-value').toString('base64');
    const wrapped = `${base64.slice(0, 8)}\n${base64.slice(8)}`;
    const shared = new Redactor();
    shared.add('wrapped-base-value', 'secret:base');
    for (const order of ['before', 'after']) {
      const run = new Redactor();
      // The base's base64 spelling, registered here as a value of its own (no encodings): as one
      // registry would, it matches wrapped too, under this redactor's label.
      if (order === 'before') run.add(base64, 'secret:own', { encodings: false });
      run.setBase(shared);
      if (order === 'after') run.add(base64, 'secret:own', { encodings: false });
      expect(run.redactString(`[${wrapped}]`).text).toBe('[[REDACTED:secret:own]]');
    }
  });

  test('a base only, nothing of its own: masks the base\'s values', () => {
    const shared = new Redactor();
    shared.add('only-in-the-base-42', 'secret:base');
    const run = new Redactor();
    run.setBase(shared);
    expect(run.redactString('> only-in-the-base-42 <')).toEqual({ text: '> [REDACTED:secret:base] <', count: 1 });
    expect(() => run.setBase(run)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_REDACT_INVALID_INPUT' }));
    expect(() => run.setBase({} as Redactor)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_REDACT_INVALID_INPUT' }));
  });
});
