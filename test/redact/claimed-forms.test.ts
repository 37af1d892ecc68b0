/*
 * The spellings SECURITY.md claims, written by the programs that write them where they are
 * installed here (coreutils base64, openssl, Python, jq, bash), and the spellings it does not
 * claim, each shown going the way SECURITY.md says: masked, or passed through as is.
 */
import { execFileSync } from 'node:child_process';
import { Redactor } from '../../src/redact';

const VALUE = 'sk-live-7Hq2#x9<Zr>&é/Kp';

function redactor(value = VALUE): Redactor {
  const masker = new Redactor();
  masker.add(value, 'secret:v');
  return masker;
}

/** Stream `text` through a fresh stream in chunks of `size` bytes. */
function streamed(masker: Redactor, text: string | Buffer, size: number): { text: string; count: number } {
  const input = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  const stream = masker.createStream();
  const out: Buffer[] = [];
  for (let at = 0; at < input.length; at += size) out.push(stream.push(input.subarray(at, at + size)));
  out.push(stream.flush());
  return { text: Buffer.concat(out).toString('utf8'), count: stream.count };
}

const run = (program: string, args: string[], input: string | Buffer): string => execFileSync(program, args, { input, encoding: 'utf8' });
const joined = (text: string): string => text.replace(/[\r\n]/g, '');

/** The base64 characters that depend on the value's bits only, for the value at byte `offset` of the input. */
function core(input: Buffer, offset: number, value = VALUE): string {
  const encoded = input.toString('base64');
  return encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + Buffer.byteLength(value)) * 8) / 6));
}

describe('Why 3: base64 as encoders wrap it', () => {
  test('`{ printf "%045d" 0; printf %s VALUE; } | base64`: the value across the 76-column break is masked', () => {
    const output = execFileSync('bash', ['-c', '{ printf "%045d" 0; printf %s "$V"; } | base64'], { encoding: 'utf8', env: { PATH: process.env.PATH, V: VALUE } });
    const input = Buffer.concat([Buffer.from('0'.repeat(45)), Buffer.from(VALUE)]);
    // Unmasked before: the encoded value is there, across the line break.
    expect(joined(output)).toContain(core(input, 45));
    const masked = redactor().redactString(output);
    expect(masked.count).toBeGreaterThan(0);
    expect(joined(masked.text)).not.toContain(core(input, 45));
  });

  test.each([45, 46, 47, 48, 49, 50])('Python base64.encodebytes with the value at offset %i', (offset) => {
    const output = run('python3', ['-c', `import base64,sys; sys.stdout.write(base64.encodebytes(b"0"*${offset} + sys.stdin.buffer.read()).decode())`], VALUE);
    const input = Buffer.concat([Buffer.from('0'.repeat(offset)), Buffer.from(VALUE)]);
    expect(joined(output)).toContain(core(input, offset));
    for (const size of [1, 7, 64, 4096]) expect(joined(streamed(redactor(), output, size).text)).not.toContain(core(input, offset));
  });

  test.each([0, 1, 2, 13, 31, 47, 62, 63, 64, 65])('openssl base64 (64 columns) with the value at offset %i', (offset) => {
    const input = Buffer.concat([Buffer.alloc(offset, 0x41), Buffer.from(VALUE)]);
    const output = run('openssl', ['base64'], input);
    expect(joined(streamed(redactor(), output, 5).text)).not.toContain(core(input, offset));
  });

  test('every width from 4 to 128, LF, CRLF and CR CR LF (a CRLF on a terminal), every offset of a 3-byte group, standard and URL-safe, padded or not', () => {
    const masker = redactor();
    for (const prefix of ['', 'u', 'us', 'user:', '0'.repeat(45)]) {
      const input = Buffer.from(prefix + VALUE + '\n');
      for (const encode of [(bytes: Buffer) => bytes.toString('base64'), (bytes: Buffer) => bytes.toString('base64url'), (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '')]) {
        const encoded = encode(input);
        for (let width = 4; width <= 128; width++) {
          for (const eol of ['\n', '\r\n', '\r\r\n']) {
            const wrapped = `data: ${encoded.replace(new RegExp(`.{${width}}`, 'g'), `$&${eol}`)}${eol}done${eol}`;
            const stable = encode(input).slice(Math.ceil((Buffer.byteLength(prefix) * 8) / 6), Math.floor(((Buffer.byteLength(prefix) + Buffer.byteLength(VALUE)) * 8) / 6));
            expect(joined(masker.redactString(wrapped).text)).not.toContain(stable);
          }
        }
      }
    }
  });
});

