/*
 * Property: for any value and any supported quoting context, the rewritten script run by a real
 * shell sees exactly the value at the token's position, never runs anything hidden in it, and
 * never carries it in the script text (so it cannot show up in argv or /proc/PID/cmdline).
 */

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { substituteTokens } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { makeTempDir } from '../helpers/tmp';

const { dir, cleanup } = makeTempDir('execgate-subst-prop-');
const PWNED = join(dir, 'pwned');
afterAll(cleanup);

const isDash = (() => {
  try {
    return readlinkSync('/bin/sh').endsWith('dash');
  } catch {
    return false;
  }
})();

// --- values ------------------------------------------------------------------------------------

// Pieces that mean something to a shell, plus attempts to run a command if the value were parsed.
const FRAGMENTS = [
  "'", '"', '`', '$(', ')', '(', '${x}', '${', '}', '$HOME', '$', '\\', '\\\\', '*', '?', '[', ']', '[a-z]', ' ', '  ',
  '\t', '\n', ';', '&', '&&', '|', '||', '#', '~', '!', '<', '>', '<<', 'EOF', '\nEOF\n', '=', '{a,b}', '%s', '-n', 'ä',
  'é', '€', '🙂', '\u00a0', '\u200b', '\r', 'a', 'Z', '0',
  `$(touch ${PWNED})`, `\`touch ${PWNED}\``, `'; touch ${PWNED} #`, `"; touch ${PWNED} #`, `\ntouch ${PWNED}\n`,
  `)\ntouch ${PWNED}\n(`, `\${x:-$(touch ${PWNED})}`, `$((a[$(touch ${PWNED})]))`, `EOF\ntouch ${PWNED}\nEOF`,
];

const noNul = (text: string): string => text.replace(/\0/g, '');
const valueArbitrary = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 12 }).map((parts) => parts.join('')) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }).map(noNul) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 24 }).map(noNul) },
);
// Plain text around the token; no blanks, so an unquoted word stays one word.
const affix = fc.string({ unit: fc.constantFrom('a', 'b', 'z', '0', '9', '=', ':', '.', ',', '-', '+', '@', '%'), maxLength: 4 });

// --- contexts ----------------------------------------------------------------------------------

interface Context {
  readonly name: string;
  /** Runs under POSIX sh too. */
  readonly posix: boolean;
  /** A command whose output is exactly the word at the token position (or its digest). */
  build(token: string, pre: string, post: string): string;
  expected(value: string, pre: string, post: string): string;
}

const sha256 = (text: string): string => `${createHash('sha256').update(text, 'utf8').digest('hex')}  -\n`;
// Command substitution drops trailing newlines.
const chomp = (text: string): string => text.replace(/\n+$/, '');
const plain = (value: string, pre: string, post: string): string => pre + value + post;
const substituted = (value: string, pre: string, post: string): string => chomp(pre + value + post);

const CONTEXTS: readonly Context[] = [
  { name: 'unquoted alone', posix: true, build: (t) => `printf %s ${t}`, expected: (v) => v },
  { name: 'unquoted with text around', posix: true, build: (t, a, b) => `printf %s ${a}${t}${b}`, expected: plain },
  { name: 'unquoted --token=', posix: true, build: (t) => `printf %s --token=${t}`, expected: (v) => `--token=${v}` },
  { name: 'unquoted, digest', posix: true, build: (t, a, b) => `printf %s x${a}${t}${b}y | sha256sum`, expected: (v, a, b) => sha256(`x${a}${v}${b}y`) },
  { name: 'double-quoted', posix: true, build: (t, a, b) => `printf %s "${a} ${t} ${b}"`, expected: (v, a, b) => `${a} ${v} ${b}` },
  { name: 'single-quoted', posix: true, build: (t, a, b) => `printf %s '${a} $x ${t} "${b}"'`, expected: (v, a, b) => `${a} $x ${v} "${b}"` },
  { name: 'unquoted heredoc', posix: true, build: (t, a, b) => `cat <<EOF | head -c -1 | sha256sum\n${a}${t}${b}\nEOF`, expected: (v, a, b) => sha256(a + v + b) },
  { name: '<<- heredoc', posix: true, build: (t, a, b) => `cat <<-END\n\t${a}${t}${b}\n\tEND\nprintf .`, expected: (v, a, b) => `${a}${v}${b}\n.` },
  { name: 'heredoc with quotes in the body', posix: true, build: (t) => `cat <<EOF\n"${t}" '${t}'\nEOF`, expected: (v) => `"${v}" '${v}'\n` },
  { name: '"$(...)"', posix: true, build: (t, a, b) => `printf %s "$(printf %s ${a}${t}${b})"`, expected: substituted },
  { name: 'unquoted $(...) with "..." inside', posix: true, build: (t, a, b) => `x=$(printf %s "${a}${t}${b}"); printf %s "$x"`, expected: substituted },
  { name: "'...' inside \"$(...)\"", posix: true, build: (t, a, b) => `printf %s "$(printf %s '${a}'${t}'${b}')"`, expected: substituted },
  { name: 'nested $( "$( ... )" )', posix: true, build: (t, a, b) => `printf %s "$(printf %s "$(printf %s "${a}${t}${b}")")"`, expected: substituted },
  { name: 'backquotes', posix: true, build: (t, a, b) => `x=\`printf %s ${a}${t}${b}\`; printf %s "$x"`, expected: substituted },
  { name: 'backquotes inside "..."', posix: true, build: (t, a, b) => `printf %s "\`printf %s \\"${a}${t}${b}\\"\`"`, expected: substituted },
  { name: 'nested backquotes', posix: true, build: (t) => `x=\`printf %s "\\\`printf %s ${t}\\\`"\`; printf %s "$x"`, expected: (v) => chomp(v) },
  { name: '${UNSET:-...}', posix: true, build: (t, a, b) => `printf %s \${UNSET:-${a}${t}${b}}`, expected: plain },
  { name: '"${UNSET:-"..."}"', posix: true, build: (t, a, b) => `printf %s "\${UNSET:-"${a}${t}${b}"}"`, expected: plain },
  { name: 'case in $(...)', posix: true, build: (t) => `printf %s "$(case x in (x) printf %s ${t};; esac)"`, expected: (v) => chomp(v) },
  { name: 'heredoc inside $(...)', posix: true, build: (t, a) => `printf %s "$(cat <<EOF\n${a}${t}\nEOF\n)"`, expected: (v, a) => chomp(`${a}${v}\n`) },
  { name: '<(...)', posix: false, build: (t, a, b) => `cat <(printf %s ${a}${t}${b})`, expected: plain },
  { name: 'here-string', posix: false, build: (t, a, b) => `cat <<<${a}${t}${b} | head -c -1`, expected: plain },
  { name: '[[ == ]] compares literally', posix: false, build: (t) => `x=$(printf '%s.' ${t}); [[ "\${x%.}" == ${t} ]] && printf ok`, expected: () => 'ok' },
];

