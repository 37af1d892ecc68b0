/*
 * A program that reads code from its standard input, fed by a pipe or another input that a
 * process of the run writes: a token anywhere in the text is refused, before any source is asked
 * for a value. Pipelines into programs that do not read code (`| curl -d @-`, `| base64`) still
 * substitute. Real bash is the oracle for what the plain expansion would have done.
 *
 * Tables list the spellings one by one; two properties generate the rest: a producer of the value,
 * filters that pass it on, wrapper chains in their option spellings (wrapper-spellings.ts) and
 * the ways a command's input can be fed (a pipe, a here-string, a heredoc, `< <(...)`, `>(...)`,
 * a group's redirection, `exec <`, a function's input), ending in a shell that reads code (refused,
 * and bash shows the value would have run) or in a program that reads data (substituted, and bash
 * shows the value does not run). EXECGATE_FUZZ_RUNS raises the count.
 */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { isExecgateError } from '../../src/errors';
import type { RefSource } from '../../src/refs/types';
import { substituteTokens } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { readShell } from '../../src/shell';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { fill, SPELLINGS } from './wrapper-spellings';

const T = '<<secret:x>>';

/** The substituted script (each token as `$V0`), or the context it was refused in. */
function substitute(command: string): { script: string } | { refused: string } {
  const tokens = scanTokens(command);
  try {
    return { script: substituteTokens(command, tokens.map((token) => ({ token, envName: 'V0' })), readShell(command, tokens)) };
  } catch (error) {
    if (isExecgateError(error) && error.code === 'EXECGATE_ERR_REF_UNSAFE_CONTEXT') return { refused: String((error.details as { context: string }).context) };
    throw error;
  }
}

const has = (program: string): boolean => spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;

/**
 * Each text with the program it needs to show the value running (null: bash alone; false: not
 * run here, a reader-only row: a remote or a program that is not installed).
 */
