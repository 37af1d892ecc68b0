/*
 * Substitution without injection.
 *
 * Pasting a resolved value into the text given to `bash -c` lets the value be parsed as shell
 * syntax (a value like `'; rm -rf ~ #` runs) and exposes it in /proc/PID/cmdline to every local
 * user. Instead the caller puts each value in the child's environment under a variable name of
 * its choosing, and this module rewrites each token into an expansion of that variable.
 *
 * The shell expands a variable exactly once and never parses the result as syntax; the only
 * things that can still happen to an expansion are word splitting and globbing, which double
 * quotes turn off. So the rewrite depends only on the quoting context at the token's position:
 *
 *   unquoted word         "${NAME}"      one word, no splitting or globbing; joins adjacent text
 *   inside "..."          ${NAME}
 *   inside '...'          '"${NAME}"'    close the single quotes, expand in double quotes, reopen
 *   unquoted heredoc body ${NAME}       (quotes are literal text in a heredoc body)
 *   word of ${VAR:-...}   "${NAME}"      quoted, so a pattern (${VAR#...}) matches it literally
 *
 * A token no source knew is passed on as the text it is (seed 004). Where it stands unquoted,
 * bash would read its `<<` as a heredoc operator (and `{{`...`}}` could take part in brace
 * expansion), so it is written single-quoted there: the program gets exactly the token's text.
 * Elsewhere (in quotes, in a heredoc body, in the word of `${VAR:-...}`) it already is literal.
 *
 * Only POSIX `${NAME}` expansions are written, so the script is the same for bash and sh. The
 * script text holds variable names and never a value. Substitution refuses with
 * EXECGATE_ERR_REF_UNSAFE_CONTEXT instead of guessing where no expansion fits (a quoted heredoc
 * body, `$'...'`), where bash would parse the value after all (arithmetic, `[[ -eq ]]`, `eval`,
 * a variable-name argument, another shell's `-c` script, ssh's remote command), and where the
 * lexer cannot be sure of the context. Beyond that, what a command does with a value it receives
 * as data (`python -c`, a pipe into `sh`) is the command's meaning, not substitution's.
 */

import { ExecgateError, describeValue } from '../errors';
import { readShell, type Placement, type RefusedContext, type ShellAnalysis, type TokenSpan } from '../shell';
import { isTokenText } from './tokens';
import type { RefToken } from './types';

export type Replacement =
  | {
    readonly token: RefToken;
    /** The child environment variable that holds the resolved value, e.g. `EXECGATE_REF_0`. */
    readonly envName: string;
  }
  | {
    readonly token: RefToken;
    /** No source knew the reference: its text is passed on as written. */
    readonly literal: true;
  };

const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Rewrite each token in `replacements` into an expansion of its `envName`, fitting the quoting
 * context at its position. Other tokens and all other text stay byte for byte the same. Throws
 * EXECGATE_ERR_REF_UNSAFE_CONTEXT (naming the reference, never a value) when a token sits where
 * no expansion is safe.
 */
export function substituteTokens(command: string, replacements: readonly Replacement[], analysis?: ShellAnalysis): string {
  const sorted = validateReplacements(command, replacements);
  if (sorted.length === 0) return command;
  // The analysis made before resolution placed every token; when some stay literal (no source
  // knew them) bash reads their text as shell syntax, so the substituted ones are placed again.
  const reading = analysis && sameTokens(analysis, command, sorted) ? analysis : readShell(command, sorted.map(({ token }) => token));
  const placements = getPlacements(reading, sorted);
  sorted.forEach((replacement, index) => {
    const placement = placements[index];
    if (placement.kind === 'refuse') throw unsafeContextError(replacement.token, placement.context, placement.reason);
  });

  let script = '';
  let cursor = 0;
  sorted.forEach((replacement, index) => {
    const { token } = replacement;
    const placement = placements[index];
    script += command.slice(cursor, token.start);
    if (placement.kind !== 'expand') script += token.raw;
    else if ('envName' in replacement) script += expansionFor(placement.context, replacement.envName);
    else script += placement.context === 'unquoted' ? `'${token.raw}'` : token.raw;
    cursor = token.end;
  });
  return script + command.slice(cursor);
}