describe('Why 4: the JSON and URL spellings other encoders write', () => {
  test('Go\'s HTML-safe escapes \\u003c \\u003e \\u0026', () => {
    const go = JSON.stringify(VALUE).replace(/[<>&]/g, (char) => `\\u00${char.charCodeAt(0).toString(16)}`);
    expect(go).toContain('\\u003c');
    const masked = redactor().redactString(`{"token":${go}}`);
    expect(masked.text).toBe('{"token":"[REDACTED:secret:v]"}');
  });

  test('\\u00E9 with upper-case hex (Java, .NET), and lower-case as Python and jq write it', () => {
    const python = run('python3', ['-c', 'import json,sys; sys.stdout.write(json.dumps(sys.stdin.read()))'], VALUE);
    const jq = run('jq', ['-a', '-R', '.'], VALUE).trim();
    expect(python).toContain('\\u00e9');
    const upper = python.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => `\\u${hex.toUpperCase()}`);
    for (const text of [python, jq, upper]) expect(redactor().redactString(text).text).toBe('"[REDACTED:secret:v]"');
  });

  test('%2f: percent-encoding in lower case, as .NET writes it', () => {
    const python = run('python3', ['-c', 'import urllib.parse,sys; sys.stdout.write(urllib.parse.quote(sys.stdin.read(), safe=""))'], VALUE);
    expect(python).toContain('%2F');
    for (const text of [python, python.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())]) {
      expect(redactor().redactString(`https://x.example/?t=${text}`).text).toBe('https://x.example/?t=[REDACTED:secret:v]');
    }
  });
});

describe('HTML and XML escapers that also spell characters outside ASCII', () => {
  const WIDE = 'Café<Crème>&Brûlée42 ∑ 😀';
  const py = (code: string): string => run('python3', ['-c', `import sys, html, html.entities as E, xml.etree.ElementTree as ET\ns = sys.stdin.read()\n${code}`], WIDE);

  test.each([
    ['Python html.escape with xmlcharrefreplace', 'sys.stdout.write(html.escape(s).encode("ascii", "xmlcharrefreplace").decode())', '&#233;'],
    ['Python html.escape(quote=False) with xmlcharrefreplace', 'sys.stdout.write(html.escape(s, quote=False).encode("ascii", "xmlcharrefreplace").decode())', '&#233;'],
    ['an XML writer in an ASCII encoding (ElementTree, us-ascii: the element\'s text)', 'e = ET.Element("t"); e.text = s; x = ET.tostring(e, encoding="us-ascii").decode(); sys.stdout.write(x[x.index("<t>") + 3:x.rindex("</t>")])', '&#233;'],
    // Java's escapeHtml4 and PHP's htmlentities write the HTML 4.01 names (the table Python keeps as html.entities).
    ['escapeHtml4 (HTML 4.01 names, &quot;)', 'm = {"<":"&lt;",">":"&gt;","&":"&amp;",chr(34):"&quot;"}\nsys.stdout.write("".join(m.get(c) or ("&%s;" % E.codepoint2name[ord(c)] if ord(c) >= 160 and ord(c) in E.codepoint2name else c) for c in s))', '&eacute;'],
    ['htmlentities ENT_QUOTES (HTML 4.01 names, &#039;)', 'm = {"<":"&lt;",">":"&gt;","&":"&amp;",chr(34):"&quot;","\x27":"&#039;"}\nsys.stdout.write("".join(m.get(c) or ("&%s;" % E.codepoint2name[ord(c)] if ord(c) >= 160 and ord(c) in E.codepoint2name else c) for c in s))', '&sum;'],
    // .NET's WebUtility.HtmlEncode: U+00A0-U+00FF and characters outside the BMP as decimal numbers.
    ['WebUtility.HtmlEncode', 'm = {"<":"&lt;",">":"&gt;","&":"&amp;",chr(34):"&quot;","\x27":"&#39;"}\nsys.stdout.write("".join(m.get(c) or ("&#%d;" % ord(c) if 160 <= ord(c) <= 255 or ord(c) > 0xffff else c) for c in s))', '&#128512;'],
    ['a fully numeric encoder (hex)', 'sys.stdout.write("".join("&#x%x;" % ord(c) if c in "<>&" + chr(34) + chr(39) or ord(c) > 127 else c for c in s))', '&#xe9;'],
  ])('%s', (_name, code, spelled) => {
    const output = py(code);
    expect(output).toContain(spelled);
    const masker = redactor(WIDE);
    expect(masker.redactString(`<p>${output}</p>`).text).toBe('<p>[REDACTED:secret:v]</p>');
    expect(streamed(masker, `<p>${output}</p>`, 3).text).toBe('<p>[REDACTED:secret:v]</p>');
  });
});