const READERS: ReadonlyArray<readonly [string, string | null | false]> = [
  [`printf %s "${T}" | sh`, null],
  [`printf %s "${T}" | bash`, null],
  [`printf %s "${T}" | dash`, 'dash'],
  [`printf %s "${T}" | zsh`, 'zsh'],
  [`printf %s "${T}" | ksh`, 'ksh'],
  [`printf %s "${T}" | busybox sh`, 'busybox'],
  [`printf %s "${T}" | /bin/sh`, null],
  [`printf %s "${T}" | "sh"`, null],
  [`printf %s "${T}" | s\\h`, null],
  [`printf %s "${T}" | bash -s`, null],
  [`printf %s "${T}" | bash -s -- a b`, null],
  [`printf %s "${T}" | bash /dev/stdin`, null],
  [`printf %s "${T}" | bash /proc/self/fd/0`, null],
  [`printf %s "${T}" | sh -`, null],
  [`printf %s "${T}" | sh -e -u`, null],
  [`printf %s "${T}" | bash +o posix`, null],
  [`printf %s "${T}" | bash +O extglob`, null],
  [`printf %s "${T}" | bash -O extglob`, null],
  [`printf %s "${T}" | bash --norc --noprofile`, null],
  [`printf %s "${T}" | bash -c "$(cat)"`, null],
  [`printf %s "${T}" | sh -c "$(cat /dev/stdin)"`, null],
  [`printf %s "${T}" | bash -c "$(</dev/stdin)"`, null],
  [`printf %s "${T}" | . /dev/stdin`, null],
  [`printf %s "${T}" | . /dev/fd/0`, null],
  [`printf %s "${T}" | source /dev/stdin`, null],
  [`printf %s "${T}" | source -- /proc/self/fd/0`, null],
  [`printf %s "${T}" | builtin source /dev/stdin`, null],
  [`printf %s "${T}" | command . /dev/stdin`, null],
  [`source <(printf %s "${T}")`, null],
  [`. <(printf %s "${T}")`, null],
  [`printf %s "${T}" | bash -c 'source <(cat)'`, null],
  [`printf %s "${T}" | eval "$(cat)"`, null],
  [`printf %s "${T}" | bash -c 'eval "$(cat)"'`, null],
  [`printf '%s\\n' "${T}" | { read -r line; eval "$line"; }`, null],
  [`printf 'import os; os.system(%s)' "'${T}'" | python3`, 'python3'],
  [`printf 'import os; os.system(%s)' "'${T}'" | python3 -`, 'python3'],
  [`printf 'import os; os.system(%s)' "'${T}'" | python3 -u /dev/stdin`, 'python3'],
  [`printf 'require("child_process").execSync(%s)' "'${T}'" | node`, 'node'],
  [`printf 'require("child_process").execSync(%s)' "'${T}'" | node -`, 'node'],
  [`printf 'system(%s)' "'${T}'" | perl`, 'perl'],
  [`printf 'system(%s)' "'${T}'" | ruby`, 'ruby'],
  [`printf 'exec %s\\n' "${T}" | tclsh`, 'tclsh'],
  [`printf %s "${T}" | awk '{system($0)}'`, 'awk'],
  [`printf %s "${T}" | awk '{ print | "sh" }'`, 'awk'],
  [`printf 'BEGIN { system("%s") }' "${T}" | awk -f -`, 'awk'],
  [`printf %s "${T}" | sed e`, 'sed'],
  [`printf %s "${T}" | sed 's/^/:/e'`, 'sed'],
  [`printf %s "${T}" | sed -e 's|^|:|e'`, 'sed'],
  [`printf %s "${T}" | sed -n '1e'`, 'sed'],
  [`printf '.shell %s\\n' "${T}" | sqlite3`, 'sqlite3'],
  [`printf '!%s\\n' "${T}" | ed`, 'ed'],
  [`printf 'shell %s\\n' "${T}" | gdb -q -nx`, 'gdb'],
  [`printf 'shell %s\\n' "${T}" | gdb -q -batch -x /dev/stdin`, false],
  [`printf 'all:\\n\\t%s\\n' "${T}" | make -f -`, 'make'],
  [`printf %s "${T}" | setpriv sh`, 'setpriv'],
  [`printf %s "${T}" | gosu nobody sh`, false],
  [`printf %s "${T}" | docker exec -i box sh`, false],
  [`printf %s "${T}" | kubectl exec -i pod -- bash`, false],
  [`printf %s "${T}" | ssh host`, false],
  [`printf %s "${T}" | Rscript -`, false],
  [`printf %s "${T}" | psql`, false],
  [`sh <<< "${T}"`, null],
  [`bash <<< ${T}`, null],
  [`sh 0<<< "${T}"`, null],
  [`sh <<EOF\n${T}\nEOF`, null],
  [`sh <<-EOF\n\t${T}\n\tEOF`, null],
  [`cat <<EOF | sh\n${T}\nEOF`, null],
  [`python3 <<EOF\nimport os; os.system('${T}')\nEOF`, 'python3'],
  [`python3 - <<< "import os; os.system('${T}')"`, 'python3'],
  [`bash <(printf %s "${T}")`, null],
  [`sh < <(printf %s "${T}")`, null],
  [`sh 0< <(printf %s "${T}")`, null],
  [`printf '%s\\n' "-c" "${T}" | xargs -d '\\n' sh`, null],
  [`printf '%s\\n' "${T}" | xargs -0 sh -c`, null],
  [`printf '%s\\n' "${T}" | xargs -I{} sh -c {}`, null],
  [`printf %s "${T}" | tee >(sh) >/dev/null`, null],
  [`printf %s "${T}" > >(sh)`, null],
  [`{ printf %s "${T}"; } > >(sh)`, null],
  [`exec > >(sh); printf %s "${T}"`, null],
  [`printf %s "${T}" | env sh`, null],
  [`printf %s "${T}" | env -i PATH="$PATH" nice -n 1 timeout 5 sh`, null],
  [`printf %s "${T}" | env --chdir=. sh`, null],
  [`printf %s "${T}" | command sh`, null],
  [`printf %s "${T}" | exec sh`, null],
  [`printf %s "${T}" | nice sh`, null],
  [`printf %s "${T}" | timeout 5 sh`, null],
  [`printf %s "${T}" | nohup sh`, null],
  [`printf %s "${T}" | setsid -w sh`, null],
  [`printf %s "${T}" | stdbuf -o0 sh`, null],
  [`printf %s "${T}" | flock .lock sh`, null],
  [`printf %s "${T}" | time -p sh`, null],
  [`printf %s "${T}" | { ! sh; }`, null],
  [`printf %s "${T}" | find . -maxdepth 0 -exec sh \\;`, null],
  [`printf %s "${T}" | sudo sh`, false],
  [`printf %s "${T}" | sudo -u root -- bash -s`, false],
  [`printf %s "${T}" | doas sh`, false],
  [`printf %s "${T}" | cat | sh`, null],
  [`printf %s "${T}" | base64 | base64 -d | sh`, null],
  [`printf %s "${T}" | rev | rev | sh`, null],
  [`{ printf %s "${T}"; } | sh`, null],
  [`printf %s "${T}" | { cat; } | sh`, null],
  [`printf %s "${T}" | (sh)`, null],
  [`printf %s "${T}" | if true; then sh; fi`, null],
  [`printf %s "${T}" | case x in x) sh;; esac`, null],
  [`printf %s "${T}" | for i in 1; do sh; done`, null],
  [`printf '%s\\n' "${T}" | while read -r line; do sh -c "$line"; done`, null],
  [`printf %s "${T}" | sh -c 'cat | sh'`, null],
  [`printf %s "${T}" | sh -c 'exec sh'`, null],
  [`printf %s "${T}" |\n sh`, null],
  [`printf %s "${T}" |& sh`, null],
  [`printf %s "${T}" 2>&1 | sh`, null],
  [`X=${T}; printf %s "$X" | sh`, null],
  [`X=${T}; sh <<< "$X"`, null],
  [`X=${T}; sh <<EOF\n$X\nEOF`, null],
  [`{ sh; } <<< "${T}"`, null],
  [`{ sh; } < <(printf %s "${T}")`, null],
  [`( sh ) <<< "${T}"`, null],
  [`while true; do sh; break; done < <(printf %s "${T}")`, null],
  [`f() { sh; }; printf %s "${T}" | f`, null],
  [`exec < <(printf %s "${T}"); sh`, null],
  [`exec 3< <(printf %s "${T}"); sh <&3`, null],
  [`coproc sh; printf '%s\\n' "${T}" >&"\${COPROC[1]}"; sleep 1`, null],
  [`coproc S { sh; }; printf '%s\\n' "${T}" >&"\${S[1]}"; sleep 1`, null],
  [`printf %s "${T}" > /dev/null; printenv EXECGATE_REF_0 | sh`, null],
];

