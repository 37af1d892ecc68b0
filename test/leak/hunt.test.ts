/*
 * The leak hunt: generated secret values, printed by real shells in the ways commands commonly
 * print things (raw, byte by byte, base64 with and without a newline, base64 after a prefix,
 * hex, URL- and JSON-encoded, inside other text, overlapping, interleaved on stdout and stderr),
 * through the one exec path in sync, PTY and background modes. Every surface an agent or a log
 * can see is checked with the shared leak helper: results, audit records, background output
 * files and status reads, run_bash tool results.
 *
 * Case count (documented in docs/isolation.md, "Redaction"): HUNT_RUNS values x 20 printing methods (PRINTERS, the
 * last one printing four encodings) in sync mode = 4,000 cases, plus 25 byte-by-byte runs, 25
 * PTY runs (3 methods), 15 background runs and 15 run_bash tool runs (20 methods each).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { createGateway, type Gateway } from '../../src/gateway';
import { createDefaultToolRegistry } from '../../src/tools';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { encodingsOf, expectNoLeak } from '../helpers/leak';

export const HUNT_RUNS = 200;

/** Each prints "$V" (the resolved secret) one way; together they form one command. */
export const PRINTERS: ReadonlyArray<[string, string]> = [
  ['raw', 'printf %s "$V"'],
  ['raw-newline', 'echo "$V"'],
  ['inside-text', 'printf "before%safter\\n" "$V"'],
  ['twice', 'printf "%s%s\\n" "$V" "$V"'],
  ['overlapping', 'printf "%s%s\\n" "${V:0:4}" "$V"'],
  ['stderr', 'printf "%s\\n" "$V" >&2'],
  ['interleaved', 'printf %s "${V:0:3}"; printf %s "$V" >&2; printf "%s\\n" "${V:3}"'],
  ['base64', 'printf %s "$V" | base64 -w0; echo'],
  ['base64-newline', 'echo "$V" | base64'],
  ['base64-user-prefix', 'printf "user:%s" "$V" | base64 -w0; echo'],
  ['base64-2-prefix', 'printf "ab%s" "$V" | base64 -w0; echo'],
  ['base64url', 'printf %s "$V" | base64 -w0 | tr "+/" "-_" | tr -d "="; echo'],
  ['hex', 'printf %s "$V" | od -An -v -tx1 | tr -d " \\n"; echo'],
  ['hex-upper', 'printf %s "$V" | od -An -v -tx1 | tr -d " \\n" | tr a-f A-F; echo'],
  ['printf-q', 'printf "%q\\n" "$V"'],
  ['at-Q', 'echo "${V@Q}"'],
  // One interpreter start for four encodings: JSON (ASCII and UTF-8), URL (%20 and +).
  ['json-and-url', 'python3 -c "import json,os,urllib.parse as u; v=os.environ[\'V\']; print(json.dumps(v)); print(json.dumps(v, ensure_ascii=False)); print(u.quote(v, safe=\'\')); print(u.quote_plus(v))"'],
];

const HUNT_COMMAND = ['export V=<<secret:hunt>>', ...PRINTERS.map(([, line]) => line)].join('\n');

/** Secret values: random unicode, printable with shell syntax, newlines, long and short. */
const values = fc.oneof(
  fc.string({ minLength: 8, maxLength: 80, unit: 'grapheme' }),
  fc.string({ minLength: 8, maxLength: 60, unit: fc.constantFrom(...'\'"`$()\\*?[]{};&|<>#!~ \t\nabcXYZ019=-_/:@%+.,') }),
  fc.string({ minLength: 8, maxLength: 400, unit: 'binary' }),
  fc.stringMatching(/^[A-Za-z0-9]{8,12}$/),
  fc.constantFrom('-----BEGIN TEST PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEAu1SU1LfVLPHCozMx\nH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTK\n-----END TEST PRIVATE KEY-----'),
).filter((value) => !value.includes('\0') && value.trim().length >= 8 && [...value].every((c) => c.codePointAt(0)! < 0xd800 || c.codePointAt(0)! > 0xdfff));

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
const seen: string[] = [];

beforeAll(() => {
  tmp = makeTempDir();
  gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv({ LANG: 'C.UTF-8' }), cwd: tmp.dir });
});