/** Throw EXECGATE_ERR_REF_UNSAFE_CONTEXT for the first token of `analysis` that cannot be substituted. */
export function validateTokenPlacements(analysis: ShellAnalysis): void {
  for (const { token, placement } of analysis.tokens) {
    if (placement.kind === 'refuse') throw unsafeContextError(token, placement.context, placement.reason);
  }
}

function sameTokens(analysis: ShellAnalysis, command: string, sorted: readonly Replacement[]): boolean {
  if (analysis.command !== command || analysis.tokens.length !== sorted.length) return false;
  const starts = new Set(analysis.tokens.map(({ token }) => token.start));
  return sorted.every(({ token }) => starts.has(token.start));
}

function getPlacements(analysis: ShellAnalysis, sorted: readonly Replacement[]): Placement[] {
  const byStart = new Map(analysis.tokens.map((reading) => [reading.token.start, reading.placement]));
  return sorted.map(({ token }) => byStart.get(token.start) ?? { kind: 'refuse', context: 'uncertain' });
}

function expansionFor(context: Extract<Placement, { kind: 'expand' }>['context'], envName: string): string {
  switch (context) {
    case 'unquoted':
    case 'parameter-word':
      return `"\${${envName}}"`;
    case 'double-quoted':
    case 'heredoc':
      return `\${${envName}}`;
    case 'single-quoted':
      return `'"\${${envName}}"'`;
  }
}

function validateReplacements(command: string, replacements: readonly Replacement[]): Replacement[] {
  if (typeof command !== 'string') {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_COMMAND',
      `Expected the command to substitute references in to be a string, got ${describeValue(command)}.`,
    );
  }
  if (!Array.isArray(replacements)) {
    throw invalid(`Expected \`replacements\` to be an array, got ${describeValue(replacements)}.`);
  }
  const sorted = [...(replacements as Replacement[])];
  sorted.forEach((replacement, index) => validateReplacement(command, replacement, index));
  sorted.sort((a, b) => a.token.start - b.token.start);
  for (let index = 1; index < sorted.length; index += 1) {
    const previous = (sorted[index - 1]).token;
    const current = (sorted[index]).token;
    if (current.start < previous.end) {
      throw invalid(
        `Expected replacements for non-overlapping tokens, got \`${previous.raw}\` at offset ${previous.start} and \`${current.raw}\` at offset ${current.start}.`,
      );
    }
  }
  return sorted;
}

function validateReplacement(command: string, replacement: Replacement, index: number): void {
  if (replacement === null || typeof replacement !== 'object') {
    throw invalid(`Expected replacement ${index} to be an object, got ${describeValue(replacement)}.`);
  }
  const { token } = replacement;
  const envName = 'envName' in replacement ? replacement.envName : undefined;
  const literal = 'literal' in replacement && replacement.literal === true;
  if (!literal && (typeof envName !== 'string' || !ENV_NAME_PATTERN.test(envName))) {
    throw invalid(
      `Expected the \`envName\` of replacement ${index} to be a shell variable name ([A-Za-z_][A-Za-z0-9_]*), got ${describeValue(envName)}.`,
    );
  }
  const fits =
    token !== null &&
    typeof token === 'object' &&
    typeof token.raw === 'string' &&
    Number.isSafeInteger(token.start) &&
    token.start >= 0 &&
    token.end === token.start + token.raw.length &&
    command.slice(token.start, token.end) === token.raw &&
    isTokenText(token.raw);
  if (!fits) {
    throw invalid(
      `Expected the \`token\` of replacement ${index} to be a reference token of the command at its \`start\` and \`end\` offsets (as scanTokens returns it).`,
    );
  }
}

function invalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_REF_REPLACEMENT_INVALID', message);
}