/** Pipelines where the value flows into programs that do not read code from it: data. */
const DATA: readonly string[] = [
  `printf %s "${T}" | wc -c`,
  `echo ${T} | base64`,
  `echo "${T}" | grep -c x | wc -c`,
  `printf %s "${T}" | sh -c 'wc -c'`,
  `printf %s "${T}" | bash -c 'cat > /dev/null'`,
  `printf %s "${T}" | python3 -c 'import sys; print(len(sys.stdin.read()))'`,
  `printf %s "${T}" | node -e 'process.stdin.pipe(process.stdout)'`,
  `printf %s "${T}" | perl -ne 'print length'`,
  `printf %s "${T}" | awk '{ print length($0) }'`,
  `printf %s "${T}" | awk -F: '$1 ~ /a|b/ || /c/ { n++ } END { print n + 0 }'`,
  `printf %s "${T}" | awk '/x|y/'`,
  `printf %s "${T}" | sed 's/e/E/g'`,
  `printf %s "${T}" | sed -e 's/a/b/' -e '/x/d'`,
  `printf %s "${T}" | sed --sandbox e`,
  `printf %s "${T}" | xargs printf '%s\\n'`,
  `printf %s "${T}" | sha256sum`,
  `printf %s "${T}" | tee out.txt | wc -c`,
  `printf %s "${T}" | python3 script.py`,
  `printf %s "${T}" | make`,
  `sh -c 'printf %s "$1" | wc -c' _ ${T}`,
  `TOKEN=${T} sh script.sh`,
  `TOKEN=${T} python3`,
  `sh <<'EOF'\necho static\nEOF\necho ${T}`,
  `printf %s "${T}" > out.txt; sh build.sh < input.txt`,
];

