/*
 * Programs that run another command or a script, in every option spelling their parsers accept
 * (wrapper-spellings.ts), against the reader and, where the program is installed and ends on its
 * own, against real bash with a recorder program `t1` on PATH:
 *   - the wrapped command is listed, so rules see it, and bash does run it;
 *   - a reference in the wrapped command's arguments is data and is substituted; a reference in
 *     a script the program hands to a shell is refused, and with a hostile value
 *     (`$(touch MARK)`) nothing a substituted text runs ever creates MARK.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isExecgateError } from '../../src/errors';
import { substituteTokens } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { readShell } from '../../src/shell';
import { makeTempDir } from '../helpers/tmp';
import { fill, fillToken, SPELLINGS, SSH_LOCAL, SSH_REMOTE } from './wrapper-spellings';

const TOKEN = '<<secret:v>>';
let tmp: ReturnType<typeof makeTempDir>;
let bin: string;
let mark: string;
let cases = 0;

beforeAll(() => {
  tmp = makeTempDir('execgate-wrappers-');
  bin = join(tmp.dir, 'bin');
  mkdirSync(bin);
  mark = join(tmp.dir, 'MARK');
  writeFileSync(join(bin, 't1'), '#!/bin/sh\necho t1 >> "$LOG"\n');
  chmodSync(join(bin, 't1'), 0o755);
});
afterAll(() => tmp.cleanup());

function runBash(script: string, value = ''): string[] {
  const log = join(tmp.dir, `log-${(cases += 1)}`);
  spawnSync('bash', ['--norc', '--noprofile', '-c', script], {
    cwd: tmp.dir,
    env: { PATH: `${bin}:${process.env.PATH ?? ''}`, LOG: log, HOME: tmp.dir, V0: value },
    stdio: 'ignore',
    timeout: 20_000,
  });
  const ran = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  rmSync(log, { force: true });
  return ran;
}

const listed = (command: string): string[] =>
  readShell(command).commands.flatMap((simple) => (simple.words[0] && !simple.words[0].dynamic ? [simple.words[0].text] : []));

/** The substituted script, or the context the reference was refused in. */
function substitute(command: string): { script: string } | { refused: string } {
  const tokens = scanTokens(command);
  try {
    return { script: substituteTokens(command, tokens.map((token) => ({ token, envName: 'V0' })), readShell(command, tokens)) };
  } catch (error) {
    if (isExecgateError(error) && error.code === 'EXECGATE_ERR_REF_UNSAFE_CONTEXT') return { refused: String((error.details as { context: string }).context) };
    throw error;
  }
}

describe.each(SPELLINGS.map((spelling) => [spelling.template, spelling] as const))('%s', (_template, { template, runs }) => {
  const script = template.includes('SCRIPT');

  test('the wrapped command is listed, and bash runs it', () => {
    const command = fill(template, 't1');
    const analysis = readShell(command);
    expect(listed(command)).toContain('t1');
    // Only the programs that paste input into a script are uncertain about it.
    if (!/xargs -I\{\} sh|xargs sh -c|-exec sh -c SCRIPT \\;/.test(template)) expect(analysis.uncertain).toEqual([]);
    if (runs) expect(runBash(command)).toContain('t1');
  });

  // su, runuser and script read a later word starting with `-` as their own option
  // (`--command=...`), so without `--` a value there would be parsed by them.
  const permuted = /^(?:su|runuser|script) /.test(template) && !template.includes('-- CMD');
  test(script ? 'a reference in the script is refused' : permuted ? 'a reference the program may read as its option is refused' : 'a reference in the arguments is data', () => {
    const command = fillToken(template, TOKEN);
    const outcome = substitute(command);
    if (script || permuted) expect(outcome).toHaveProperty('refused');
    else expect(outcome).toHaveProperty('script');
    if (runs && 'script' in outcome) {
      rmSync(mark, { force: true });
      runBash(outcome.script, `$(touch ${mark})`);
      expect(existsSync(mark)).toBe(false);
    }
  });
});

describe('ssh', () => {
  test.each(SSH_REMOTE)('%s: the command line is the remote shell\'s, and a reference there is refused', (template) => {
    expect(substitute(fillToken(template, TOKEN))).toEqual({ refused: 'remote-command' });
    expect(readShell(fill(template, 't1')).uncertain).not.toEqual([]);
  });

  test.each(SSH_LOCAL)('%s: the option is a local script, read as code; a reference there is refused', (template) => {
    expect(listed(fill(template, 't1'))).toContain('t1');
    expect(substitute(fillToken(template, TOKEN))).toHaveProperty('refused');
  });
});

describe('the forms the issue walked through', () => {
  test.each([
    ['env -S"sh -c" "echo <<secret:v>>"'],
    ['env --split-string="sh -c" "echo <<secret:v>>"'],
    ["xargs -I{} sh -c 'echo {}' <<< \"<<secret:v>>\""],
    ["xargs -i sh -c 'echo {}' <<< \"<<secret:v>>\""],
    ['xargs sh -c <<< "<<secret:v>>"'],
    ["find . -maxdepth 0 -name \"<<secret:v>>\" -exec sh -c 'echo {}' \\;"],
    ['timeout "$X" 5 sh -c "echo <<secret:v>>"'],
    ['unshare --propagation private sh -c "echo <<secret:v>>"'],
    ['watch -d "echo <<secret:v>>"'],
    ['parallel echo ::: "<<secret:v>>"'],
  ])('%s refuses the reference, so its value never reaches bash', (command) => {
    const outcome = substitute(command);
    expect(outcome).toHaveProperty('refused');
  });

  test('before the change, bash did run the value of the two spellings as code', () => {
    // What the old reader produced for these texts (a plain expansion), run here: the oracle.
    for (const script of ['env -S"sh -c" "echo $V0"', "xargs -I{} sh -c 'echo {}' <<< \"$V0\""]) {
      rmSync(mark, { force: true });
      runBash(script, `$(touch ${mark})`);
      expect(existsSync(mark)).toBe(true);
    }
  });
});
