/*
 * A small glob matcher for search_files: `*` (any characters but `/`), `**` as a whole path
 * segment (any number of segments, none included), `?` (one character but `/`), `[abc]`,
 * `[a-z]`, `[!x]` / `[^x]` (one character but `/`), `{a,b}` (alternatives, nestable) and `\x`
 * (a literal x). Dot files are matched like any other name. A pattern compiles to one anchored
 * RegExp whose repeated groups each end in `/`, so it cannot backtrack catastrophically.
 */
import { ExecgateError } from '../../errors';

export function compileGlob(pattern: string): RegExp {
  if (typeof pattern !== 'string' || pattern === '' || pattern.includes('\0')) {
    throw new ExecgateError('EXECGATE_ERR_SEARCH_PATTERN_INVALID', 'Expected the glob `pattern` to be a non-empty string without NUL bytes.');
  }
  return new RegExp(`^${translate(pattern)}$`, 's');
}

const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|]/;

function escapeChar(char: string): string {
  return REGEX_SPECIAL.test(char) ? `\\${char}` : char;
}

function translate(pattern: string): string {
  let out = '';
  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i]!;
    if (char === '\\') {
      out += i + 1 < pattern.length ? escapeChar(pattern[i + 1]!) : '\\\\';
      i += 2;
    } else if (char === '*') {
      let j = i;
      while (pattern[j] === '*') j += 1;
      const atSegmentStart = i === 0 || pattern[i - 1] === '/';
      const atSegmentEnd = j === pattern.length || pattern[j] === '/';
      if (j - i >= 2 && atSegmentStart && atSegmentEnd) {
        if (pattern[j] === '/') {
          out += '(?:[^/]*/)*'; // `**/`: zero or more whole segments
          j += 1;
        } else if (i > 0) {
          out = out.slice(0, -1) + '(?:/.*)?'; // `/**` at the end: the directory and all below
        } else {
          out += '.*';
        }
      } else {
        out += '[^/]*';
      }
      i = j;
    } else if (char === '?') {
      out += '[^/]';
      i += 1;
    } else if (char === '[') {
      const parsed = parseClass(pattern, i);
      if (parsed) {
        out += parsed.regex;
        i = parsed.end;
      } else {
        out += '\\[';
        i += 1;
      }
    } else if (char === '{') {
      const parsed = parseBraces(pattern, i);
      if (parsed) {
        out += `(?:${parsed.alternatives.map(translate).join('|')})`;
        i = parsed.end;
      } else {
        out += '\\{';
        i += 1;
      }
    } else {
      out += escapeChar(char);
      i += 1;
    }
  }
  return out;
}

/** `[...]` starting at `start`; undefined when it does not close (then `[` is literal). */
function parseClass(pattern: string, start: number): { regex: string; end: number } | undefined {
  let i = start + 1;
  let negated = false;
  if (pattern[i] === '!' || pattern[i] === '^') {
    negated = true;
    i += 1;
  }
  let body = '';
  let first = true;
  while (i < pattern.length) {
    const char = pattern[i]!;
    if (char === ']' && !first) {
      if (body === '') return undefined;
      return { regex: negated ? `[^/${body}]` : `(?!/)[${body}]`, end: i + 1 };
    }
    if (char === '\\' && i + 1 < pattern.length) {
      body += `\\${pattern[i + 1]}`;
      i += 2;
    } else {
      // Inside a class only `\`, `]`, `^` and `-` mean something to RegExp; `-` keeps its range meaning.
      body += char === ']' || char === '^' || char === '[' ? `\\${char}` : char;
      i += 1;
    }
    first = false;
  }
  return undefined;
}

/** `{a,b}` starting at `start`; undefined when it does not close or has no comma. */
function parseBraces(pattern: string, start: number): { alternatives: string[]; end: number } | undefined {
  const alternatives: string[] = [];
  let depth = 0;
  let current = '';
  for (let i = start + 1; i < pattern.length; i += 1) {
    const char = pattern[i]!;
    if (char === '\\' && i + 1 < pattern.length) {
      current += char + pattern[i + 1];
      i += 1;
    } else if (char === '{') {
      depth += 1;
      current += char;
    } else if (char === '}' && depth > 0) {
      depth -= 1;
      current += char;
    } else if (char === '}') {
      alternatives.push(current);
      return alternatives.length > 1 ? { alternatives, end: i + 1 } : undefined;
    } else if (char === ',' && depth === 0) {
      alternatives.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  return undefined;
}

/**
 * A predicate over paths relative to the search base (with `/` separators). A glob without `/`
 * is matched against the last name only, so `*.ts` finds TypeScript files at any depth.
 */
export function createGlobMatcher(pattern: string): (relativePath: string) => boolean {
  const regex = compileGlob(pattern);
  if (pattern.includes('/')) return (relativePath) => regex.test(relativePath);
  return (relativePath) => regex.test(relativePath.slice(relativePath.lastIndexOf('/') + 1));
}
