/*
 * Commands that parse an argument as code. Substitution keeps the value away from the parser of
 * the shell running the command, but some commands hand an argument (or their input) to a parser
 * again: `eval`, `trap`, `let`, declarations of integer or reference variables, builtins that take
 * a variable name (a name such as `a[$(cmd)]` runs `cmd`), another shell's `-c` script, a shell
 * reading its script from a heredoc, and ssh's remote command. A reference there would be parsed
 * after all, so the lexer refuses it.
 *
 * This looks at the words of one simple command as written; it cannot know what an alias, a
 * function or an interpreter other than a shell does with its arguments (`python -c`, `psql -c`).
 */

export interface Evaluation {
  readonly context: 'evaluated' | 'shell-script' | 'variable-name' | 'remote-command' | 'arithmetic';
  readonly reason: string;
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'busybox', 'su', 'runuser']);
const CODE_BUILTINS = new Set(['eval', 'trap']);
const DECLARATIONS = new Set(['declare', 'typeset', 'local', 'export', 'readonly']);
const NAME_BUILTINS = new Set(['read', 'unset']);
const COMMAND_PREFIXES = new Set(['builtin', 'command']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/;

/** The program a literal word names (`/bin/bash` names `bash`). */
function programOf(word: string | null | undefined): string | null {
  return word ? word.slice(word.lastIndexOf('/') + 1) : null;
}

/**
 * Decide whether a reference inside word number `index` of a simple command (whose earlier words
 * are `words`, null where a word is not plain literal text) would be parsed by the command.
 * `afterEquals`: the reference comes after an unquoted `=` in its word.
 */
export function getEvaluation(words: readonly (string | null)[], index: number, afterEquals: boolean): Evaluation | null {
  let start = 0;
  while (start < index && (ASSIGNMENT.test(words[start] ?? '') || COMMAND_PREFIXES.has(words[start] ?? ''))) start += 1;
  if (start >= index) return null; // the reference is (part of) the command name or an assignment
  const name = programOf(words[start]);
  const args = words.slice(start + 1, index);

  if (name !== null && CODE_BUILTINS.has(name)) {
    return { context: 'evaluated', reason: `\`${name}\` runs its arguments as shell code` };
  }
  if (name === 'let') return { context: 'arithmetic', reason: '`let` evaluates its arguments as arithmetic' };
  if (name !== null && DECLARATIONS.has(name)) {
    if (args.some((word) => word !== null && /^-[A-Za-z]*[in]/.test(word))) {
      return { context: 'evaluated', reason: `\`${name} -i\` / \`-n\` evaluates the value as arithmetic or a variable name` };
    }
    if (!afterEquals) return { context: 'variable-name', reason: `\`${name}\` takes this word as a variable name` };
  }
  if (name !== null && NAME_BUILTINS.has(name)) {
    return { context: 'variable-name', reason: `\`${name}\` takes its arguments as variable names` };
  }
  if (name === 'printf' && args[args.length - 1] === '-v') {
    return { context: 'variable-name', reason: '`printf -v` takes this word as a variable name' };
  }
  if ((name === 'test' || name === '[') && args.some((word) => word === '-v' || word === '-R')) {
    return { context: 'variable-name', reason: `\`${name} -v\` takes a variable name` };
  }
  return getShellEvaluation(words, index);
}

/** A reference in the `-c` script of a shell, or in the command ssh runs remotely. */
function getShellEvaluation(words: readonly (string | null)[], index: number): Evaluation | null {
  for (let k = 0; k < index; k += 1) {
    const program = programOf(words[k]);
    if (program === 'ssh') {
      return { context: 'remote-command', reason: 'ssh hands its command line to the remote shell, which parses it' };
    }
    if (program === null || !SHELLS.has(program)) continue;
    const option = words.findIndex(
      (word, at) => at > k && at < index && word !== null && (/^-[A-Za-z]*c[A-Za-z]*$/.test(word) || word === '--command'),
    );
    if (option >= 0 && index === option + 1) {
      return { context: 'shell-script', reason: `this word is the script that \`${program}\` parses` };
    }
  }
  return null;
}

/** Whether the standard input of this simple command (a heredoc or here-string) is parsed as code. */
export function getInputEvaluation(words: readonly (string | null)[]): Evaluation | null {
  for (let k = 0; k < words.length; k += 1) {
    const program = programOf(words[k]);
    if (program === 'ssh') {
      return { context: 'remote-command', reason: 'ssh may hand its input to the remote shell, which parses it' };
    }
    if (program !== null && SHELLS.has(program)) {
      const hasScript = words.some((word, at) => at > k && word !== null && /^-[A-Za-z]*c[A-Za-z]*$/.test(word));
      if (!hasScript) return { context: 'shell-script', reason: `\`${program}\` reads its script from this input` };
    }
  }
  return null;
}
