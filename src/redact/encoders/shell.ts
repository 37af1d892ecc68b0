/*
 * Shell spellings of a value: what `printf %q` / `${V@Q}` print in bash, the `'\''` single-quote
 * style (and Python shlex's `'"'"'`), and backslash escaping inside double quotes.
 *
 * `printf %q` is locale-dependent: when any character is not printable it switches to ANSI-C
 * `$'...'` quoting, and in the C locale every byte >= 0x80 counts as not printable (printed as an
 * octal escape), while a UTF-8 locale keeps printable multibyte characters as they are. A command
 * may run under either, so both spellings are registered. The rules mirror bash's
 * lib/sh/shquote.c (sh_backslash_quote) and lib/sh/strtrans.c (ansic_quote).
 */
import type { EncodedForm } from './types';

// Characters sh_backslash_quote always escapes.
const BACKSLASH_ESCAPED = new Set(' \t\n!"$&\'()*,;<>?[\\]^`{|}');

const ANSI_C_NAMED: Readonly<Record<number, string>> = {
  0x07: 'a',
  0x08: 'b',
  0x09: 't',
  0x0a: 'n',
  0x0b: 'v',
  0x0c: 'f',
  0x0d: 'r',
  0x1b: 'E',
  0x27: "'",
  0x5c: '\\',
};

// glibc's iswprint in a UTF-8 locale: control characters, unassigned code points (including the
// noncharacters) and the line/paragraph separators are not printable. Unicode versions differ
// between glibc and V8 for recently assigned characters, so this is exact only for those both know.
const NOT_PRINTABLE = /[\p{Cc}\p{Cn}\p{Zl}\p{Zp}]/u;

export function getShellForms(value: string): EncodedForm[] {
  return [
    { form: 'shell-printf-q', text: quoteLikePrintf(value, false) },
    { form: 'shell-printf-q-utf8', text: quoteLikePrintf(value, true) },
    // A C library whose Unicode tables are older than V8's finds recent characters unprintable;
    // most such are outside the BMP (Unicode 15's U+1FAE8, U+1E4D0): written as octal there.
    ...(/[\u{10000}-\u{10ffff}]/u.test(value) ? [{ form: 'shell-printf-q-utf8-bmp', text: quoteLikePrintf(value, true, false) }] : []),
    { form: 'shell-single-quote', text: value.replace(/'/g, "'\\''") },
    { form: 'shell-single-quote-py', text: value.replace(/'/g, `'"'"'`) },
    { form: 'shell-double-quote', text: value.replace(/[\\"$`]/g, '\\$&') },
  ];
}

/** The exact output of bash's `printf %q "$value"` in the C locale, or in a UTF-8 locale. */
export function quoteLikePrintf(value: string, utf8Locale: boolean, astralPrintable = true): string {
  if (value === '') return "''";
  const chars = splitCharacters(value, utf8Locale);
  const printable = (char: string): boolean => isPrintable(char, utf8Locale) && (astralPrintable || (char.codePointAt(0) ?? 0) <= 0xffff);
  if (chars.some((char) => !printable(char))) return quoteAnsiC(chars, utf8Locale, printable);
  return quoteBackslash(chars);
}

/** In the C locale a "character" is a byte; in UTF-8 it is a code point (as its UTF-8 text). */
function splitCharacters(value: string, utf8Locale: boolean): string[] {
  // Round-trip through UTF-8 so lone surrogates become U+FFFD, as they do in the child's env.
  const text = Buffer.from(value, 'utf8').toString('utf8');
  return utf8Locale ? Array.from(text) : Array.from(Buffer.from(text, 'utf8').toString('latin1'));
}

function isPrintable(char: string, utf8Locale: boolean): boolean {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x80) return code >= 0x20 && code !== 0x7f;
  return utf8Locale && !NOT_PRINTABLE.test(char);
}

function quoteBackslash(chars: readonly string[]): string {
  let result = '';
  chars.forEach((char, index) => {
    const previous = chars[index - 1];
    const escaped =
      BACKSLASH_ESCAPED.has(char) ||
      (char === '#' && index === 0) ||
      (char === '~' && (index === 0 || previous === ':' || previous === '='));
    result += escaped ? `\\${char}` : char;
  });
  return result;
}

function quoteAnsiC(chars: readonly string[], utf8Locale: boolean, printable: (char: string) => boolean): string {
  let result = "$'";
  for (const char of chars) {
    const code = char.codePointAt(0) ?? 0;
    const named = ANSI_C_NAMED[code];
    if (named !== undefined) result += `\\${named}`;
    else if (printable(char)) result += char;
    else result += toOctalEscapes(char, utf8Locale);
  }
  return `${result}'`;
}

function toOctalEscapes(char: string, utf8Locale: boolean): string {
  const bytes = utf8Locale ? Buffer.from(char, 'utf8') : Buffer.from(char, 'latin1');
  let result = '';
  for (const byte of bytes) result += `\\${byte.toString(8).padStart(3, '0')}`;
  return result;
}
