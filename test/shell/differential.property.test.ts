/*
 * Differential tests of the shell reader against real bash and against tree-sitter-bash.
 *
 * A grammar generates commands from compound commands, wrappers, code-running commands and the
 * sinks where bash evaluates a value as code, around marker programs t1..t6 (each one appends its
 * name to a log when it runs). Wrappers also come as chains of up to three, each in one of the
 * option spellings its parser accepts (wrapper-spellings.ts). Real bash is the oracle:
 *   - every marker that ran must be a command the analysis listed, unless the analysis says it is
 *     uncertain (a command bash ran that the policy never saw is a miss);
 *   - with reference tokens holding hostile values (`$(touch MARK)`, backquotes, quotes, newlines,
 *     `a[$(touch MARK)]`), a substituted script must never create MARK.
 * tree-sitter-bash is a second reader: every command name it finds in a confident parse (no error
 * node) must be listed too.
 *
 * Each bash case runs in a PID namespace of its own (bash-oracle.ts): what a case leaves running
 * (a coprocess, a child of a shell killed at the bound) dies with it.
 *
 * The suite runs a bounded number of cases; `npm run fuzz` runs EXECGATE_FUZZ_RUNS (100,000) and
 * prints the count, the time and the misses.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { isExecgateError } from '../../src/errors';
import { substituteTokens } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { readShell, type ShellAnalysis } from '../../src/shell';
import { makeTempDir } from '../helpers/tmp';
import { runBashOracle } from './bash-oracle';
import { fill, fillToken, SPELLINGS } from './wrapper-spellings';

const FUZZ = Number(process.env.EXECGATE_FUZZ_RUNS ?? 0);
const RUNS = FUZZ > 0 ? Math.ceil(FUZZ / 2) : 150;
const TREE_RUNS = FUZZ > 0 ? FUZZ : 1500;
const TOKEN = '<<secret:v>>';
const PROGRAMS = ['t1', 't2', 't3', 't4', 't5', 't6'];

const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

const arg = fc.constantFrom('a', '"b c"', "'d'", '$HOME', 'e=f', '-x');
const program = fc.constantFrom(...PROGRAMS);
const spelled = fc.tuple(program, fc.constantFrom('plain', 'dq', 'bs', 'split', 'path')).map(([name, how]) =>
  how === 'dq' ? `"${name}"` : how === 'bs' ? `\\${name}` : how === 'split' ? `${name[0]}""${name.slice(1)}` : how === 'path' ? `$BIN/${name}` : name,
);
const simple = fc.tuple(spelled, fc.array(arg, { maxLength: 2 })).map(([name, args]) => [name, ...args].join(' '));

/** `nice -n1 timeout -sKILL 5 env -u X t1`: links that run here, innermost last; a script link takes what follows as its script. */
const RUNNABLE = SPELLINGS.filter((spelling) => spelling.runs);
const chain = fc.tuple(fc.array(fc.constantFrom(...RUNNABLE), { minLength: 1, maxLength: 3 }), simple).map(([links, inner]) =>
  links.reduceRight((command, link) => fill(link.template, command), inner),
);

const wrapped = fc.oneof(
  { weight: 4, arbitrary: simple },
  simple.map((s) => `env X=1 ${s}`),
  simple.map((s) => `env -iu X PATH="$PATH" LOG="$LOG" ${s}`),
  simple.map((s) => `nice -n 1 ${s}`),
  simple.map((s) => `timeout -s KILL 5 ${s}`),
  simple.map((s) => `command ${s}`),
  simple.map((s) => `time -p ${s}`),
  simple.map((s) => `! ${s}`),
  simple.map((s) => `bash -c ${quote(s)}`),
  simple.map((s) => `"sh" -c ${quote(s)}`),
  simple.map((s) => `eval ${quote(s)}`),
  simple.map((s) => `find /dev/null -maxdepth 0 -exec ${s} \\;`),
  simple.map((s) => `xargs ${s} </dev/null`),
  simple.map((s) => `env -S ${quote(s)}`),
  simple.map((s) => `X=1 ${s} >/dev/null 2>&1`),
  { weight: 3, arbitrary: chain },
);

