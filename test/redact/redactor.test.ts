import fc from 'fast-check';
import { ExecgateError } from '../../src/errors';
import { Redactor, type RedactStream } from '../../src/redact';
import { expectNoLeak } from '../helpers/leak';

function streamAll(stream: RedactStream, chunks: Array<string | Buffer>): string {
  const out = chunks.map((chunk) => stream.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk));
  return Buffer.concat([...out, stream.flush()]).toString('utf8');
}

describe('registration', () => {
  test('size and values() count values, not patterns; adding twice is harmless; empty is ignored', () => {
    const redactor = new Redactor();
    redactor.add('first-secret-value', 'secret:a');
    const patterns = redactor.patternCount;
    redactor.add('first-secret-value', 'secret:a');
    redactor.add('first-secret-value', 'secret:other');
    redactor.add('', 'secret:empty');
    redactor.add('second-secret-value', 'env:B', { encodings: false });
    expect(redactor.size).toBe(2);
    expect(redactor.values()).toEqual(['first-secret-value', 'second-secret-value']);
    expect(redactor.patternCount).toBe(patterns + 1);
    // The first label registered for a spelling wins.
    expect(redactor.redactString('first-secret-value').text).toBe('[REDACTED:secret:a]');
  });

  test('encodings: false registers only the value (and its lines)', () => {
    const redactor = new Redactor();
    redactor.add('plain-secret-value', 'env:PLAIN', { encodings: false });
    const base64 = Buffer.from('plain-secret-value').toString('base64');
    expect(redactor.redactString(`${base64} plain-secret-value`).text).toBe(`${base64} [REDACTED:env:PLAIN]`);
  });

  test('minLength: a short value is still registered whole, its short encodings are not', () => {
    const redactor = new Redactor({ minLength: 12 });
    redactor.add('abc', 'secret:short');
    expect(redactor.patternCount).toBe(1);
    expect(redactor.redactString('xabcx YWJj').text).toBe('x[REDACTED:secret:short]x YWJj');
    const loose = new Redactor({ minLength: 2 });
    loose.add('abc', 'secret:short');
    expect(loose.redactString('YWJj 616263').text).toBe('[REDACTED:secret:short] [REDACTED:secret:short]');
  });

  test('invalid options and non-string values fail with a coded error', () => {
    expect(() => new Redactor({ minLength: 0 })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_REDACT_INVALID_INPUT' }));
    expect(() => new Redactor({ minLength: 1.5 })).toThrow(/`minLength` option to be a positive integer, got `1.5` \(number\)/);
    const redactor = new Redactor();
    expect(() => redactor.add(42 as unknown as string, 'secret:x')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_REDACT_INVALID_INPUT' }));
    expect(() => redactor.add('value-value', undefined as unknown as string)).toThrow(ExecgateError);
  });

  test('a value added after a stream was created applies to bytes the stream has not emitted', () => {
    const redactor = new Redactor();
    redactor.add('early-secret-value', 'secret:early');
    const stream = redactor.createStream();
    const first = stream.push(Buffer.from('a'.repeat(100)));
    redactor.add('later-secret-value', 'secret:later');
    const text = Buffer.concat([first, stream.push(Buffer.from('later-secret-value early-secret-value')), stream.flush()]).toString();
    expect(text).toBe(`${'a'.repeat(100)}[REDACTED:secret:later] [REDACTED:secret:early]`);
  });

  test('a redactor that streamed with no value masks one added later; another empty one is not changed by it', () => {
    // Empty redactors share one matcher of no patterns: a value added to one must build its own.
    const first = new Redactor();
    const other = new Redactor();
    const stream = first.createStream();
    const otherStream = other.createStream();
    const before = [stream.push(Buffer.from('output before any value\n')), otherStream.push(Buffer.from('x\n'))];
    expect(Buffer.concat(before).toString()).toBe('output before any value\nx\n');
    first.add('added-after-output', 'secret:late');
    const text = Buffer.concat([stream.push(Buffer.from('then added-after-output and ')), stream.push(Buffer.from(Buffer.from('added-after-output').toString('base64'))), stream.flush()]).toString();
    expect(text).toBe('then [REDACTED:secret:late] and [REDACTED:secret:late]');
    expect(streamAll(otherStream, ['added-after-output'])).toBe('added-after-output');
    expect(new Redactor().redactString('added-after-output').text).toBe('added-after-output');
    expect(first.redactString('added-after-output').text).toBe('[REDACTED:secret:late]');
  });
});

describe('matching', () => {
  test('overlapping matches of different secrets merge into one region named by the leftmost-longest', () => {
    const redactor = new Redactor();
    redactor.add('abcdefghij', 'secret:A');
    redactor.add('ghijklmnop', 'secret:B');
    expect(redactor.redactString('xx abcdefghijklmnop yy')).toEqual({ text: 'xx [REDACTED:secret:A] yy', count: 1 });
    expect(redactor.redactString('xx ghijklmnop yy')).toEqual({ text: 'xx [REDACTED:secret:B] yy', count: 1 });
  });

  test('adjacent matches merge, separated ones do not', () => {
    const redactor = new Redactor();
    redactor.add('secret-one-value', 'secret:one');
    redactor.add('secret-two-value', 'secret:two');
    expect(redactor.redactString('secret-two-valuesecret-one-value')).toEqual({ text: '[REDACTED:secret:two]', count: 1 });
    expect(redactor.redactString('secret-two-value secret-one-value')).toEqual({
      text: '[REDACTED:secret:two] [REDACTED:secret:one]',
      count: 2,
    });
  });

  test('one secret a prefix of another: the longer wins where it occurs, the shorter elsewhere', () => {
    const redactor = new Redactor();
    redactor.add('shared-prefix', 'secret:short');
    redactor.add('shared-prefix-and-more', 'secret:long');
    const input = 'a=shared-prefix-and-more b=shared-prefix c=shared-prefix-and-mor';
    const expected = 'a=[REDACTED:secret:long] b=[REDACTED:secret:short] c=[REDACTED:secret:short]-and-mor';
    expect(redactor.redactString(input).text).toBe(expected);
    for (const size of [1, 2, 3, 5, 7, 64]) {
      const chunks: string[] = [];
      for (let index = 0; index < input.length; index += size) chunks.push(input.slice(index, index + size));
      expect(streamAll(redactor.createStream(), chunks)).toBe(expected);
    }
  });

  test('multi-line PEM-like values: whole, each line alone, and through a PTY', () => {
    const pem = [
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
      'QyNTUxOQAAACBvHw6r0ZBLYUBvzXsB6kWNNqcS0Bn4Fjp1Wh0tmOl8YAAAAJi5NoXzuTaF',
      'xx',
      '-----END OPENSSH PRIVATE KEY-----',
    ].join('\n');
    const redactor = new Redactor();
    redactor.add(`${pem}\n`, 'secret:deploy-key');
    const lines = pem.split('\n');
    expect(redactor.redactString(`cat key:\n${pem}\n`).text).toBe('cat key:\n[REDACTED:secret:deploy-key]');
    expect(redactor.redactString(`line: ${lines[2]}!`).text).toBe('line: [REDACTED:secret:deploy-key]!');
    const pty = `${pem.replace(/\n/g, '\r\n')}\r\n`;
    expect(redactor.redactString(pty).text).toBe('[REDACTED:secret:deploy-key]');
    // Lines shorter than minLength are not registered on their own.
    expect(redactor.redactString('xx').text).toBe('xx');
    expectNoLeak(redactor.redactString(`${lines.slice(1, 3).join('\r\n')}\n${JSON.stringify(pem)}`).text, [lines[1]!, lines[2]!]);
  });

  test('UTF-8 values are matched by their bytes, also when a chunk splits a multi-byte character', () => {
    const value = 'pässwörd-秘密-😀';
    const redactor = new Redactor();
    redactor.add(value, 'secret:utf8');
    const input = Buffer.from(`<${value}>`);
    const chunks = [...input].map((byte) => Buffer.from([byte]));
    expect(streamAll(redactor.createStream(), chunks)).toBe('<[REDACTED:secret:utf8]>');
  });

  test('binary data around a value passes through unchanged', () => {
    const redactor = new Redactor();
    redactor.add('binary-neighbour', 'secret:bin');
    const noise = Buffer.from([0, 255, 128, 10, 13, 0xc3]);
    const input = Buffer.concat([noise, Buffer.from('binary-neighbour'), noise]);
    const { buffer, count } = redactor.redactBuffer(input);
    expect(count).toBe(1);
    expect(buffer.equals(Buffer.concat([noise, Buffer.from('[REDACTED:secret:bin]'), noise]))).toBe(true);
  });

  test('a held-back prefix of a secret is never emitted before the secret is decided', () => {
    const redactor = new Redactor();
    redactor.add('ghp_TOKENVALUE0123456789', 'secret:gh');
    const stream = redactor.createStream();
    const early = stream.push(Buffer.from('log: ghp_TOKEN'));
    expect(early.toString()).not.toContain('ghp_');
    const rest = Buffer.concat([stream.push(Buffer.from('VALUE0123456789 done')), stream.flush()]);
    expect(Buffer.concat([early, rest]).toString()).toBe('log: [REDACTED:secret:gh] done');
    expect(stream.count).toBe(1);
  });

  test('flush ends the stream; the stream can be reused and counts on', () => {
    const redactor = new Redactor();
    redactor.add('reused-secret', 'secret:r');
    const stream = redactor.createStream();
    expect(streamAll(stream, ['reused-', 'secret'])).toBe('[REDACTED:secret:r]');
    expect(streamAll(stream, ['reused-secret', 'reused-secret'])).toBe('[REDACTED:secret:r]');
    expect(stream.count).toBe(2);
    expect(stream.flush().length).toBe(0);
  });
});

describe('never throws', () => {
  test('on odd inputs', () => {
    const redactor = new Redactor();
    redactor.add('odd-input-secret', 'secret:odd');
    const stream = redactor.createStream();
    const odd: unknown[] = [undefined, null, 42, {}, 'odd-input-', new Uint8Array(Buffer.from('secret')), new ArrayBuffer(3), Buffer.alloc(0)];
    const out = odd.map((chunk) => stream.push(chunk as Buffer));
    expect(Buffer.concat([...out, stream.flush()]).toString()).toBe('[REDACTED:secret:odd]\0\0\0');
    expect(redactor.redactString(undefined as unknown as string).text).toBe('undefined');
    expect(redactor.redactBuffer(null as unknown as Buffer).count).toBe(0);
    expect(redactor.redactString('lone \ud800 odd-input-secret').text).toBe('lone \ufffd [REDACTED:secret:odd]');
    expect(redactor.redactString('lone \ud800 surrogate, no match').text).toBe('lone \ud800 surrogate, no match');
  });

  test('on any UTF-16 value, lone surrogates included, and any bytes', () => {
    const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
    fc.assert(
      fc.property(fc.string({ unit: anyUnit, maxLength: 30 }), fc.uint8Array({ maxLength: 100 }), (value, bytes) => {
        const redactor = new Redactor({ minLength: 1 });
        redactor.add(value, 'secret:fuzz');
        const input = Buffer.concat([Buffer.from(bytes), Buffer.from(value, 'utf8'), Buffer.from(bytes)]);
        const stream = redactor.createStream();
        const streamed = Buffer.concat([stream.push(input.subarray(0, 7)), stream.push(input.subarray(7)), stream.flush()]);
        expect(streamed.equals(redactor.redactBuffer(input).buffer)).toBe(true);
        expect(redactor.redactString(value).count).toBe(value.length === 0 ? 0 : 1);
      }),
      { numRuns: 300 },
    );
  });

  test('an empty redactor passes everything through', () => {
    const redactor = new Redactor();
    expect(redactor.redactString('anything')).toEqual({ text: 'anything', count: 0 });
    expect(streamAll(redactor.createStream(), ['any', 'thing'])).toBe('anything');
  });
});