/**
 * Not covered: the value is run by a program the text names explicitly, through a file or a
 * named pipe, or by a program's own code. SECURITY.md lists these; each row shows, with real
 * bash, that the value does run, so that the list stays honest.
 */
const NOT_COVERED: ReadonlyArray<readonly [string, string | null]> = [
  [`printf %s "${T}" > run.sh; sh run.sh`, null],
  [`printf %s "${T}" > run.sh; . ./run.sh`, null],
  [`printf %s "${T}" > run.sh; sh < run.sh`, null],
  [`rm -f p; mkfifo p; printf %s "${T}" > p & sh < p`, null],
  [`printf %s "${T}" | python3 -c 'import os, sys; os.system(sys.stdin.read())'`, 'python3'],
  [`printf %s "${T}" | perl -ne 'system $_'`, 'perl'],
];

let tmp: ReturnType<typeof makeTempDir>;
let mark: string;
beforeAll(() => {
  tmp = makeTempDir('execgate-stdin-');
  mark = join(tmp.dir, 'MARK');
});
afterAll(() => tmp.cleanup());

/**
 * Values that create MARK when they run as code: as a shell command, inside a command
 * substitution, as the argument of a program's shell escape (`touch MARK`).
 */
const payloads = (): string[] => [`touch ${mark}`, `$(touch ${mark})`];