const compound: fc.Memo<string> = fc.memo((depth) => {
  if (depth <= 1) return wrapped;
  const inner = compound(depth - 1);
  return fc.oneof(
    { weight: 3, arbitrary: wrapped },
    fc.tuple(inner, inner, fc.constantFrom('; ', ' && ', ' || ', ' | ', '\n')).map(([a, b, op]) => `${a}${op}${b}`),
    inner.map((a) => `{ ${a}; }`),
    inner.map((a) => `(${a})`),
    inner.map((a) => `f() { ${a}; }; f`),
    inner.map((a) => `function g { ${a}; }; g`),
    inner.map((a) => `for ((i=0;i<1;i++)) do ${a}; done`),
    inner.map((a) => `for x in 1; do ${a}; done`),
    inner.map((a) => `select x in 1; do ${a}; break; done <<< 1`),
    inner.map((a) => `case x in (x) ${a};; esac`),
    inner.map((a) => `if true; then ${a}; fi`),
    inner.map((a) => `while true; do ${a}; break; done`),
    inner.map((a) => `echo "$(${a})"`),
    inner.map((a) => `echo \`${a.replace(/[\\`$]/g, '\\$&')}\``),
    inner.map((a) => `cat <<EOF\n$(${a})\nEOF`),
    inner.map((a) => `coproc c { ${a}; }; wait`),
    inner.map((a) => `coproc ${a}; wait`),
  );
});

/** Places where a token could be handed to bash's parser or evaluator. */
const sink = fc.constantFrom(
  `declare -i n; n=${TOKEN}`,
  `typeset -i n; n=${TOKEN}`,
  `declare -a arr=${TOKEN}`,
  `arr=(1); declare arr=${TOKEN}`,
  `X=${TOKEN}; echo $((X))`,
  `echo $((${TOKEN}))`,
  `X=${TOKEN}; [[ X -eq 1 ]]`,
  `[[ ${TOKEN} -eq 1 ]]`,
  `let x=${TOKEN}`,
  `a[${TOKEN}]=1`,
  `echo \${!${TOKEN}}`,
  `X=${TOKEN}; echo \${!X}`,
  `eval echo ${TOKEN}`,
  `bash -c ${TOKEN}`,
  `"sh" -c ${TOKEN}`,
  `\\sh -c ${TOKEN}`,
  `s""h -c ${TOKEN}`,
  `$SH -c ${TOKEN}`,
  `$(echo sh) -c ${TOKEN}`,
  `env -S ${TOKEN}`,
  `compgen -W ${TOKEN}`,
  `printf -v ${TOKEN} %s x`,
  `read ${TOKEN} </dev/null`,
  `mapfile -C ${TOKEN} -c 1 arr <<< x`,
  `trap ${TOKEN} EXIT`,
  `PS4=${TOKEN}; set -x; :`,
  `export PS4=${TOKEN}; set -x; :`,
  `shopt -s expand_aliases; alias z=${TOKEN}\nz`,
  `declare -n r=${TOKEN}; echo $r`,
  `RANDOM=${TOKEN}`,
  `bash <<< ${TOKEN}`,
  `sh <<EOF\n${TOKEN}\nEOF`,
  `echo ${TOKEN}`,
  `echo "${TOKEN}"`,
  `echo '${TOKEN}'`,
  `cat <<EOF\n${TOKEN}\nEOF`,
  `bash -c 'echo "$1"' _ ${TOKEN}`,
);
/** Data positions, where the value must arrive intact and run nothing. */
/** A reference where a wrapper in any spelling hands it to a shell as a script, or to its command as an argument. */
const wrappedToken = fc.constantFrom(...RUNNABLE).map((link) => fillToken(link.template, TOKEN));
const data = fc.constantFrom(`echo ${TOKEN}`, `echo "${TOKEN}"`, `echo '${TOKEN}'`, `t1 ${TOKEN}`, `export T=${TOKEN}; t2 "$T"`, `cat <<EOF\n${TOKEN}\nEOF`, `bash -c 't3 "$1"' _ ${TOKEN}`, `env X=${TOKEN} t4`, `echo \${X:-${TOKEN}}`);
const withToken = fc.tuple(fc.option(compound(2)), fc.oneof(sink, data, wrappedToken), fc.constantFrom('; ', '\n', ' && ')).map(([a, s, op]) => (a === null ? s : `${a}${op}${s}`));

