import { Redactor } from '../../src/redact';
import { encodingsOf, expectNoLeak, findLeaks } from '../helpers/leak';

const SECRET = 'helper-secret-"value"';

describe('leak helper', () => {
  test('encodingsOf lists the value first, then every registered spelling of 8+ characters', () => {
    const forms = encodingsOf(SECRET);
    expect(forms[0]).toBe(SECRET);
    expect(forms).toContain(Buffer.from(SECRET).toString('base64'));
    expect(forms).toContain(JSON.stringify(SECRET).slice(1, -1));
    expect(encodingsOf('abc')).toEqual(['abc']);
  });

  test('findLeaks names the spelling that appeared, in strings and Buffers', () => {
    const encoded = Buffer.from(`user:${SECRET}`).toString('base64');
    expect(findLeaks(`auth ${encoded}`, [SECRET, 'other-value-here']).map(({ form }) => form)).toContain('base64-stable@1');
    expect(findLeaks(Buffer.from(`x${SECRET}x`), [SECRET])).toEqual([{ value: SECRET, form: 'value' }]);
    expect(findLeaks('nothing here', [SECRET])).toEqual([]);
  });

  test('expectNoLeak walks objects, keys, Buffers and Errors, and never prints the secret', () => {
    const surfaces: unknown[] = [
      { result: { stdout: `ok ${SECRET}` } },
      [{ nested: [Buffer.from(SECRET)] }],
      { [SECRET]: 1 },
      new Error(`failed with ${SECRET}`),
      { error: new Error('wrapped', { cause: new Error(SECRET) }) },
      { json: JSON.stringify({ inner: SECRET }) },
      new Map([['k', SECRET]]),
    ];
    for (const surface of surfaces) {
      let message = '';
      try {
        expectNoLeak(surface, [SECRET]);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/values\[0\] \(21 characters\) appeared as `(value|json)` at \$/);
      expect(message).not.toContain('helper-secret');
    }
  });

  test('expectNoLeak passes on redacted output and copes with cycles', () => {
    const redactor = new Redactor();
    redactor.add(SECRET, 'secret:helper');
    const cyclic: Record<string, unknown> = { stdout: redactor.redactString(`echo ${SECRET}`).text };
    cyclic.self = cyclic;
    expect(() => expectNoLeak(cyclic, [SECRET])).not.toThrow();
    expect(() => expectNoLeak(undefined, [SECRET])).not.toThrow();
  });
});
