/*
 * Text escapings a value picks up on its way through tools: URL encodings (several libraries
 * disagree on which punctuation to escape and on `+` for spaces, and on the case of the hex
 * digits: .NET and some Go and Java code write `%2f`), JSON strings (the styles below, each with
 * its `\uXXXX` escapes in lower and in upper case), XML/HTML entities, and trivial quoting changes.
 */
import { HTML4_NAMES } from './html4-entities';
import type { EncodedForm } from './types';

export function getUriForms(value: string): EncodedForm[] {
  let component: string;
  try {
    component = encodeURIComponent(value);
  } catch {
    // A lone surrogate cannot be percent-encoded; the UTF-8 based forms below still cover it.
    return getSearchParamsForms(value);
  }
  const strict = component.replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  return withLowerHex([
    { form: 'uri-component', text: component },
    { form: 'uri-component-plus', text: component.replace(/%20/g, '+') },
    { form: 'uri-rfc3986', text: strict },
    { form: 'uri-rfc3986-plus', text: strict.replace(/%20/g, '+') },
    // Python's urllib.parse.quote keeps `/` by default.
    { form: 'uri-path', text: strict.replace(/%2F/g, '/') },
    ...getSearchParamsForms(value),
  ]);
}

function getSearchParamsForms(value: string): EncodedForm[] {
  return withLowerHex([{ form: 'uri-form', text: new URLSearchParams([['', value]]).toString().slice(1) }]);
}

/** Each percent-encoded form again with lower-case hex digits (`%2f`). */
function withLowerHex(forms: EncodedForm[]): EncodedForm[] {
  return forms.flatMap((form) => [form, { form: `${form.form}-lower`, text: form.text.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()) }]);
}

/*
 * JSON string styles, by what they spell as `\uXXXX` beyond what JSON.stringify escapes (`"`,
 * `\`, control characters): nothing (JavaScript, Go's SetEscapeHTML(false)); every non-ASCII
 * UTF-16 unit (Python's json.dumps, jq -a, Java and C# ASCII writers); `<`, `>`, `&`, U+2028 and
 * U+2029 (Go's encoding/json, HTML-safe); both; and .NET's default encoder (non-ASCII and
 * `<>&'"+` and the backquote). Each in lower- and upper-case hex; JSON.stringify's own control
 * escapes follow the same case.
 */
