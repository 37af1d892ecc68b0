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

// --- random commands ---------------------------------------------------------------------------

/*
 * Commands built from a small shell grammar (quotes, substitutions, backquotes nested with the
 * right escaping, ${...}, heredocs of every kind, case, [[ ]], arithmetic, comments, functions)
 * with the token anywhere. Oracle: for a value with no shell meaning, the rewritten script must
 * print exactly what the command prints with the value pasted in; a refusal is always allowed.
 */
const G = '<<secret:g>>';
// Nest a command in backquotes the POSIX way: escape `\`, `` ` `` and `$` (and `"` inside "...").
const backquoted = (command: string, inDoubleQuotes: boolean): string =>
  '`' + command.replace(/[\\`$]/g, (c) => `\\${c}`).replace(/"/g, inDoubleQuotes ? '\\"' : '"') + '`';
const ARITHMETIC_TEMPLATES = [
  'echo $(( W ))', '(( y = W )); echo $y', 'a[W]=1', 'echo ${a[W]}', 'x=abcdef; echo ${x:W}',
  '[[ W -eq 1 ]] && echo y', 'echo $[ W ]', 'arr=([W]=1)', 'echo "$(( 1 + W ))"', 'echo $(( $(echo W) ))',
];
const grammar = fc.letrec<{ cmd: string; word: string; part: string; dq: string; sq: string; hd: string }>((tie) => ({
  sq: fc.array(fc.constantFrom('a', ' ', G, '"', '$x', '\\', '`', '#', '$(', '}'), { maxLength: 4 }).map((p) => p.join('')),
  dq: fc
    .array(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom('a', ' ', G, G, "'", '\\$', '\\"', '\\\\', '#', '}', ')', '$x', '${x}') },
        { weight: 1, arbitrary: tie('cmd').map((c) => `$(${c})`) },
        { weight: 1, arbitrary: tie('cmd').map((c) => backquoted(c, true)) },
        { weight: 1, arbitrary: tie('dq').map((d) => `\${x:-${d}}`) },
        { weight: 1, arbitrary: tie('dq').map((d) => `\${x:-"${d}"}`) },
      ),
      { maxLength: 4 },
    )
    .map((p) => p.join('')),
  hd: fc
    .array(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom('a', ' ', G, G, "'", '"', '\\$', '\\\\', '#', '\n', '\t', ')', '$x') },
        { weight: 1, arbitrary: tie('cmd').map((c) => `$(${c})`) },
        { weight: 1, arbitrary: tie('cmd').map((c) => backquoted(c, false)) },
      ),
      { maxLength: 5 },
    )
    .map((p) => p.join('')),
  part: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(G, G, 'a', '-', '=', '\\"', "\\'", '\\ ', '~', '*', '{b,c}', '@') },
    { weight: 2, arbitrary: tie('dq').map((d) => `"${d}"`) },
    { weight: 2, arbitrary: tie('sq').map((q) => `'${q}'`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `$(${c})`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => backquoted(c, false)) },
    { weight: 1, arbitrary: tie('word').map((w) => `\${x:-${w}}`) },
    { weight: 1, arbitrary: tie('word').map((w) => `\${x#${w}}`) },
  ),
  word: fc.array(tie('part'), { minLength: 1, maxLength: 3 }).map((p) => p.join('')),
  cmd: fc.oneof(
    { depthSize: 'small' },
    { weight: 5, arbitrary: fc.array(tie('word'), { minLength: 1, maxLength: 3 }).map((w) => `printf '[%s]' ${w.join(' ')}`) },
    { weight: 1, arbitrary: fc.tuple(tie('word'), tie('word'), tie('cmd')).map(([a, p, c]) => `case ${a} in ${p}) ${c};; *) echo no;; esac`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(tie('hd'), fc.constantFrom('<<EOF', '<< EOF', '<<-EOF', "<<'EOF'", '<<"EOF"', '<<\\EOF'))
        .map(([h, op]) => `cat ${op}\n${h}\nEOF\n`),
    },
    { weight: 1, arbitrary: tie('cmd').map((c) => `( ${c} )`) },
    { weight: 1, arbitrary: fc.tuple(tie('cmd'), tie('cmd')).map(([a, b]) => `${a}; ${b}`) },
    { weight: 1, arbitrary: fc.tuple(tie('cmd'), tie('cmd')).map(([a, b]) => `${a}\n${b}`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `${c} | cat`) },
    { weight: 1, arbitrary: fc.tuple(tie('cmd'), tie('sq')).map(([c, q]) => `${c} # ${q.replace(/\n/g, ' ')}\n`) },
    { weight: 1, arbitrary: fc.tuple(tie('word'), tie('word')).map(([a, b]) => `[[ ${a} == ${b} ]] && echo y`) },
    { weight: 1, arbitrary: tie('word').map((w) => `x=${w}; printf '<%s>' "$x"`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `cat <(${c})`) },
    { weight: 1, arbitrary: tie('word').map((w) => `cat <<<${w}`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `f() { ${c}; }; f`) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ARITHMETIC_TEMPLATES), tie('word')).map(([t, w]) => t.replace(/W/g, w)) },
  ),
}));

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
    // A bound on a hang: on a 2-core machine under heavy load a bash can wait seconds to run.
    timeout: 60_000,
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
    property('bash', CONTEXTS, 400);
  });

  (isDash ? test : test.skip)('sh (dash) sees exactly the value in every POSIX context', () => {
    property('sh', CONTEXTS.filter((context) => context.posix), 120);
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
      { numRuns: 80 },
    );
  });

  (existsSync('/proc/self/cmdline') ? test : test.skip)('the running shell has the value in its environment, never in its argv', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CONTEXTS), valueArbitrary, (context, raw) => {
        const value = `\u2603${raw.replace(/\n/g, '')}\u2603`; // a mark no command here contains
        const command = `{ ${context.build(TOKENS[0] as string, '', '')}\n} >/dev/null\ntr '\\0' '\\n' </proc/$$/cmdline; printf '%s\\n' ---; tr '\\0' '\\n' </proc/$$/environ`;
        const [argv, environ] = runShell('bash', rewrite(command), { [ENV_NAME]: value }).split('\n---\n') as [string, string];
        expect(argv).not.toContain(value);
        expect(argv).not.toContain('\u2603');
        expect(environ).toContain(`${ENV_NAME}=${value}`);
      }),
      { numRuns: 60 },
    );
  });

  test('random commands: the rewrite acts like pasting a plain value, and a hostile value never runs', () => {
    const plainValue = '+Vq9+'; // no shell meaning anywhere, and no `..` (which changes how bash parses braces)
    const hostile = `a[$(touch ${PWNED})]\`touch ${PWNED}\`'"$(touch ${PWNED}) *`;
    fc.assert(
      fc.property(grammar.cmd, (command) => {
        const tokens = scanTokens(command).filter((token) => token.raw === G);
        let script: string;
        try {
          script = substituteTokens(command, tokens.map((token) => ({ token, envName: ENV_NAME })));
        } catch (error) {
          expect(error).toMatchObject({ code: 'EXECGATE_ERR_REF_UNSAFE_CONTEXT' });
          return;
        }
        const quiet = (shellScript: string, env: Record<string, string>) =>
          spawnSync('bash', ['-c', shellScript], {
            env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', ...env },
            cwd: dir,
            encoding: 'utf8',
            timeout: 10_000,
            stdio: ['ignore', 'pipe', 'pipe'],
          });
        quiet(script, { [ENV_NAME]: hostile });
        checkNothingRan();
        const rewritten = quiet(script, { [ENV_NAME]: plainValue });
        const pasted = quiet(command.split(G).join(plainValue), {});
        // bash 5.2 itself aborts ("realloc(): invalid next size", SIGABRT) on some deeply nested,
        // escaped backtick commands once they hold an expansion; the generator finds one now and
        // then. A shell that crashed ran nothing (checked above for the hostile value), so such a
        // case says nothing about the rewrite: skip it rather than compare.
        fc.pre(!(rewritten.signal === 'SIGABRT' || rewritten.signal === 'SIGSEGV'));
        expect({ stdout: rewritten.stdout, status: rewritten.status }).toEqual({ stdout: pasted.stdout, status: pasted.status });
      }),
      { numRuns: 150 },
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