const REFUSALS: Record<RefusedContext, { where: string; fix: (reference: string) => string }> = {
  'quoted-heredoc': {
    where: "the body of a quoted heredoc (<<'EOF', <<\"EOF\" or <<\\EOF), where the shell expands nothing",
    fix: () => 'use an unquoted delimiter (<<EOF) or move the reference out of the heredoc',
  },
  'heredoc-delimiter': {
    where: 'a heredoc delimiter (right after <<), which the shell never expands',
    fix: (reference) => `give the heredoc a delimiter word, or for a here-string write <<< ${reference}`,
  },
  'ansi-c-string': {
    where: "a $'...' string, where the shell expands nothing",
    fix: () => "close the $'...' string before the reference, or use a \"...\" string instead",
  },
  'locale-string': {
    where: 'a $"..." string, which bash may replace with a translation',
    fix: () => 'use a plain "..." string (drop the $)',
  },
  arithmetic: {
    where:
      'an arithmetic context ($(( )), (( )), $[ ], let, an array subscript or ${var:offset:length}), where bash evaluates the value as an expression that can run commands',
    fix: () => 'move the reference out of the arithmetic; compare numbers with [ ... -eq ... ], which does not evaluate its operands',
  },
  'conditional-arithmetic': {
    where: 'a [[ ... ]] test with -eq, -ne, -lt, -le, -gt or -ge, where bash evaluates the operands as expressions that can run commands',
    fix: () => 'use [ ... -eq ... ] (the test command compares numbers without evaluating them)',
  },
  evaluated: {
    where: 'an argument or variable that bash runs or evaluates as code (eval, trap, alias, complete/compgen, mapfile -C, declare -i/-n/-a, PS0-PS4, PROMPT_COMMAND, BASH_FUNC_*)',
    fix: (reference) => `assign the reference to a variable and let the code use the variable: V=${reference}; eval 'cmd "$V"'`,
  },
  'shell-script': {
    where: 'the script of another shell (the word after -c, or a heredoc or here-string the shell reads), which that shell parses',
    fix: (reference) => `pass the value as an argument instead: bash -c 'cmd "$1"' _ ${reference}`,
  },
  'variable-name': {
    where:
      'a word the command takes as a variable name (declare, local, export, read, unset, printf -v, test -v, [[ -v ]]), where bash evaluates array subscripts and can run commands',
    fix: (reference) => `use a fixed variable name and put the reference in the value: NAME=${reference}`,
  },
  'remote-command': {
    where: 'the command line (or input) that ssh hands to the remote shell, which parses it',
    fix: (reference) => `send the value on standard input instead: printf %s ${reference} | ssh HOST 'IFS= read -r v; cmd "$v"'`,
  },
  'parameter-name': {
    where: 'the name part of a ${...} expansion, and a reference cannot name a variable',
    fix: (reference) => `put the reference after an operator, as in \${VAR:-${reference}}, or outside the braces`,
  },
  escaped: {
    where: 'a position right after a backslash, which would escape the start of the expansion',
    fix: () => 'remove the backslash or separate it from the reference',
  },
  'after-dollar': {
    where: 'a position right after a bare $, which would join with the expansion',
    fix: () => 'remove the $ or write it as \\$',
  },
  'value-evaluated': {
    where: 'a command that also evaluates a variable\'s value as code (arithmetic on variables, `${!NAME}`, `[[ -eq ]]`, a variable name or a command known only at run time), which the value could reach',
    fix: () => 'run the part that evaluates values as a separate command without the reference, or pass the value to a program that reads it as data',
  },
  uncertain: {
    where: 'a spot whose quoting execgate cannot determine with confidence',
    fix: () => 'fix or simplify the shell syntax around the reference',
  },
};

function unsafeContextError(token: TokenSpan, context: RefusedContext, reason?: string): ExecgateError {
  const { where, fix } = REFUSALS[context];
  const because = reason ? ` (${reason})` : '';
  return new ExecgateError(
    'EXECGATE_ERR_REF_UNSAFE_CONTEXT',
    `The reference ${token.raw} sits in ${where}${because}, so execgate cannot pass its value safely and refuses to run the command. To fix it, ${fix(token.raw)}.`,
    reason ? { reference: token.raw, context, reason, offset: token.start } : { reference: token.raw, context, offset: token.start },
  );
}