const JSON_STYLES: ReadonlyArray<readonly [form: string, escaped: RegExp | null]> = [
  ['json', null],
  ['json-ascii', /[\u0080-\uffff]/g],
  ['json-html', /[<>&\u2028\u2029]/g],
  ['json-html-ascii', /[<>&\u0080-\uffff]/g],
  ['json-dotnet', /[<>&'+`\u0080-\uffff]|\\"/g],
];

export function getJsonForms(value: string): EncodedForm[] {
  const body = JSON.stringify(value).slice(1, -1);
  const forms: EncodedForm[] = [];
  const spell = (char: string): string => `\\u${char.charCodeAt(char.length - 1).toString(16).padStart(4, '0')}`;
  for (const [form, escaped] of JSON_STYLES) {
    const lower = escaped === null ? body : body.replace(escaped, spell);
    // DEL (U+007F) is ASCII, and JSON does not require escaping it: JSON.stringify, Go and
    // Jackson leave it as is, Python's json.dumps (ensure_ascii) and jq (with or without -a)
    // write `\u007f`. Each style in both ways, when the value holds one.
    const spellings = value.includes('\x7f') ? [[form, lower], [`${form}-del`, lower.replace(/\x7f/g, spell)]] : [[form, lower]];
    for (const [name, text] of spellings) {
      forms.push({ form: name, text }, { form: `${name}-upper`, text: text.replace(/\\u[0-9a-f]{4}/g, (escape) => `\\u${escape.slice(2).toUpperCase()}`) });
    }
  }
  return forms;
}

/*
 * HTML/XML escapers agree on `&amp;`, `&lt;` and `&gt;` and disagree on quotes and on how to spell
 * a numeric reference: Python's html.escape writes `&quot;` and `&#x27;`, Go's html.EscapeString
 * and markupsafe `&#34;` and `&#39;`, PHP's htmlspecialchars (ENT_QUOTES) `&quot;` and `&#039;`,
 * lodash, Ruby and .NET `&quot;` and `&#39;`, XML `&quot;` and `&apos;`, Java's escapeHtml4
 * `&quot;` and no `'`; fully numeric encoders use one numbering for every character. Each escaper
 * is consistent within its output, so one spelling per escaper style covers it: the styles below,
 * not every combination of spellings per character (a value holding both quotes would otherwise
 * need dozens). Styles that spell a value the same way collapse into one form (index.ts).
 */
type Spell = (code: number) => string;
const named: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
const decimal: Spell = (code) => `&#${code};`;
const decimalPadded: Spell = (code) => `&#${String(code).padStart(3, '0')};`;
const hexLower: Spell = (code) => `&#x${code.toString(16)};`;
const hexUpper: Spell = (code) => `&#x${code.toString(16).toUpperCase()};`;
const hexCapitalX: Spell = (code) => `&#X${code.toString(16).toUpperCase()};`;

/** A style: how it spells `"` and `'` (undefined: left as is), with `&`, `<` and `>` named. */
const QUOTE_STYLES: ReadonlyArray<readonly [form: string, dquote: string | undefined, squote: string | undefined]> = [
  ['xml-text', undefined, undefined], // Python html.escape(quote=False), xml.sax.saxutils.escape
  ['html-dquote', '&quot;', undefined], // Java escapeHtml4
  ['xml', '&quot;', '&apos;'], // XML, PHP ENT_HTML5
  ['html', '&quot;', '&#39;'], // lodash, escape-html, Ruby CGI, .NET
  ['html-python', '&quot;', '&#x27;'], // Python html.escape
  ['html-php', '&quot;', '&#039;'], // PHP htmlspecialchars ENT_QUOTES
  ['html-go', '&#34;', '&#39;'], // Go html.EscapeString, markupsafe
  ['html-dec0', '&#034;', '&#039;'],
  ['html-hex', '&#x22;', '&#x27;'],
  ['html-hex-X', '&#X22;', '&#X27;'],
];

/** Fully numeric encoders: every escaped character in one numbering. */
const NUMERIC_STYLES: ReadonlyArray<readonly [form: string, spell: Spell]> = [
  ['html-numeric-dec', decimal],
  ['html-numeric-dec0', decimalPadded],
  ['html-numeric-hex', hexLower],
  ['html-numeric-HEX', hexUpper],
  ['html-numeric-X', hexCapitalX],
];

const MARKUP = /[&<>"']/g;
// Go's encoding/xml EscapeText also spells tab, newline and carriage return.
const GO_XML: Record<string, string> = { ...named, '"': '&#34;', "'": '&#39;', '\t': '&#x9;', '\n': '&#xA;', '\r': '&#xD;' };
/*
 * XML attribute values as Python writes them: ElementTree spells `"` and tab, newline and carriage
 * return (`&#09;`, `&#10;`, `&#13;`) and leaves `'`; saxutils.quoteattr spells the three in plain
 * decimal (`&#9;`) and `"` only when the value holds both quotes (it picks the other quote
 * otherwise). Made only for a value that holds one of them.
 */
const ETREE_ATTRIBUTE: Record<string, string> = { ...named, "'": "'", '\t': '&#09;', '\n': '&#10;', '\r': '&#13;' };
const QUOTEATTR: Record<string, string> = { ...named, "'": "'", '\t': '&#9;', '\n': '&#10;', '\r': '&#13;' };
const ATTRIBUTE_WHITESPACE = /[\t\n\r]/;

/*
 * Escapers that also spell characters outside ASCII, each with its own quote style: Java's
 * escapeHtml4 and PHP's htmlentities by the names of HTML 4.01 (`&eacute;`; a character without a
 * name left as is), .NET's WebUtility.HtmlEncode by decimal numbers for U+00A0-U+00FF and for
 * characters outside the Basic Multilingual Plane (`&#233;`), Python's `xmlcharrefreplace` after
 * html.escape (or an XML writer in an ASCII encoding) by decimal numbers for all of them, and the
 * fully numeric encoders in their own numbering. Forms made only for a value that holds such a
 * character.
 */
const NON_ASCII = /[\u0080-\uffff]/;
const byName = (code: number): string | undefined => {
  const name = HTML4_NAMES.get(code);
  return name === undefined ? undefined : `&${name};`;
};
const dotnet = (code: number): string | undefined => ((code >= 0xa0 && code <= 0xff) || code > 0xffff ? decimal(code) : undefined);
const WIDE_STYLES: ReadonlyArray<readonly [form: string, quotes: string, wide: (code: number) => string | undefined]> = [
  ['html4-named-java', 'html-dquote', byName],
  ['html4-named-php', 'html-php', byName],
  ['html-dotnet', 'html', dotnet],
  ['html-python-charref', 'html-python', decimal],
  ['xml-text-charref', 'xml-text', decimal],
];

function spellWide(text: string, wide: (code: number) => string | undefined): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    out += code >= 0x80 ? wide(code) ?? char : char;
  }
  return out;
}

export function getMarkupForms(value: string): EncodedForm[] {
  const markup = /[&<>"'\t\n\r]/.test(value);
  const wide = NON_ASCII.test(value);
  if (!markup && !wide) return [];
  const styled = new Map(QUOTE_STYLES.map(([form, dquote, squote]) => [
    form,
    value.replace(MARKUP, (char) => (char === '"' ? dquote ?? char : char === "'" ? squote ?? char : named[char])),
  ]));
  const forms: EncodedForm[] = markup ? [...styled].map(([form, text]) => ({ form, text })) : [];
  if (markup) {
    for (const [form, spell] of NUMERIC_STYLES) forms.push({ form, text: value.replace(MARKUP, (char) => spell(char.charCodeAt(0))) });
    forms.push({ form: 'xml-go', text: value.replace(/[&<>"'\t\n\r]/g, (char) => GO_XML[char]) });
    if (ATTRIBUTE_WHITESPACE.test(value)) {
      forms.push({ form: 'xml-etree-attribute', text: value.replace(/[&<>"'\t\n\r]/g, (char) => ETREE_ATTRIBUTE[char]) });
      forms.push({ form: 'xml-quoteattr', text: value.replace(/[&<>'\t\n\r]/g, (char) => QUOTEATTR[char]) });
      forms.push({ form: 'xml-quoteattr-both-quotes', text: value.replace(/[&<>"'\t\n\r]/g, (char) => QUOTEATTR[char]) });
    }
  }
  if (wide) {
    for (const [form, quotes, spell] of WIDE_STYLES) forms.push({ form, text: spellWide(styled.get(quotes) as string, spell) });
    // An XML writer in an ASCII encoding spells attribute values as above, with decimal
    // references for what is outside ASCII (ElementTree, minidom, quoteattr with xmlcharrefreplace).
    for (const form of forms.filter((each) => each.form.startsWith('xml-etree') || each.form.startsWith('xml-quoteattr'))) {
      forms.push({ form: `${form.form}-charref`, text: spellWide(form.text, decimal) });
    }
    forms.push({ form: 'xml-attribute-charref', text: spellWide(styled.get('html-dquote') as string, decimal) });
    for (const [form, spell] of NUMERIC_STYLES) {
      forms.push({ form: `${form}-wide`, text: spellWide(value.replace(MARKUP, (char) => spell(char.charCodeAt(0))), spell) });
    }
  }
  return forms;
}

export function getQuoteForms(value: string): EncodedForm[] {
  const forms: EncodedForm[] = [];
  const first = value[0];
  if (value.length >= 2 && (first === '"' || first === "'") && value[value.length - 1] === first) {
    forms.push({ form: 'quotes-trimmed', text: value.slice(1, -1) });
  }
  // How the GitHub runner spells a value passed on a Windows-style command line.
  forms.push({ form: 'cmdline-dquote', text: value.replace(/"/g, '\\"') });
  return forms;
}

/**
 * What a terminal makes of a value typed into it (below). A PTY's own `\n` to `\r\n` (onlcr), and
 * the stripping of escape sequences with `ansi: 'strip'`, are applied to every form in index.ts.
 */
export function getTerminalForms(value: string): EncodedForm[] {
  const forms: EncodedForm[] = [];
  // A value written to a PTY run's input comes back as the terminal echoes it: control
  // characters in caret notation (echoctl: `^A`, `^[`, `^?`), a carriage return read as a line
  // end (icrnl) and every line end echoed as "\r\n".
  if (/[\x00-\x08\x0b-\x1f\x7f\r]/.test(value)) {
    const echoed = value.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, (char) => {
      const code = char.charCodeAt(0);
      if (char === '\n' || char === '\r') return '\r\n';
      return code === 0x7f ? '^?' : `^${String.fromCharCode(code + 64)}`;
    });
    forms.push({ form: 'pty-echo', text: echoed });
  }
  return forms;
}
