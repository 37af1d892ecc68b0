/*
 * Property: for every spelling SECURITY.md claims, a value of 8 to 256 bytes (any characters but
 * NUL), written in that spelling between random text and streamed in random chunks, never comes
 * out. base64 is written as encoders write it: the value at any offset of the encoded input (other
 * bytes before and after it), standard or URL-safe, padded or not, unwrapped or wrapped at any
 * width from 4 to 128 with LF or CRLF; what must not come out is every character that depends on
 * the value's bits alone, read with the line breaks left out.
 */
import fc from 'fast-check';
import { quoteLikePrintf, Redactor } from '../../src/redact';
import { getEncodedForms } from '../../src/redact/encoders';
import { Matcher } from '../../src/redact/matcher';

const RUNS = Number(process.env.EXECGATE_FUZZ_RUNS ?? 0) > 0 ? Number(process.env.EXECGATE_FUZZ_RUNS) : 1500;

const hex = (text: string, upper: boolean): string => {
  const lower = Buffer.from(text, 'utf8').toString('hex');
  return upper ? lower.toUpperCase() : lower;
};
const lowerHex = (text: string): string => text.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
const rfc3986 = (text: string): string => encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
const json = (text: string): string => JSON.stringify(text).slice(1, -1);
const escapeUnits = (text: string, pattern: RegExp, upper: boolean): string =>
  text.replace(pattern, (char) => {
    const code = char.charCodeAt(char.length - 1).toString(16).padStart(4, '0');
    return `\\u${upper ? code.toUpperCase() : code}`;
  });
