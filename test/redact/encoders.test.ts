import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { getEncodedForms } from '../../src/redact';
import { Redactor } from '../../src/redact';
import { expectNoLeak } from '../helpers/leak';

const ALL = { minLength: 8, encodings: true } as const;

function formsOf(value: string): Map<string, string> {
  return new Map(getEncodedForms(value, ALL).map(({ form, text }) => [form, text]));
}

function texts(value: string): string[] {
  return getEncodedForms(value, ALL).map(({ text }) => text);
}

function redactorFor(value: string): Redactor {
  const redactor = new Redactor();
  redactor.add(value, 'secret:test');
  return redactor;
}

const SECRET = 'p@ss w0rd/with+"quotes"&<tags>\'é';

describe('base64 forms', () => {
  test('all three alignments match Buffer, padded and as the stable prefix', () => {
    const bytes = Buffer.from(SECRET, 'utf8');
    const forms = formsOf(SECRET);
    for (const shift of [0, 1, 2]) {
      const part = bytes.subarray(shift);
      expect(forms.get(`base64@${shift}`)).toBe(part.toString('base64'));
      expect(forms.get(`base64url@${shift}`)).toBe(part.toString('base64url'));
      // The stable prefix is exactly what every longer message with the same aligned start shares.
      // When the length is a multiple of 3 the stable prefix is the whole encoding (deduplicated).
      const stable = forms.get(`base64-stable@${shift}`) ?? forms.get(`base64@${shift}`)!;
      expect(stable).toBe(part.toString('base64').slice(0, Math.floor((part.length * 4) / 3)));
      expect(Buffer.concat([part, Buffer.from('xyz')]).toString('base64').startsWith(stable)).toBe(true);
      expect(Buffer.concat([part, Buffer.from('\u00ff\u0000')]).toString('base64').startsWith(stable)).toBe(true);
    }
  });

  test.each(['', 'u', 'us', 'user:', 'Authorization: Basic ', 'x'.repeat(100)])(
    'base64(%j + value) and base64(value + "\\n") are caught',
    (prefix) => {
      const redactor = redactorFor(SECRET);
      for (const suffix of ['', '\n', '\r\n', ':rest']) {
        const encoded = Buffer.from(prefix + SECRET + suffix, 'utf8').toString('base64');
        const { text, count } = redactor.redactString(`token=${encoded};`);
        expect(count).toBeGreaterThan(0);
        expectNoLeak(text, [SECRET]);
        const url = Buffer.from(prefix + SECRET + suffix, 'utf8').toString('base64url');
        expectNoLeak(redactor.redactString(url).text, [SECRET]);
      }
    },
  );

  test('wrapped base64 output (coreutils 76, openssl 64) is caught line by line', () => {
    const value = 'k'.repeat(10) + 'A-long-secret-value-that-needs-more-than-one-line-of-base64-output-0123456789';
    const redactor = redactorFor(value);
    const encoded = Buffer.from(`${value}\n`).toString('base64');
    for (const width of [64, 76]) {
      const wrapped = encoded.replace(new RegExp(`(.{${width}})`, 'g'), '$1\n');
      const { text } = redactor.redactString(wrapped);
      expectNoLeak(text, [value]);
      for (const line of text.split('\n')) expect(encoded.includes(line) && line.length >= 8).toBe(false);
    }
  });
});

describe('hex forms', () => {
  test('lower and upper case of the UTF-8 bytes', () => {
    const forms = formsOf(SECRET);
    expect(forms.get('hex')).toBe(Buffer.from(SECRET).toString('hex'));
    expect(forms.get('hex-upper')).toBe(Buffer.from(SECRET).toString('hex').toUpperCase());
  });
});