const hostile = (mark: string): string[] => [
  `$(touch ${mark})`,
  `\`touch ${mark}\``,
  `a[$(touch ${mark})]`,
  `'; touch ${mark} #`,
  `"; touch ${mark}; "`,
  `\ntouch ${mark}\n`,
  `x[\`touch ${mark}\`]`,
  `() { touch ${mark}; }`,
  `\${x[$(touch ${mark})]}`,
];

let tmp: ReturnType<typeof makeTempDir>;
let bin: string;
let mark: string;
const misses: string[] = [];

beforeAll(() => {
  tmp = makeTempDir('execgate-diff-');
  bin = join(tmp.dir, 'bin');
  mkdirSync(bin);
  mark = join(tmp.dir, 'MARK');
  for (const name of PROGRAMS) {
    writeFileSync(join(bin, name), `#!/bin/sh\necho ${name} >> "$LOG"\n`);
    chmodSync(join(bin, name), 0o755);
  }
  // The oracle runs: a namespace that could not be made would run nothing, and every case would pass.
  expect(runBash('t1; t2 | t3', '')).toEqual(expect.arrayContaining(['t1', 't2', 't3']));
});
afterAll(() => {
  tmp.cleanup();
  if (FUZZ > 0) process.stdout.write(`differential misses: ${misses.length}\n${misses.slice(0, 20).join('\n')}\n`);
});

let cases = 0;

function runBash(script: string, value: string): string[] {
  // A log per case: a process a case left behind (a coprocess, a killed shell's child) cannot
  // write into the next case's log.
  const log = join(tmp.dir, `log-${(cases += 1)}`);
  runBashOracle(script, {
    cwd: tmp.dir,
    env: { PATH: `${bin}:${process.env.PATH ?? ''}`, LOG: log, BIN: bin, SH: 'sh', HOME: tmp.dir, V0: value },
    timeoutMs: 10_000,
  });
  const ran = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  rmSync(log, { force: true });
  return ran;
}

function listedNames(analysis: ShellAnalysis): Set<string> {
  return new Set(analysis.commands.flatMap((command) => {
    const first = command.words[0];
    return first && !first.dynamic ? [first.text.slice(first.text.lastIndexOf('/') + 1)] : [];
  }));
}

function checkListed(command: string, analysis: ShellAnalysis, ran: readonly string[]): void {
  if (analysis.uncertain.length > 0) return;
  const listed = listedNames(analysis);
  const missed = ran.filter((name) => !listed.has(name) && !listed.has(`$BIN/${name}`));
  if (missed.length > 0) {
    misses.push(`ran ${missed.join(',')} unlisted: ${JSON.stringify(command)}`);
    throw new Error(`bash ran ${missed.join(', ')}, which the analysis of ${JSON.stringify(command)} does not list (${[...listed].join(', ')})`);
  }
}

