/*
 * The three match forms of command rules and secret restrictions, and what "matches" means for
 * each. A deny needs one simple command to match (any); an allow needs every simple command to
 * match (every), with no dynamic word in the matched part and a text that was read with
 * confidence. So `git status; curl ...` is not allowed by an allow rule for `git`, and
 * `echo ok; sudo id` is caught by a deny rule for `sudo`.
 *
 * For deny matches, a command run through a wrapper (`env`, `sudo`, `nohup`, `xargs`, ...) is
 * also looked at after the wrapper and its options, and a path (`/usr/bin/sudo`) matches its
 * base name. Allow matches take the words exactly as written.
 */
import type { ParsedCommand, SimpleCommand, Word } from './shell-words';

export type CommandMatch =
  | { readonly kind: 'command'; readonly commands: readonly (readonly string[])[] }
  | { readonly kind: 'prefix'; readonly prefixes: readonly string[] }
  | { readonly kind: 'regex'; readonly regex: RegExp };

interface Wrapper {
  /** Options that take the next word as their value. */
  readonly valued: ReadonlySet<string>;
  /** Positional words before the wrapped command (the duration of `timeout`). */
  readonly positional: number;
}

const wrapper = (valued: string[] = [], positional = 0): Wrapper => ({ valued: new Set(valued), positional });

const WRAPPERS: ReadonlyMap<string, Wrapper> = new Map([
  ['command', wrapper()],
  ['builtin', wrapper()],
  ['exec', wrapper(['-a'])],
  ['nohup', wrapper()],
  ['time', wrapper()],
  ['env', wrapper(['-u', '-C', '-S', '--unset', '--chdir'])],
  ['nice', wrapper(['-n', '--adjustment'])],
  ['ionice', wrapper(['-c', '-n', '-p', '-P', '-u'])],
  ['setsid', wrapper()],
  ['timeout', wrapper(['-s', '-k', '--signal', '--kill-after'], 1)],
  ['stdbuf', wrapper(['-i', '-o', '-e'])],
  ['xargs', wrapper(['-I', '-i', '-n', '-P', '-d', '-s', '-L', '-l', '-a', '-E', '-e', '--max-args', '--max-procs', '--delimiter', '--arg-file'])],
  ['sudo', wrapper(['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-R', '-T'])],
  ['doas', wrapper(['-u', '-C'])],
  ['unbuffer', wrapper()],
  ['chronic', wrapper()],
  ['flock', wrapper(['-w', '-E', '--timeout', '--conflict-exit-code'], 1)],
]);

const baseName = (text: string): string => text.slice(text.lastIndexOf('/') + 1);

/** Split `git push` into words; a list gives several commands. */
export function toCommandWords(value: string | readonly string[]): string[][] {
  const list = typeof value === 'string' ? [value] : [...value];
  return list.map((entry) => entry.trim().split(/\s+/));
}

/** Where the wrapped command starts in each of: the command itself, and after each wrapper. */
function getStarts(words: readonly Word[]): number[] {
  const starts = [0];
  let index = 0;
  for (let hops = 0; hops < 8; hops++) {
    const word = words[index];
    if (!word || word.dynamic) break;
    const spec = WRAPPERS.get(baseName(word.text));
    if (!spec) break;
    index++;
    let positional = spec.positional;
    while (index < words.length) {
      const current = words[index] as Word;
      if (current.dynamic) break;
      if (current.text === '--') {
        index++;
        break;
      }
      if (current.text.startsWith('-') && current.text.length > 1) {
        index += spec.valued.has(current.text) ? 2 : 1;
        continue;
      }
      if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(current.text)) {
        index++;
        continue;
      }
      if (positional > 0) {
        positional--;
        index++;
        continue;
      }
      break;
    }
    if (index >= words.length) break;
    starts.push(index);
  }
  return starts;
}

function wordsMatch(words: readonly Word[], start: number, expected: readonly string[], loose: boolean): boolean {
  if (start + expected.length > words.length) return false;
  return expected.every((text, offset) => {
    const word = words[start + offset] as Word;
    if (word.dynamic) return false;
    if (word.text === text) return true;
    return loose && offset === 0 && !text.includes('/') && baseName(word.text) === text;
  });
}

function joined(words: readonly Word[], start: number): string {
  // A dynamic word shows as NUL, which no prefix holds, so it never matches literally.
  return words.slice(start).map((word) => (word.dynamic ? '\0' : word.text)).join(' ');
}

function commandMatches(match: CommandMatch, command: SimpleCommand, loose: boolean): boolean {
  const starts = loose ? getStarts(command.words) : [0];
  if (match.kind === 'command') {
    return starts.some((start) => match.commands.some((expected) => wordsMatch(command.words, start, expected, loose)));
  }
  if (match.kind === 'prefix') {
    return starts.some((start) => {
      const text = joined(command.words, start);
      const named = loose ? text.replace(/^[^ ]*\//, '') : text;
      return match.prefixes.some((prefix) => text.startsWith(prefix) || (loose && named.startsWith(prefix)));
    });
  }
  return false;
}

/** Deny semantics: the whole text (regex) or any simple command matches. */
export function matchesAny(match: CommandMatch, raw: string, parsed: ParsedCommand): boolean {
  if (match.kind === 'regex') return match.regex.test(raw);
  return parsed.commands.some((command) => commandMatches(match, command, true));
}

/** Allow semantics: the whole text (regex) or every simple command matches, read with confidence. */
export function matchesEvery(match: CommandMatch, raw: string, parsed: ParsedCommand): boolean {
  if (match.kind === 'regex') return match.regex.test(raw);
  if (parsed.uncertain || parsed.commands.length === 0) return false;
  return parsed.commands.every((command) => commandMatches(match, command, false));
}

/** How a match reads in messages and `policy explain`. */
export function describeMatch(match: CommandMatch): string {
  if (match.kind === 'command') return `command ${match.commands.map((words) => `\`${words.join(' ')}\``).join(' or ')}`;
  if (match.kind === 'prefix') return `prefix ${match.prefixes.map((prefix) => `\`${prefix}\``).join(' or ')}`;
  return `regex \`${match.regex.source}\``;
}