// --- running -----------------------------------------------------------------------------------

const ENV_NAME = 'EXECGATE_REF_0';
const TOKENS = ['<<secret:api-key>>', '{{decrypt:7f3a/b.c}}'];

function rewrite(command: string): string {
  return substituteTokens(
    command,
    scanTokens(command).map((token) => ({ token, envName: `EXECGATE_REF_${TOKENS.indexOf(token.raw)}` })),
  );
}

function runShell(shell: string, script: string, env: Record<string, string>): string {
  const child = spawnSync(shell, ['-c', script], {
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', ...env },
    cwd: dir,
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (child.status !== 0) throw new Error(`${shell} exited ${child.status}: ${child.stderr}\n--- script ---\n${script}`);
  return child.stdout;
}

function checkNoLeak(script: string, value: string): void {
  // The commands built here are ASCII, so a value holding any other character can only be in the
  // script if substitution put it there. (substituteTokens never receives values; this pins it.)
  if (/[^\x00-\x7f]/.test(value)) expect(script).not.toContain(value);
}

function checkNothingRan(): void {
  const ran = existsSync(PWNED);
  if (ran) rmSync(PWNED);
  expect(ran).toBe(false);
}

function property(shell: string, contexts: readonly Context[], numRuns: number): void {
  fc.assert(
    fc.property(
      fc.constantFrom(...contexts),
      valueArbitrary,
      affix,
      affix,
      fc.constantFrom(...TOKENS),
      (context, value, pre, post, token) => {
        const command = context.build(token, pre, post);
        const script = rewrite(command);
        checkNoLeak(script, value);
        const env = { [`EXECGATE_REF_${TOKENS.indexOf(token)}`]: value };
        expect(runShell(shell, script, env)).toBe(context.expected(value, pre, post));
        checkNothingRan();
      },
    ),
    { numRuns },
  );
}

describe('substituteTokens, property-based, against real shells', () => {
  test('bash sees exactly the value in every supported context', () => {
    property('bash', CONTEXTS, 450);
  });

  (isDash ? test : test.skip)('sh (dash) sees exactly the value in every POSIX context', () => {
    property('sh', CONTEXTS.filter((context) => context.posix), 150);
  });

  test('two tokens in two contexts in one script', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CONTEXTS),
        fc.constantFrom(...CONTEXTS),
        valueArbitrary,
        valueArbitrary,
        (first, second, value0, value1) => {
          const [token0, token1] = TOKENS as [string, string];
          const command = `${first.build(token0, 'a', 'b')}\nprintf '|'\n${second.build(token1, 'c', 'd')}`;
          const script = rewrite(command);
          checkNoLeak(script, value0);
          checkNoLeak(script, value1);
          const out = runShell('bash', script, { EXECGATE_REF_0: value0, EXECGATE_REF_1: value1 });
          expect(out).toBe(`${first.expected(value0, 'a', 'b')}|${second.expected(value1, 'c', 'd')}`);
          checkNothingRan();
        },
      ),
      { numRuns: 100 },
    );
  });

  test('the script never holds the value: a marked value is absent from every rewrite', () => {
    // substituteTokens never receives values; this pins that the script is a function of the
    // command alone, for every context, without spawning anything.
    fc.assert(
      fc.property(fc.constantFrom(...CONTEXTS), valueArbitrary, affix, affix, (context, value, pre, post) => {
        const marked = `\u2603${value}\u2603`;
        const script = rewrite(context.build(TOKENS[0] as string, pre, post));
        expect(script).not.toContain(marked);
        expect(script).not.toContain('\u2603');
        expect(script).toContain(ENV_NAME);
      }),
      { numRuns: 500 },
    );
  });

  test('injection attempts are inert in every context', () => {
    const attempts = FRAGMENTS.filter((fragment) => fragment.includes(PWNED));
    for (const context of CONTEXTS) {
      for (const value of attempts) {
        const command = context.build(TOKENS[0] as string, '', '');
        const script = rewrite(command);
        expect(script).not.toContain(PWNED);
        expect(runShell('bash', script, { [ENV_NAME]: value })).toBe(context.expected(value, '', ''));
        checkNothingRan();
      }
    }
  });
});
