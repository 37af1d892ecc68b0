/*
 * The shell spellings are checked against the real bash: `printf %q` and `${V@Q}` in the C and a
 * UTF-8 locale, for hand-picked awkward values and for generated ones.
 */
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { quoteLikePrintf, Redactor } from '../../src/redact';
import { expectNoLeak } from '../helpers/leak';

const LOCALES = [
  { name: 'C', env: 'C', utf8: false },
  { name: 'UTF-8', env: 'C.UTF-8', utf8: true },
] as const;

/** `printf %q` and `${V@Q}` of each value, from one bash process. */
function quoteWithBash(values: readonly string[], locale: string): Array<{ printfQ: string; atQ: string }> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: locale, N: String(values.length) };
  values.forEach((value, index) => (env[`V${index}`] = value));
  const script = 'for ((i = 0; i < N; i++)); do n=V$i; printf "%q\\0" "${!n}"; printf "%s\\0" "${!n@Q}"; done';
  const output = execFileSync('bash', ['--norc', '--noprofile', '-c', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const fields = output.toString('utf8').split('\0');
  return values.map((_, index) => ({ printfQ: fields[index * 2]!, atQ: fields[index * 2 + 1]! }));
}

const AWKWARD = [
  "it's a \"test\"",
  '$(rm -rf /) `id` ${HOME}',
  '~home=~x:~y #not-a-comment',
  '#starts-with-hash',
  'line1\nline2\r\n\ttabbed',
  '\u001b[31mred\u001b[0m\u0007\b\f\v',
  'x!y{z}[q]^|&;<>?*,',
  "back\\slash'quote",
  'héllo wörld ünïcödé',
  'emoji 😀 and 中文 text',
  'zero\u200bwidth and\u2028separator',
  'c1 control \u0085 here',
  'lone \ud800 surrogate',
  '\u007fdel',
  "'''",
  '%2F+plus=equals',
];

// Characters that stress the quoting rules; `\0` is left out because no environment variable can hold it.
const shellChar = fc.oneof(
  fc.constantFrom(...' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~\t\n\r\u001b\u007f'.split('')),
  fc.constantFrom('a', 'Z', '0', 'é', 'ü', '中', '😀', '\u0001', '\u0085', '\u00a0'),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }).filter((char) => char !== '\0'),
);
const shellValue = fc.array(shellChar, { minLength: 1, maxLength: 24 }).map((chars) => chars.join(''));

describe.each(LOCALES)('bash printf %q in the $name locale', ({ env, utf8 }) => {
  test('hand-picked awkward values are spelled exactly as bash spells them', () => {
    const quoted = quoteWithBash(AWKWARD, env);
    AWKWARD.forEach((value, index) => {
      expect({ value, quoted: quoteLikePrintf(value, utf8) }).toEqual({ value, quoted: quoted[index]!.printfQ });
    });
  });

  test('generated values are spelled exactly as bash spells them', () => {
    fc.assert(
      fc.property(fc.array(shellValue, { minLength: 1, maxLength: 25 }), (values) => {
        const quoted = quoteWithBash(values, env);
        values.forEach((value, index) => expect(quoteLikePrintf(value, utf8)).toBe(quoted[index]!.printfQ));
      }),
      { numRuns: 40 },
    );
  });

  test('the redactor replaces what bash prints for printf %q and ${V@Q}', () => {
    const values = AWKWARD.filter((value) => value.length >= 8);
    const quoted = quoteWithBash(values, env);
    values.forEach((value, index) => {
      const redactor = new Redactor();
      redactor.add(value, 'secret:awkward');
      const { printfQ, atQ } = quoted[index]!;
      expect(redactor.redactString(`x=${printfQ};`).text).toBe('x=[REDACTED:secret:awkward];');
      expectNoLeak(redactor.redactString(atQ).text, [value]);
    });
  });
});

test('a command printing a secret through printf %q in a pipe is redacted in the stream', () => {
  const value = "p'ss $(word) `x` \"y\"";
  const output = execFileSync('bash', ['--norc', '--noprofile', '-c', 'printf "quoted: %q\\n" "$V"; printf "%s\\n" "${V@Q}"'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', V: value },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const redactor = new Redactor();
  redactor.add(value, 'env:V');
  const stream = redactor.createStream();
  const parts = [...output].map((byte) => stream.push(Buffer.from([byte])));
  const text = Buffer.concat([...parts, stream.flush()]).toString('utf8');
  expect(text).toBe("quoted: [REDACTED:env:V]\n'[REDACTED:env:V]'\n");
  expectNoLeak(text, [value]);
});