const upperEscapes = (text: string): string => text.replace(/\\u[0-9a-f]{4}/g, (escape) => `\\u${escape.slice(2).toUpperCase()}`);
const html = (text: string, quote: string, apostrophe: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': quote, "'": apostrophe })[char]!);

/** Each claimed spelling, as the programs named write it. */
const CLAIMED: ReadonlyArray<readonly [string, (value: string) => string]> = [
  ['the value', (value) => value],
  ['hex', (value) => hex(value, false)],
  ['HEX', (value) => hex(value, true)],
  ['encodeURIComponent', encodeURIComponent],
  ['encodeURIComponent, lower-case hex', (value) => lowerHex(encodeURIComponent(value))],
  ['+ for spaces', (value) => encodeURIComponent(value).replace(/%20/g, '+')],
  ['RFC 3986', rfc3986],
  ['RFC 3986, lower-case hex (.NET)', (value) => lowerHex(rfc3986(value))],
  ['Python quote (keeps /)', (value) => rfc3986(value).replace(/%2F/g, '/')],
  ['form encoding', (value) => new URLSearchParams([['', value]]).toString().slice(1)],
  ['form encoding, lower-case hex', (value) => lowerHex(new URLSearchParams([['', value]]).toString().slice(1))],
  ['JSON (JSON.stringify)', json],
  ['JSON, ASCII only (Python, jq -a)', (value) => escapeUnits(json(value), /[\u0080-\uffff]/g, false)],
  ['JSON, ASCII only, upper-case hex (Java)', (value) => escapeUnits(upperEscapes(json(value)), /[\u0080-\uffff]/g, true)],
  ['JSON, HTML-safe (Go)', (value) => escapeUnits(json(value), /[<>&\u2028\u2029]/g, false)],
  ['JSON, HTML-safe, upper-case hex', (value) => escapeUnits(upperEscapes(json(value)), /[<>&\u2028\u2029]/g, true)],
  ['JSON, .NET default encoder', (value) => escapeUnits(upperEscapes(json(value)), /[<>&'+`\u0080-\uffff]|\\"/g, true)],
  ['printf %q, C locale', (value) => quoteLikePrintf(value, false)],
  ['printf %q, UTF-8 locale', (value) => quoteLikePrintf(value, true)],
  ["'\\'' quoting", (value) => value.replace(/'/g, "'\\''")],
  ["'\"'\"' quoting (shlex)", (value) => value.replace(/'/g, `'"'"'`)],
  ['double-quote escaping', (value) => value.replace(/[\\"$`]/g, '\\$&')],
  ['HTML, Python html.escape', (value) => html(value, '&quot;', '&#x27;')],
  ['HTML, Go html.EscapeString', (value) => html(value, '&#34;', '&#39;')],
  ['XML', (value) => html(value, '&quot;', '&apos;')],
  ['a terminal\'s CRLF line ends', (value) => value.replace(/\n/g, '\r\n')],
];

/** 8 to 256 bytes of UTF-8, any characters but NUL (an environment cannot hold one). */
const value = fc
  .string({ unit: 'binary', minLength: 2, maxLength: 120 })
  .map((text) => text.replace(/\0/g, '\u0001'))
  .filter((text) => Buffer.byteLength(text) >= 8 && Buffer.byteLength(text) <= 256 && text.length >= 8);
const around = fc.string({ unit: 'grapheme-ascii', maxLength: 40 });
const cuts = fc.array(fc.nat(), { maxLength: 12 });

function streamThrough(redactor: Redactor, input: Buffer, points: number[]): { text: string; count: number } {
  const stream = redactor.createStream();
  const out: Buffer[] = [];
  let previous = 0;
  for (const point of [...new Set(points.map((point) => point % (input.length + 1)))].sort((a, b) => a - b)) {
    out.push(stream.push(input.subarray(previous, point)));
    previous = point;
  }
  out.push(stream.push(input.subarray(previous)), stream.flush());
  return { text: Buffer.concat(out).toString('latin1'), count: stream.count };
}

/*
 * The matcher finds wrapped base64 two ways (src/redact/matcher.ts): with a few secrets the words
 * a line break makes are registered, with many each sampled word that holds a break is read
 * joined. Each property runs both ways: the value alone, and among DECOYS other secrets (fewer
 * cases: each compiles a matcher of some 400 patterns).
 */
const DECOYS = Array.from({ length: 24 }, (_, index) => `decoy-${index}-${'Zq8'.repeat(12)}-${index * 7919}`);
const CROWDS = [['alone', [] as string[], RUNS], ['among 24 other secrets', DECOYS, Math.ceil(RUNS / 4)]] as const;

function masker(secret: string, crowd: readonly string[] = []): Redactor {
  const redactor = new Redactor();
  crowd.forEach((decoy, index) => redactor.add(decoy, `decoy:${index}`));
  redactor.add(secret, 'secret:v');
  return redactor;
}

test.each(CROWDS)('the two ways are both used: %s', (name, crowd) => {
  const forms = [...crowd, 'S3cret-value-of-forty-characters-abcdefg'].flatMap((value) => getEncodedForms(value, { minLength: 8, encodings: true }));
  const matcher = new Matcher(forms.map((form) => Buffer.from(form.text, 'utf8')), forms.flatMap((form, index) => (form.wraps ? [index] : [])));
  expect(matcher.readsJoined).toBe(name !== 'alone');
});

test.each(CROWDS)('every claimed text spelling, between random text, in random chunks, is masked (%s)', (_name, crowd, runs) => {
  fc.assert(
    fc.property(fc.nat(CLAIMED.length - 1), value, around, around, cuts, (index, secret, before, after, points) => {
      const [, encode] = CLAIMED[index]!;
      const encoded = Buffer.from(encode(secret), 'utf8').toString('latin1');
      const { text, count } = streamThrough(masker(secret, crowd), Buffer.from(`${before}${encode(secret)}${after}`, 'utf8'), points);
      expect(count).toBeGreaterThan(0);
      expect(text.includes(encoded)).toBe(false);
    }),
    { numRuns: runs },
  );
});

test.each(CROWDS)('base64 at any offset, standard or URL-safe, padded or not, wrapped at any width with LF, CRLF or CR CR LF (a CRLF on a terminal), in random chunks, is masked (%s)', (_name, crowd, runs) => {
  const layout = fc.record({
    head: fc.uint8Array({ maxLength: 60 }),
    tail: fc.uint8Array({ maxLength: 10 }),
    url: fc.boolean(),
    padded: fc.boolean(),
    width: fc.option(fc.integer({ min: 4, max: 128 }), { freq: 5 }),
    eol: fc.constantFrom('\n', '\r\n', '\r\r\n'),
  });
  fc.assert(
    fc.property(value, layout, around, around, cuts, (secret, { head, tail, url, padded, width, eol }, before, after, points) => {
      const bytes = Buffer.from(secret, 'utf8');
      const input = Buffer.concat([Buffer.from(head), bytes, Buffer.from(tail)]);
      let encoded = input.toString(url ? 'base64url' : 'base64');
      if (url && padded) encoded += '='.repeat((4 - (encoded.length % 4)) % 4);
      if (!url && !padded) encoded = encoded.replace(/=+$/, '');
      const written = width === null ? encoded : encoded.replace(new RegExp(`.{${width}}`, 'g'), `$&${eol}`);
      // The characters whose six bits all come from the value.
      const core = encoded.slice(Math.ceil((head.length * 8) / 6), Math.floor(((head.length + bytes.length) * 8) / 6));
      const { text, count } = streamThrough(masker(secret, crowd), Buffer.from(`${before}\n${written}${eol}${after}`, 'latin1'), points);
      expect(count).toBeGreaterThan(0);
      expect(text.replace(/[\r\n]/g, '').includes(core)).toBe(false);
    }),
    { numRuns: runs },
  );
});