describe('URL forms', () => {
  test('encodeURIComponent, + for spaces, RFC 3986, form encoding', () => {
    const forms = texts(SECRET);
    const component = encodeURIComponent(SECRET);
    expect(forms).toContain(component);
    expect(forms).toContain(component.replace(/%20/g, '+'));
    expect(forms).toContain(new URLSearchParams({ q: SECRET }).toString().slice(2));
    expect(forms).toContain(component.replace(/'/g, '%27').replace(/%2F/g, '/'));
  });

  test('a lone surrogate does not throw, and is encoded as the U+FFFD a program gets', () => {
    expect(() => getEncodedForms('abc\ud800defghij', ALL)).not.toThrow();
    expect([...formsOf('abc\ud800defghij').values()]).toContain('abc%EF%BF%BDdefghij');
  });
});

describe('JSON, markup, quotes and terminal forms', () => {
  test('JSON string body, plain and ASCII-only', () => {
    const value = 'line1\nline2\t"quoted"\\ é 😀';
    const forms = formsOf(value);
    expect(forms.get('json')).toBe(JSON.stringify(value).slice(1, -1));
    expect(forms.get('json-ascii')).toBe('line1\\nline2\\t\\"quoted\\"\\\\ \\u00e9 \\ud83d\\ude00');
    expect(JSON.parse(`"${forms.get('json-ascii')}"`)).toBe(value);
  });

  test('XML and HTML escaping', () => {
    const forms = formsOf(SECRET);
    expect(forms.get('xml')).toBe('p@ss w0rd/with+&quot;quotes&quot;&amp;&lt;tags&gt;&apos;é');
    expect(forms.get('html')).toBe('p@ss w0rd/with+&quot;quotes&quot;&amp;&lt;tags&gt;&#39;é');
    expect(forms.get('xml-text')).toBe('p@ss w0rd/with+"quotes"&amp;&lt;tags&gt;\'é');
  });

  test('HTML/XML escapers\' spellings of quotes and numeric references (Go, PHP, markupsafe, numeric encoders)', () => {
    const value = `it's "a" <s3cret> & more`;
    const redactor = redactorFor(value);
    const spellings = [
      'it&#39;s &#34;a&#34; &lt;s3cret&gt; &amp; more', // Go html.EscapeString, markupsafe
      'it&#039;s &quot;a&quot; &lt;s3cret&gt; &amp; more', // PHP htmlspecialchars ENT_QUOTES
      'it&#x27;s &quot;a&quot; &lt;s3cret&gt; &amp; more', // Python html.escape
      'it&apos;s &quot;a&quot; &lt;s3cret&gt; &amp; more', // XML, PHP ENT_HTML5
      'it\'s &quot;a&quot; &lt;s3cret&gt; &amp; more', // Java escapeHtml4
      'it&#X27;s &#X22;a&#X22; &lt;s3cret&gt; &amp; more',
      'it&#39;s &#34;a&#34; &#60;s3cret&#62; &#38; more', // fully numeric, decimal
      'it&#039;s &#034;a&#034; &#060;s3cret&#062; &#038; more',
      'it&#x27;s &#x22;a&#x22; &#x3c;s3cret&#x3e; &#x26; more',
      'it&#x27;s &#x22;a&#x22; &#x3C;s3cret&#x3E; &#x26; more',
      'it&#X27;s &#X22;a&#X22; &#X3C;s3cret&#X3E; &#X26; more',
    ];
    for (const spelling of spellings) {
      expect(redactor.redactString(`<p>${spelling}</p>`).text).toBe('<p>[REDACTED:secret:test]</p>');
    }
    // Go's encoding/xml EscapeText also spells line ends.
    expect(redactorFor('line-one\n"two"').redactString('line-one&#xA;&#34;two&#34;').text).toBe('[REDACTED:secret:test]');
    // One form per escaper style, not one per combination of spellings.
    expect(getEncodedForms(value, ALL).filter(({ form }) => /^(xml|html)/.test(form)).length).toBeLessThanOrEqual(16);
  });

  test('Python\'s html.escape and xml.sax.saxutils.escape of generated values are masked (real python3 as the oracle)', () => {
    const values = fc.sample(fc.string({ minLength: 8, maxLength: 24, unit: fc.constantFrom(...'&<>"\'aZ9 é\n') }), { numRuns: 300, seed: 9 });
    const script = [
      'import html, json, sys',
      'from xml.sax.saxutils import escape',
      'for v in json.load(sys.stdin):',
      '    print(json.dumps([html.escape(v), html.escape(v, quote=False), escape(v), escape(v, {\'"\': "&quot;", "\'": "&apos;"})]))',
    ].join('\n');
    const python = spawnSync('python3', ['-c', script], { input: JSON.stringify(values), encoding: 'utf8' });
    expect(python.status).toBe(0);
    const outputs = python.stdout.trim().split('\n').map((line) => JSON.parse(line) as string[]);
    expect(outputs).toHaveLength(values.length);
    values.forEach((value, index) => {
      const redactor = redactorFor(value);
      for (const escaped of outputs[index]!) {
        expect(redactor.redactString(`[${escaped}]`).text).toBe('[[REDACTED:secret:test]]');
      }
    });
    // The generated values do exercise the quote spellings.
    expect(outputs.some(([escaped]) => escaped!.includes('&#x27;'))).toBe(true);
  });

  test('surrounding quotes trimmed, and \\" escaping', () => {
    expect(formsOf('"quoted-secret"').get('quotes-trimmed')).toBe('quoted-secret');
    expect(formsOf("'quoted-secret'").get('quotes-trimmed')).toBe('quoted-secret');
    expect(texts('say "hello" now')).toContain('say \\"hello\\" now');
  });

  test('PTY \\r\\n form of a multi-line value', () => {
    const value = 'first-line-secret\nsecond-line-secret\n';
    expect(formsOf(value).get('pty-crlf')).toBe('first-line-secret\r\nsecond-line-secret\r\n');
    const redactor = redactorFor(value);
    const { text, count } = redactor.redactString(`out: first-line-secret\r\nsecond-line-secret\r\n$ `);
    expect(text).toBe('out: [REDACTED:secret:test]$ ');
    expect(count).toBe(1);
  });
});

describe('registration rules', () => {
  test('the value always comes first and is kept however short', () => {
    expect(getEncodedForms('abc', ALL)).toEqual([{ form: 'value', text: 'abc' }]);
    expect(getEncodedForms('', ALL)).toEqual([]);
  });

  test('derived forms shorter than minLength or equal to the value are skipped; no duplicates', () => {
    for (const value of ['abcdefgh', SECRET, 'a b', 'x'.repeat(40), '-----BEGIN KEY-----\nAAAA\nBBBBBBBBBB\n-----END KEY-----']) {
      const forms = getEncodedForms(value, ALL);
      expect(forms[0]).toEqual({ form: 'value', text: value });
      const rest = forms.slice(1);
      for (const { text } of rest) {
        expect(text.length).toBeGreaterThanOrEqual(8);
        expect(text).not.toBe(value);
      }
      expect(new Set(forms.map(({ text }) => text)).size).toBe(forms.length);
    }
  });

  test('encodings: false keeps only the value and its lines', () => {
    const value = 'line-one-secret\r\nline-two-secret';
    expect(getEncodedForms(value, { minLength: 8, encodings: false }).map(({ form }) => form)).toEqual([
      'value',
      'line[0]',
      'line[1]',
    ]);
  });

  test('a typical token expands to a bounded number of forms', () => {
    const count = getEncodedForms('ghp_0123456789abcdefghijklmnopqrstuvwxyz', ALL).length;
    expect(count).toBeGreaterThanOrEqual(8);
    expect(count).toBeLessThan(40);
  });
});
