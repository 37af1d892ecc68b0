import fc from 'fast-check';
import { Redactor, getEncodedForms } from '../../src/redact';

const SECRET = 'hold-secret-value-0123456789';

describe('the stream holds back only what could still become a secret', () => {
  const redactor = new Redactor();
  redactor.add(SECRET, 'secret:s');
  const forms = getEncodedForms(SECRET, { minLength: 8, encodings: true }).map((form) => form.text);

  test('text that cannot begin any registered form is emitted at once', () => {
    const stream = redactor.createStream();
    expect(stream.push(Buffer.from('Password: ')).toString()).toBe('Password: ');
    expect(stream.push(Buffer.from(`you typed ${SECRET}\n`)).toString()).toBe('you typed [REDACTED:secret:s]\n');
  });

  test('a possible start of the secret is held until it is decided', () => {
    const stream = redactor.createStream();
    expect(stream.push(Buffer.from('before hold-sec')).toString()).toBe('before ');
    expect(stream.push(Buffer.from('ret-value-0123456789 after')).toString()).toBe('[REDACTED:secret:s] after');
    expect(stream.push(Buffer.from('hold-')).toString()).toBe('');
    expect(stream.push(Buffer.from('x')).toString()).toBe('hold-x');
    expect(stream.flush().toString()).toBe('');
  });

  test('whatever the text, what is held is a suffix that begins some registered form', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.nat(SECRET.length - 1), (prefix, cut) => {
        const stream = redactor.createStream();
        const text = prefix + SECRET.slice(0, cut);
        const out = stream.push(Buffer.from(text)).toString();
        const held = text.slice(out.length);
        expect(text.startsWith(out)).toBe(true);
        // Held bytes are a proper prefix of a registered form (never more than needed)...
        if (held !== '') expect(forms.some((form) => form.length > held.length && form.startsWith(held))).toBe(true);
        // ...and at least the started secret is held (nothing of it was emitted).
        if (cut > 0) expect(held.endsWith(SECRET.slice(0, cut))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
