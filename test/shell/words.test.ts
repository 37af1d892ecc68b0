/*
 * The parts of the reader that read a word's own characters, checked against real bash: where a
 * heredoc's body ends and whether it expands (every spelling of the delimiter word), and which
 * words are static (a glob, a brace expansion or a leading tilde makes a word dynamic, so an
 * allow rule cannot match it). Both are read in one linear pass over the word.
 */
import { spawnSync } from 'node:child_process';
import { scanTokens } from '../../src/refs/tokens';
import { readShell } from '../../src/shell';
import { makeTempDir } from '../helpers/tmp';

const bash = (script: string, cwd?: string): string =>
  spawnSync('bash', ['--norc', '--noprofile', '-c', script], { encoding: 'utf8', ...(cwd ? { cwd } : {}) }).stdout;

describe('heredoc delimiters, against bash', () => {
  // [spelling in the command, the delimiter line bash waits for]
  test.each([
    ['EOF', 'EOF'],
    ["'EOF'", 'EOF'],
    ['"EOF"', 'EOF'],
    ['\\EOF', 'EOF'],
    ['E"O"F', 'EOF'],
    ["E'O'F", 'EOF'],
    ['"E\\"F"', 'E"F'],
    ['"E\\xF"', 'E\\xF'],
    ["'E\\F'", 'E\\F'],
    ["'a b'", 'a b'],
    ['"a b"c', 'a bc'],
    ['a\\ b', 'a b'],
    ['E\\\\F', 'E\\F'],
    ['"E;F"', 'E;F'],
  ])('<<%s ends at the line %s, and expands its body only when no part is quoted', (spelling, line) => {
    const command = `cat <<${spelling}\nbody $((6*7)) <<secret:a>>\n${line}\necho after`;
    const output = bash(command.replace('<<secret:a>>', ''));
    const expanded = output.includes('body 42');
    expect(output).toMatch(/after\n$/);

    const analysis = readShell(command, scanTokens(command));
    expect(analysis.commands.map((simple) => simple.words.map((word) => word.text).join(' '))).toEqual(['cat', 'echo after']);
    expect(analysis.uncertain).toEqual([]);
    expect(analysis.tokens[0]?.placement).toEqual(expanded ? { kind: 'expand', context: 'heredoc' } : { kind: 'refuse', context: 'quoted-heredoc' });
  });

  test('an unterminated quote in the delimiter is uncertain at the quote, and refuses every token', () => {
    const command = 'cat <<"EOF\nbody <<secret:a>>\nEOF';
    const analysis = readShell(command, scanTokens(command));
    expect(analysis.uncertain[0]).toEqual({ reason: 'the command ends inside a quoted heredoc delimiter', offset: 6 });
    expect(analysis.tokens[0]?.placement).toMatchObject({ kind: 'refuse', context: 'uncertain' });
  });

  test('a reference inside a quoted delimiter is refused and stays part of the delimiter word', () => {
    const command = 'cat <<"<<secret:a>>"\nbody\n\necho after';
    const analysis = readShell(command, scanTokens(command));
    expect(analysis.tokens[0]?.placement).toEqual({ kind: 'refuse', context: 'heredoc-delimiter' });
    // The empty line is not the delimiter: the body runs to the end, as bash reads it.
    expect(analysis.commands.map((simple) => simple.words[0]?.text)).toEqual(['cat']);
  });
});

describe('static and dynamic words, against bash', () => {
  // Words whose value bash changes (file names are matched in a directory holding `ab` and `ac`).
  const dynamic = ['a*', 'a?', 'a[bc]', '{x,y}', 'p{1..2}', '~', '~/x', 'x{a,b}y{', '{{a,b}', 'a{b,c}d}', '}{,}'];
  // Words bash leaves as written.
  const literal = ['[', 'a[', 'a]', '{x}', '{}', '{a.b}', 'x~', 'a=b', '{,', 'a]b['];
  // Words bash leaves as written here that the reader still calls dynamic: a bracket pair is a
  // glob whenever a file could match it, so the reader fails closed on any.
  const conservative = ['[]', 'a[]b'];

  test.each([
    ...dynamic.map((word) => [word, true, true] as const),
    ...literal.map((word) => [word, false, false] as const),
    ...conservative.map((word) => [word, false, true] as const),
  ])('%s: bash changes it: %s, the reader calls it dynamic: %s', (word, changed, isDynamic) => {
    const { dir, cleanup } = makeTempDir('execgate-words-');
    bash('touch ab ac', dir);
    const printed = bash(`printf '%s\\n' ${word}`, dir).replace(/\n$/, '');
    cleanup();
    expect(printed !== word).toBe(changed);
    const [command] = readShell(`echo ${word}`).commands;
    expect(command?.words[1]).toMatchObject({ text: word, dynamic: isDynamic });
  });

  test('a word of 100,000 `[` or `{,` is one static word (read in one pass)', () => {
    for (const word of ['['.repeat(100_000), '{,'.repeat(50_000), `${'{'.repeat(50_000)},`]) {
      const [command] = readShell(`echo ${word}`).commands;
      expect(command?.words[1]).toMatchObject({ text: word, dynamic: false });
    }
  });
});
