/*
 * The leak hunt (hunt.test.ts: sync mode and HTML escapes; hunt-modes.test.ts: byte by byte, PTY,
 * background and tool results; two files so that the suite's workers run them side by side): generated secret values, printed by real shells in the ways commands commonly
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

export const HUNT_COMMAND = ['export V=<<secret:hunt>>', ...PRINTERS.map(([, line]) => line)].join('\n');

/** Secret values: random unicode, printable with shell syntax, newlines, long and short. */
export const values = fc.oneof(
  fc.string({ minLength: 8, maxLength: 80, unit: 'grapheme' }),
  fc.string({ minLength: 8, maxLength: 60, unit: fc.constantFrom(...'\'"`$()\\*?[]{};&|<>#!~ \t\nabcXYZ019=-_/:@%+.,') }),
  fc.string({ minLength: 8, maxLength: 400, unit: 'binary' }),
  fc.stringMatching(/^[A-Za-z0-9]{8,12}$/),
  fc.constantFrom('-----BEGIN TEST PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEAu1SU1LfVLPHCozMx\nH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTK\n-----END TEST PRIVATE KEY-----'),
).filter((value) => !value.includes('\0') && value.trim().length >= 8 && [...value].every((c) => c.codePointAt(0)! < 0xd800 || c.codePointAt(0)! > 0xdfff));


export interface Hunt {
  readonly gateway: Gateway;
  readonly dir: string;
  /** Every value a run was given: the audit log must hold none of them, in any spelling. */
  readonly seen: string[];
}

/** One gateway for a file's hunts (independence between runs is not what they test); the audit log is checked at the end. */
export function useHunt(): Hunt {
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
  return {
    get gateway() {
      return gateway;
    },
    get dir() {
      return tmp.dir;
    },
    seen,
  };
}

/** A value that happens to be spelled inside the command text or a marker would be a false alarm. */
export function isDistinct(value: string): boolean {
  const context = `${HUNT_COMMAND}[REDACTED:secret:hunt][REDACTED:env:V]`;
  return encodingsOf(value).every((form) => !context.includes(form));
}
