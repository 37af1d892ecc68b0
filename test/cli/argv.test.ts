/*
 * The words after `--`: one is a shell command, several are an argv run exactly as given.
 * Real bash is the oracle: whatever words go in, the program receives exactly those words.
 */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { getCommandText, quoteWord } from '../../src/cli/argv';

/** The arguments bash hands to a program for this command text, read back NUL-separated. */
function argvSeenByBash(text: string): string[] {
  const result = spawnSync('bash', ['--norc', '--noprofile', '-c', text], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' } });
  expect(result.stderr).toBe('');
  return result.stdout.split('\0').slice(0, -1);
}

describe('getCommandText', () => {
  test('one word is the shell command as written', () => {
    expect(getCommandText(['ls -la | wc -l; echo "$HOME"'])).toBe('ls -la | wc -l; echo "$HOME"');
  });

  test('several words: plain words stay as they are, the rest are single-quoted', () => {
    expect(getCommandText(['curl', '-sH', 'Authorization: Bearer <<secret:tok>>', 'https://api.example.com/v1?a=1&b=2'])).toBe(
      "curl -sH 'Authorization: Bearer <<secret:tok>>' 'https://api.example.com/v1?a=1&b=2'",
    );
    expect(getCommandText(['echo', "it's", 'a;b', '$HOME', '', '*'])).toBe(`echo 'it'\\''s' 'a;b' '$HOME' '' '*'`);
  });

  test('the first word is always the program: reserved words and assignments are quoted', () => {
    expect(quoteWord('time', true)).toBe("'time'");
    expect(quoteWord('FOO=bar', true)).toBe("'FOO=bar'");
    expect(quoteWord('FOO=bar')).toBe('FOO=bar');
    expect(getCommandText(['!', 'x'])).toBe("'!' x");
  });

  test('bash receives exactly the words given, for any words (property, real bash)', () => {
    const word = fc.string({ unit: fc.oneof(fc.constantFrom(...` '"\\$\`;&|<>(){}[]*?!#~=%\n\t-:.,/`), fc.string({ minLength: 1, maxLength: 1 }), fc.constantFrom('é', '€', '😀')), maxLength: 12 })
      .filter((w) => !w.includes('\0'));
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), (words) => {
        expect(argvSeenByBash(getCommandText(['printf', '%s\\0', ...words]))).toEqual(words);
      }),
      { numRuns: 150 },
    );
  });
});