describe('the shell reader against real bash', () => {
  test('every command bash runs is listed, unless the analysis says it is uncertain', () => {
    fc.assert(
      fc.property(compound(3), (command) => {
        // `$BIN/t1` names the program by a path: the listed word is dynamic, so it is uncertain.
        const analysis = readShell(command);
        checkListed(command, analysis, runBash(command, ''));
      }),
      { numRuns: RUNS },
    );
  });

  test('a hostile value never runs as code, and what runs is listed', () => {
    let substituted = 0;
    fc.assert(
      fc.property(withToken, fc.nat(), (command, pick) => {
        const values = hostile(mark);
        const value = values[pick % values.length] as string;
        const tokens = scanTokens(command);
        const analysis = readShell(command, tokens);
        let script: string;
        try {
          script = substituteTokens(command, tokens.map((token) => ({ token, envName: 'V0' })), analysis);
        } catch (error) {
          if (isExecgateError(error) && error.code === 'EXECGATE_ERR_REF_UNSAFE_CONTEXT') return;
          throw error;
        }
        substituted += 1;
        rmSync(mark, { force: true });
        const ran = runBash(script, value);
        if (existsSync(mark)) {
          misses.push(`value ran: ${JSON.stringify(command)} value ${JSON.stringify(value)}`);
          throw new Error(`the value ${JSON.stringify(value)} ran as code in ${JSON.stringify(script)}`);
        }
        checkListed(command, analysis, ran);
      }),
      { numRuns: RUNS },
    );
    // Not everything is refused: the data positions of the grammar do run.
    expect(substituted).toBeGreaterThan(RUNS / 10);
  });
});

describe('the shell reader against tree-sitter-bash', () => {
  // web-tree-sitter loads its WebAssembly through a dynamic import, which jest's module sandbox
  // does not run, so a plain node child parses the generated commands.
  const PARSER = `
    const { Parser, Language } = require('web-tree-sitter');
    const { readFileSync, writeFileSync } = require('node:fs');
    (async () => {
      await Parser.init();
      const parser = new Parser();
      parser.setLanguage(await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm')));
      const out = JSON.parse(readFileSync(process.argv[1], 'utf8')).map((text) => {
        const tree = parser.parse(text);
        // Where tree-sitter reads differently from bash it is not counted as confident: it takes
        // \`time -p\` and \`coproc\` as command names (and misreads what follows coproc), \`$((a b))\`
        // as a command substitution (bash: arithmetic, an error, nothing runs), and it ends a
        // heredoc at a line that only starts with the delimiter. Inside an old-style (backquoted)
        // substitution bash removes one level of backslashes before it reads the text, so a doubled
        // backslash before ; leaves a quoted ; there, and what follows is an argument; tree-sitter
        // does not, reads the ; as a separator and the next word as a command.
        const names = tree.rootNode.descendantsOfType('command_name').map((node) => node.text).filter((name) => /^[A-Za-z0-9_.-]+$/.test(name) && !['time', 'coproc', 'function', 'select'].includes(name));
        const misread = /\\bcoproc\\b|\\nEOF[^\\n]/.test(text) || tree.rootNode.descendantsOfType('command_substitution').some((node) => node.text.startsWith('$((') || (node.text.startsWith('\`') && node.text.includes('\\\\')));
        const result = { hasError: tree.rootNode.hasError || misread, names };
        tree.delete();
        return result;
      });
      writeFileSync(process.argv[2], JSON.stringify(out));
    })();
  `;

  test('every command name in a confident tree-sitter parse is listed', () => {
    const commands = fc.sample(fc.oneof(compound(3), withToken), { numRuns: TREE_RUNS });
    const input = join(tmp.dir, 'commands.json');
    const output = join(tmp.dir, 'trees.json');
    writeFileSync(input, JSON.stringify(commands));
    const child = spawnSync(process.execPath, ['-e', PARSER, input, output], { cwd: join(__dirname, '..', '..'), encoding: 'utf8', timeout: 600_000 });
    expect(child.stderr).toBe('');
    const trees = JSON.parse(readFileSync(output, 'utf8')) as Array<{ hasError: boolean; names: string[] }>;
    let confident = 0;
    const found: string[] = [];
    commands.forEach((command, index) => {
      const tree = trees[index]!;
      if (tree.hasError) return;
      confident += 1;
      const analysis = readShell(command, scanTokens(command));
      if (analysis.uncertain.length > 0) return;
      const listed = listedNames(analysis);
      const missed = tree.names.filter((name) => !listed.has(name));
      if (missed.length > 0) found.push(`tree-sitter ${missed.join(',')}: ${JSON.stringify(command)}`);
    });
    misses.push(...found);
    expect(found).toEqual([]);
    expect(confident).toBeGreaterThan(TREE_RUNS / 4);
  });
});