/** Runs `script` in real bash with V0 (and EXECGATE_REF_0) holding `value`; whether MARK appeared. */
function runWith(script: string, value: string, settle = 1500): { ran: boolean; status: number | null; stdout: string } {
  rmSync(mark, { force: true });
  const result = spawnSync('bash', ['--norc', '--noprofile', '-c', script], {
    cwd: tmp.dir,
    env: { PATH: process.env.PATH ?? '', HOME: tmp.dir, SHELL: '/bin/sh', V0: value, EXECGATE_REF_0: value },
    stdio: ['ignore', 'pipe', 'ignore'],
    encoding: 'utf8',
    timeout: 20_000,
  });
  // A reader in `>(...)` or a coprocess may still be running when bash exits.
  const until = Date.now() + settle;
  while (!existsSync(mark) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  return { ran: existsSync(mark), status: result.status, stdout: result.stdout ?? '' };
}

/** Whether the plain expansion of the token (what a naive substitution writes) runs some value as code. */
const runsValue = (script: string): boolean => payloads().some((value) => runWith(script, value).ran);
const plainOf = (command: string): string => command.replaceAll(T, '${V0}');

describe('a token that reaches a program reading code from its input is refused', () => {
  test.each(READERS.map(([command, needs]) => [command, needs] as const))('%s', (command, needs) => {
    expect(substitute(command)).toHaveProperty('refused');
    // What a plain expansion would have written, run: the value runs as code.
    if (needs === false || (needs !== null && !has(needs))) return;
    const plain = plainOf(command);
    expect({ plain, ran: runsValue(plain) }).toEqual({ plain, ran: true });
  });
});

describe('pipelines where the value is data still substitute, and run without running it', () => {
  beforeAll(() => {
    writeFileSync(join(tmp.dir, 'script.py'), 'import sys\nsys.stdin.read()\n');
    writeFileSync(join(tmp.dir, 'script.sh'), 'printf %s "$TOKEN" | wc -c\n');
    writeFileSync(join(tmp.dir, 'build.sh'), 'cat\n');
    writeFileSync(join(tmp.dir, 'input.txt'), 'x\n');
    writeFileSync(join(tmp.dir, 'Makefile'), 'all:\n\t@cat > /dev/null\n');
  });
  test.each(DATA.map((command) => [command]))('%s', (command) => {
    const outcome = substitute(command);
    expect(outcome).toHaveProperty('script');
    const script = (outcome as { script: string }).script;
    for (const value of payloads()) expect({ script, value, ran: runWith(script, value, 0).ran }).toEqual({ script, value, ran: false });
  });

  test('the neighbours print what they print of the value', () => {
    const value = `$(touch ${mark})`;
    const run = (command: string): string => {
      const outcome = substitute(command) as { script: string };
      return runWith(outcome.script, value, 0).stdout;
    };
    expect(run(`printf %s "${T}" | wc -c`).trim()).toBe(String(Buffer.byteLength(value)));
    expect(run(`echo ${T} | base64`).trim()).toBe(Buffer.from(`${value}\n`).toString('base64'));
    expect(existsSync(mark)).toBe(false);
  });
});

describe('not covered, and documented: the value runs through a file or a program of the text', () => {
  test.each(NOT_COVERED.map(([command, needs]) => [command, needs] as const))('%s', (command, needs) => {
    expect(substitute(command)).toHaveProperty('script');
    if (needs !== null && !has(needs)) return;
    expect(runsValue(plainOf(command))).toBe(true);
  });
});


const FUZZ = Number(process.env.EXECGATE_FUZZ_RUNS ?? 0);
const RUNS = FUZZ > 0 ? FUZZ : 60;

const producer = fc.constantFrom(`printf %s "${T}"`, `printf '%s\\n' "${T}"`, `echo ${T}`, `echo "${T}"`, `cat <<< "${T}"`, `printf '%s ' ${T}`);
const filters = fc.array(fc.constantFrom('cat', 'tr a a', 'tee /dev/null', 'sed -n p', `awk '{ print }'`, 'base64 | base64 -d', 'rev | rev', 'dd status=none', 'head -c 100000'), { maxLength: 2 });
/**
 * Wrappers that run here and hand their input on: no SCRIPT, no redirection of their own, not xargs
 * (its items are arguments). A chain holds a program once (two flocks on one file wait for each other).
 */
const LINKS = SPELLINGS.filter((spelling) => spelling.runs && ['env', 'nice', 'timeout', 'stdbuf', 'nohup', 'setsid', 'flock', 'chroot'].includes(spelling.program) && !/SCRIPT|</.test(spelling.template));
const wrapped = (inner: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(fc.uniqueArray(fc.constantFrom(...LINKS), { maxLength: 2, selector: (link) => link.program }), inner).map(([links, command]) => links.reduceRight((text, link) => fill(link.template, text), command));
/** Shells that read their script from their input, each in a spelling bash accepts. */
const shellReader = wrapped(fc.constantFrom('sh', 'bash', 'dash', 'bash -s', 'sh -s --', 'bash /dev/stdin', 'sh /proc/self/fd/0', 'sh -', 'bash +o posix', 'bash -O extglob', 'bash --norc', 'sh -e', 'bash -c "$(cat)"', 'sh -c "$(cat /dev/stdin)"'));
const builtinReader = fc.constantFrom('source /dev/stdin', '. /dev/fd/0', 'eval "$(cat)"', 'builtin source /dev/stdin', 'command . /dev/stdin', `awk '{ system($0) }'`, 'sed e');
const reader = fc.oneof({ weight: 3, arbitrary: shellReader }, builtinReader);
const dataReader = wrapped(fc.constantFrom('wc -c', 'base64', 'sha256sum', 'cat > /dev/null', `sh -c 'wc -c'`, `bash -c 'cat > /dev/null'`, `awk '{ print length }'`, `sed 's/a/b/'`, 'grep -c .', 'od -c', 'head -c 3', `xargs printf '%s\\n'`, 'tr -d x', `python3 -c 'import sys; sys.stdin.read()'`));
const around = fc.constantFrom((r: string) => r, (r: string) => `{ ${r}; }`, (r: string) => `( ${r} )`, (r: string) => `if true; then ${r}; fi`, (r: string) => `${r} 2>/dev/null`, (r: string) => `for i in 1; do ${r}; done`);

/** A text that feeds the value to `end`; `async`: `end` may still run when bash exits. */
const fed = (end: fc.Arbitrary<string>): fc.Arbitrary<{ text: string; async: boolean }> =>
  fc.tuple(producer, filters, end, around, fc.nat(7)).map(([make, through, last, wrap, how]) => {
    const source = [make, ...through].join(' | ');
    const r = wrap(last);
    // A redirection of `bash -c "$(cat)"` is not the input of its `$(cat)`, which runs first: a group's is.
    const a = /\$\(cat/.test(last) ? `{ ${r}; }` : r;
    switch (how) {
      case 0: return { text: `${source} | ${r}`, async: false };
      case 1: return { text: `${a} <<< "${T}"`, async: false };
      case 2: return { text: `${a} <<EOF\n${T}\nEOF`, async: false };
      case 3: return { text: `${a} < <(${source})`, async: false };
      case 4: return { text: `${source} > >(${r})`, async: true };
      case 5: return { text: `f() { ${r}; }; ${source} | f`, async: false };
      case 6: return { text: `exec < <(${source}); ${r}`, async: false };
      default: return { text: `{ ${r}; } < <(${source})`, async: false };
    }
  });

describe('properties, with real bash as the oracle', () => {
  test('a generated text that feeds the value to a reader of code is refused, and bash shows the value would have run', () => {
    fc.assert(
      fc.property(fed(reader), ({ text, async }) => {
        expect({ text, outcome: substitute(text) }).toEqual({ text, outcome: { refused: expect.any(String) } });
        const plain = plainOf(text);
        expect({ plain, ran: payloads().some((value) => runWith(plain, value, async ? 1500 : 200).ran) }).toEqual({ plain, ran: true });
      }),
      { numRuns: RUNS },
    );
  });

  test('a generated text that feeds the value to a reader of data substitutes, and the substituted script never runs the value', () => {
    fc.assert(
      fc.property(fed(dataReader), ({ text, async }) => {
        const outcome = substitute(text);
        expect({ text, outcome }).toEqual({ text, outcome: { script: expect.any(String) } });
        const script = (outcome as { script: string }).script;
        for (const value of payloads()) expect({ script, value, ran: runWith(script, value, async ? 300 : 0).ran }).toEqual({ script, value, ran: false });
      }),
      { numRuns: RUNS },
    );
  });
});

describe('a gateway run', () => {
  let gateway: Gateway | undefined;
  let dir: ReturnType<typeof makeTempDir>;
  const asked: string[] = [];
  let value = '';
  const source: RefSource = {
    name: 'recorder',
    kinds: ['secret'],
    lookup: (_kind, id) => {
      asked.push(id);
      return { found: true, value };
    },
  };
  beforeEach(() => {
    dir = makeTempDir('execgate-stdin-gw-');
    asked.length = 0;
    value = `touch ${join(dir.dir, 'MARK')}`;
    gateway = createGateway({ home: join(dir.dir, 'home'), env: baseEnv(), cwd: dir.dir, sources: [source], envSource: false, keyring: false, vault: false, audit: false });
  });
  afterEach(async () => {
    await gateway?.close();
    dir.cleanup();
  });

  test.each([
    [`printf %s "${T}" | sh`],
    [`printf %s "${T}" | sudo sh`],
    [`printf '%s\\n' -c "${T}" | xargs sh`],
    [`printf %s "${T}" | tee >(sh)`],
    [`sh <<< "${T}"`],
  ])('%s is refused before any source is asked, and nothing runs', async (command) => {
    await expect(gateway!.exec({ command })).rejects.toMatchObject({ code: 'EXECGATE_ERR_REF_UNSAFE_CONTEXT' });
    expect(asked).toEqual([]);
    expect(existsSync(join(dir.dir, 'MARK'))).toBe(false);
  });

  test('the same value piped into a program that reads data runs, masked', async () => {
    const result = await gateway!.exec({ command: `printf %s "${T}" | cat; printf %s "${T}" | base64` });
    expect(asked).toEqual(['x']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).not.toContain(value);
    expect(result.stdout).toContain('[REDACTED:secret:x]');
    expect(existsSync(join(dir.dir, 'MARK'))).toBe(false);
  });
});