describe('DEL in JSON, and XML attributes as Python writes them', () => {
  test('a value holding DEL (U+007F): Python\'s json.dumps and jq write \\u007f; JSON.stringify leaves it', () => {
    const value = 'del\x7fcharSecret1';
    const python = run('python3', ['-c', 'import json,sys; sys.stdout.write(json.dumps(sys.stdin.read()))'], value);
    const jq = run('jq', ['-R', '.'], value).trim();
    const jqAscii = run('jq', ['-a', '-R', '.'], value).trim();
    expect(python).toContain('\\u007f');
    expect(jq).toContain('\\u007f');
    const upper = python.replace('\\u007f', '\\u007F');
    for (const text of [python, jq, jqAscii, upper, JSON.stringify(value)]) {
      expect(redactor(value).redactString(`{"k":${text}}`).text).toBe('{"k":"[REDACTED:secret:v]"}');
      expect(streamed(redactor(value), `{"k":${text}}`, 2).text).toBe('{"k":"[REDACTED:secret:v]"}');
    }
  });

  test.each([
    ['ElementTree attribute (&#09; &#10; &#13;, &quot;)', 'import sys, xml.etree.ElementTree as ET\ne = ET.Element("t", k=sys.stdin.read()); sys.stdout.write(ET.tostring(e).decode())'],
    ['saxutils.quoteattr (&#9;)', 'import sys; from xml.sax.saxutils import quoteattr; sys.stdout.write("<t k=" + quoteattr(sys.stdin.read()) + " />")'],
  ])('%s', (_name, code) => {
    for (const value of ['tab\tsecret-value-1', 'two\nlines & <tags> here', 'both "quotes" and \'these\'\tx', 'cr\rinside-this-value']) {
      const output = run('python3', ['-c', code], value);
      expect(output).toMatch(/&#0?(9|10|13);/);
      const masked = redactor(value).redactString(output).text;
      expect(masked).toMatch(/^<t k=["']\[REDACTED:secret:v\]["'] \/>$/);
    }
  });
});

describe('what a program gets: a lone surrogate, and characters newer than the C library', () => {
  test('a value holding a lone surrogate reaches a program as U+FFFD: its JSON, character references and URL encoding are of that text', () => {
    const value = 'ccYb\ud800ZX91 ZacaX0XbcY0Zc01b';
    const received = Buffer.from(value, 'utf8').toString('utf8');
    const python = run('python3', ['-c', 'import json,sys; sys.stdout.write(json.dumps(sys.stdin.read()))'], received);
    const charref = run('python3', ['-c', 'import html,sys; sys.stdout.write(html.escape(sys.stdin.read()).encode("ascii","xmlcharrefreplace").decode())'], received);
    expect(python).toContain('\\ufffd');
    expect(charref).toContain('&#65533;');
    for (const text of [python.slice(1, -1), charref, encodeURIComponent(received), received]) {
      expect(redactor(value).redactString(`<${text}>`).text).toBe('<[REDACTED:secret:v]>');
    }
  });

  test('printf %q in a UTF-8 locale, a character outside the BMP the C library may not know beside one it does (é)', () => {
    for (const value of ['s3cret vé\u{1FAE8}lue!', 's3cret vé\u{1E4D0}lue!', 'plain\u{1F600}emoji-value']) {
      const output = execFileSync('bash', ['--norc', '-c', 'printf %q "$V"'], { encoding: 'utf8', env: { PATH: process.env.PATH, V: value, LC_ALL: 'C.UTF-8' } });
      expect(redactor(value).redactString(`[${output}]`).text).toBe('[[REDACTED:secret:v]]');
    }
  });
});

describe('XML attributes in an ASCII encoding, and derived forms measured in bytes', () => {
  test.each([
    ['ElementTree attribute, us-ascii', 'import sys, xml.etree.ElementTree as ET\ne = ET.Element("a", b=sys.stdin.read()); sys.stdout.write(ET.tostring(e, encoding="us-ascii").decode().split("\\n")[-1])'],
    ['minidom attribute, ascii', 'import sys, xml.dom.minidom as M\nd = M.Document(); e = d.createElement("a"); e.setAttribute("b", sys.stdin.read()); sys.stdout.write(e.toxml(encoding="ascii").decode())'],
    ['minidom text, ascii', 'import sys, xml.dom.minidom as M\nd = M.Document(); e = d.createElement("a"); e.appendChild(d.createTextNode(sys.stdin.read())); sys.stdout.write(e.toxml(encoding="ascii").decode())'],
    ['quoteattr with xmlcharrefreplace', 'import sys; from xml.sax.saxutils import quoteattr\nsys.stdout.write("<a b=" + quoteattr(sys.stdin.read()).encode("ascii", "xmlcharrefreplace").decode() + " />")'],
  ])('%s', (_name, code) => {
    for (const value of ['café"\'<x>&secret1', 'tab\tcafévalue', 'both "quotes" and \'é\' here']) {
      const output = run('python3', ['-c', code], value);
      expect(output).toMatch(/&#\d+;/);
      const masked = redactor(value).redactString(output).text;
      expect(masked).toContain('[REDACTED:secret:v]');
      expect(masked).not.toMatch(/caf|secret1|cafévalue|quotes/);
    }
  });

  test('a quoted value of non-ASCII characters: its trimmed form is 14 bytes though 7 characters, and is masked', () => {
    expect(redactor('"ééééééé"').redactString('[ééééééé]').text).toBe('[[REDACTED:secret:v]]');
  });
});

describe('spellings SECURITY.md does not claim pass through unmasked', () => {
  const value = 'plain-secret-value-42';
  const quoted = 'pa"ss\\word-secret-42';
  const cases: Array<[string, string, string]> = [
    ['base32', value, run('base32', ['-w0'], value)],
    ['rot13', value, value.replace(/[a-z]/gi, (char) => String.fromCharCode(((char.toLowerCase().charCodeAt(0) - 97 + 13) % 26) + (char < 'a' ? 65 : 97)))],
    ['reversed', value, [...value].reverse().join('')],
    ['one character per line', value, [...value].join('\n')],
    ['hex with separators (xxd)', value, run('xxd', [], value)],
    ['the value without its first character (${V:1})', value, value.slice(1)],
    ['JSON escaping applied twice', quoted, JSON.stringify(JSON.stringify(quoted))],
    ['base64 of base64', value, Buffer.from(Buffer.from(value).toString('base64')).toString('base64')],
    ['gzip, then base64', value, run('bash', ['-c', 'gzip -c | base64 -w0'], value)],
  ];
  test.each(cases)('%s', (_form, secret, text) => {
    expect(redactor(secret).redactString(text)).toEqual({ text, count: 0 });
  });
});
