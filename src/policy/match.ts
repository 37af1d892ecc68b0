/*
 * The match forms of command rules and secret restrictions, on the shell reader's analysis. A
 * deny needs one simple command to match (any); an allow needs every simple command to match
 * (every), with no dynamic word in the matched part and a text read with confidence. The
 * analysis already lists the commands behind wrappers (`sudo`, `env`, `find -exec`, `busybox`)
 * and inside code run by `sh -c` or `eval`, so `echo ok; sudo id` and `env -iu X sudo id` are
 * caught by a deny rule for `sudo`, and an allow rule for `nice` does not allow `nice sudo id`.
 *
 * Regex rules run on RE2 (re2js): linear time in the command's length whatever the pattern, so
 * agent-controlled text cannot make a policy check hang.
 */
import type { RE2JS } from 're2js';
import type { ShellAnalysis, SimpleCommand, Word } from '../shell';

export type CommandMatch =
  | { readonly kind: 'command'; readonly commands: readonly (readonly string[])[]; readonly flags?: readonly string[] }
  | { readonly kind: 'prefix'; readonly prefixes: readonly string[] }
  | { readonly kind: 'regex'; readonly regex: RE2JS | RegExp; readonly source?: string };

/**
 * A pattern compiled with RE2. re2js (about 260 KB of code, several milliseconds of CPU to load)
 * is loaded on the first pattern: a policy without regex rules never loads it.
 */
export function compileRe2(pattern: string): RE2JS {
  return (require('re2js') as typeof import('re2js')).RE2JS.compile(pattern);
}

/** The loader compiles every pattern with RE2; a RegExp is accepted from code that builds policies itself. */
function regexFinds(regex: RE2JS | RegExp, text: string): boolean {
  return regex instanceof RegExp ? regex.test(text) : regex.matcher(text).find();
}

const baseName = (text: string): string => text.slice(text.lastIndexOf('/') + 1);

/** Split `git push` into words; a list gives several commands. */
export function toCommandWords(value: string | readonly string[]): string[][] {
  const list = typeof value === 'string' ? [value] : [...value];
  return list.map((entry) => entry.trim().split(/\s+/));
}

function wordsMatch(words: readonly Word[], expected: readonly string[], loose: boolean): boolean {
  if (expected.length > words.length) return false;
  return expected.every((text, offset) => {
    const word = words[offset];
    if (word.dynamic) return false;
    if (word.text === text) return true;
    return loose && offset === 0 && !text.includes('/') && baseName(word.text) === text;
  });
}

/**
 * Whether the options of `words` (after the matched command words, up to `--`) hold every flag:
 * a one-letter flag matches in any short cluster in either case (`-rf`, `-Rf`, `-r -f`) or as the
 * first letter of a long option (`--recursive`); a longer flag matches the long option by name.
 * A dynamic word could hold any option: it counts for a deny (fail closed), not for an allow.
 */
function hasFlags(words: readonly Word[], from: number, flags: readonly string[], loose: boolean): boolean {
  const found = new Set<string>();
  let anything = false;
  for (let index = from; index < words.length; index += 1) {
    const word = words[index];
    if (word.dynamic) {
      if (!/^[^-\0]/.test(word.text)) anything = true;
      continue;
    }
    if (word.text === '--') break;
    if (word.text.startsWith('--')) {
      const name = word.text.slice(2).split('=')[0];
      found.add(`--${name.toLowerCase()}`);
      found.add((name[0] ?? '').toLowerCase());
    } else if (word.text.startsWith('-')) {
      for (const letter of word.text.slice(1)) found.add(letter.toLowerCase());
    }
  }
  if (anything && loose) return true;
  return flags.every((flag) => (flag.length === 1 ? found.has(flag.toLowerCase()) : found.has(`--${flag.toLowerCase()}`)));
}

function joined(words: readonly Word[]): string {
  // A dynamic word shows as NUL, which no prefix holds, so it never matches literally.
  return words.map((word) => (word.dynamic ? '\0' : word.text)).join(' ');
}

function commandMatches(match: CommandMatch, command: SimpleCommand, loose: boolean): boolean {
  const { words } = command;
  if (match.kind === 'command') {
    return match.commands.some((expected) => wordsMatch(words, expected, loose) && (!match.flags || hasFlags(words, expected.length, match.flags, loose)));
  }
  if (match.kind === 'prefix') {
    const text = joined(words);
    const named = loose ? text.replace(/^[^ \0]*\//, '') : text;
    return match.prefixes.some((prefix) => text.startsWith(prefix) || (loose && named.startsWith(prefix)));
  }
  return false;
}

/** Deny semantics: the whole text (regex) or any simple command matches. */
export function matchesAny(match: CommandMatch, raw: string, analysis: ShellAnalysis): boolean {
  if (match.kind === 'regex') return regexFinds(match.regex, raw);
  return analysis.commands.some((command) => commandMatches(match, command, true));
}

/** Allow semantics: the whole text (regex) or every simple command matches, read with confidence. */
export function matchesEvery(match: CommandMatch, raw: string, analysis: ShellAnalysis): boolean {
  if (match.kind === 'regex') return analysis.uncertain.length === 0 && regexFinds(match.regex, raw);
  if (analysis.uncertain.length > 0 || analysis.commands.length === 0) return false;
  return analysis.commands.every((command) => commandMatches(match, command, false));
}

/** How a match reads in messages and `policy explain`. */
export function describeMatch(match: CommandMatch): string {
  if (match.kind === 'command') {
    const flags = match.flags ? ` with flags ${match.flags.map((flag) => (flag.length === 1 ? `-${flag}` : `--${flag}`)).join(' ')}` : '';
    return `command ${match.commands.map((words) => `\`${words.join(' ')}\``).join(' or ')}${flags}`;
  }
  if (match.kind === 'prefix') return `prefix ${match.prefixes.map((prefix) => `\`${prefix}\``).join(' or ')}`;
  return `regex \`${match.source ?? (match.regex instanceof RegExp ? match.regex.source : match.regex.pattern())}\``;
}
