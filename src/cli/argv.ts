/*
 * What the words after `--` mean, as with `sudo`, `env`, `op run` and `docker run`:
 *
 *   one word      a shell command, run as written:  execgate run -- 'ls | wc -l'
 *   several       an argv, run exactly as given:    execgate run -- curl -H "A: <<secret:t>>" URL
 *
 * For an argv each word is quoted for the shell, so the quoting the user's own shell removed
 * cannot be lost (`'a;b'` stays one argument, `$HOME` stays text). Reference tokens inside a
 * quoted word are still resolved: substitution reads the quoting context at each token and
 * writes the expansion that fits it, so the value lands inside that same word.
 */

/** Characters that are never special to the shell in a word. */
const PLAIN_WORD = /^[A-Za-z0-9_./:@%+,=-]+$/;

/*
 * The first word names the program. Quoting it keeps a reserved word (`time`, `if`, `!`) from
 * being read as syntax and `NAME=value` from being read as an assignment, so the program is
 * exactly the word given.
 */
const RESERVED_WORDS = new Set(['!', '[[', ']]', '{', '}', 'case', 'coproc', 'do', 'done', 'elif', 'else', 'esac', 'fi', 'for', 'function', 'if', 'in', 'select', 'then', 'time', 'until', 'while']);

/** One word as shell text that the shell reads back as exactly that word. */
export function quoteWord(word: string, first = false): string {
  const plain = PLAIN_WORD.test(word) && !(first && (word.includes('=') || RESERVED_WORDS.has(word)));
  return plain ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The shell command the words after `--` stand for. */
export function getCommandText(words: readonly string[]): string {
  if (words.length === 1) return words[0];
  return words.map((word, index) => quoteWord(word, index === 0)).join(' ');
}