afterAll(async () => {
  await gateway.close();
  // The audit log saw every run: not one value, in any spelling.
  expectNoLeak(readFileSync(join(gateway.home, 'audit.log')), seen);
  tmp.cleanup();
});

/** A value that happens to be spelled inside the command text or a marker would be a false alarm. */
function isDistinct(value: string): boolean {
  const context = `${HUNT_COMMAND}[REDACTED:secret:hunt][REDACTED:env:V]`;
  return encodingsOf(value).every((form) => !context.includes(form));
}

describe('leak hunt', () => {
  test(`sync mode: ${HUNT_RUNS} values x ${PRINTERS.length + 3} printing methods, no leak on any result surface`, async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        seen.push(value);
        gateway.refs.set('secret', 'hunt', value);
        const result = await gateway.exec({ command: HUNT_COMMAND });
        expect(result.exitCode).toBe(0);
        expectNoLeak(result, [value]);
        // Every printer fired: each put at least one marker (hex and base64 forms included).
        expect(result.redactions).toBeGreaterThanOrEqual(PRINTERS.length);
      }),
      { numRuns: HUNT_RUNS },
    );
    // A hang guard, not a speed check: 200 sandboxed runs took 400 s beside a CPU hog at load 17.
  }, 900_000);

  test('HTML/XML escaping by real python3 (html.escape both ways, xml.sax.saxutils.escape) is masked whole', async () => {
    const command = 'V=<<secret:html>> python3 -c "import html,os; from xml.sax.saxutils import escape; v=os.environ[\'V\']; print(html.escape(v)); print(html.escape(v, quote=False)); print(escape(v, {chr(39): \'&apos;\', chr(34): \'&quot;\'}))"';
    for (const value of ["it's-a-s3cret-value", 'p"w<d>&\'x\'-long', '"only-double-quotes"']) {
      seen.push(value);
      gateway.refs.set('secret', 'html', value);
      const result = await gateway.exec({ command });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe('[REDACTED:secret:html]\n'.repeat(3));
    }
  });

  test('byte by byte with delays, on both streams', async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value) && value.length <= 40);
        seen.push(value);
        gateway.refs.set('secret', 'hunt', value);
        const command = 'V=<<secret:hunt>>; for ((i=0; i<${#V}; i++)); do printf %s "${V:i:1}"; printf %s "${V:i:1}" >&2; sleep 0.001; done';
        const result = await gateway.exec({ command });
        expectNoLeak(result, [value]);
        expect(result.stdout).toBe('[REDACTED:secret:hunt]');
      }),
      { numRuns: 25 },
    );
  }, 400_000);

  test('pty mode: the terminal stream (\\r\\n line endings) is masked', async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        seen.push(value);
        gateway.refs.set('secret', 'hunt', value);
        const result = await gateway.exec({ command: 'V=<<secret:hunt>>; printf "%s\\n" "$V"; printf %s "$V" | base64 -w0; echo; printf "x%sy\\n" "$V"', mode: 'pty' });
        expectNoLeak(result, [value]);
      }),
      { numRuns: 25 },
    );
  }, 400_000);

  test('background mode: output files and status reads are masked', async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        seen.push(value);
        gateway.refs.set('secret', 'hunt', value);
        const started = await gateway.exec({ command: HUNT_COMMAND, mode: 'background' });
        expectNoLeak(started, [value]);
        await gateway.background.wait(started.id, 20_000);
        expectNoLeak(readFileSync(started.outputPath), [value]);
        expectNoLeak(gateway.background.status(started.id, { offset: 0, length: 1024 * 1024 }), [value]);
        expectNoLeak(gateway.background.status(started.id), [value]);
        expectNoLeak(gateway.background.list(), [value]);
        gateway.background.remove(started.id);
      }),
      { numRuns: 15 },
    );
  }, 400_000);

  test('tool results: run_bash JSON strings are masked', async () => {
    const registry = createDefaultToolRegistry({ gateway, workdir: tmp.dir });
    registry.enableTool('run_bash');
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        seen.push(value);
        gateway.refs.set('secret', 'hunt', value);
        const text = await registry.execute('run_bash', { command: HUNT_COMMAND });
        expect(JSON.parse(text).exit_code).toBe(0);
        expectNoLeak(text, [value]);
      }),
      { numRuns: 15 },
    );
  }, 400_000);
});
