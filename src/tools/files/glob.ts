/*
 * A small glob matcher for search_files: `*` (any characters but `/`), `**` as a whole path
 * segment (any number of segments, none included), `?` (one character but `/`), `[abc]`,
 * `[a-z]`, `[!x]` / `[^x]` (one character but `/`), `{a,b}` (alternatives, nestable) and `\x`
 * (a literal x). Dot files are matched like any other name.
 *
 * The pattern comes from a model, so matching must not backtrack: translated to a RegExp,
 * `*a*a*a*a*a*a*b` or `**` repeated takes minutes on a path of 100 characters. Instead the
 * braces are expanded (at most MAX_ALTERNATIVES patterns) and each pattern is run as a small
 * NFA over the path's characters, keeping the set of live states: time is
 * O(path length x pattern length) per alternative, whatever the input.
 */
import { ExecgateError } from '../../errors';

const MAX_ALTERNATIVES = 1024;

type Token =
  | { readonly kind: 'char'; readonly char: string }
  | { readonly kind: 'one' } // ?
  | { readonly kind: 'class'; readonly negated: boolean; readonly ranges: ReadonlyArray<readonly [string, string]> }
  | { readonly kind: 'star' } // *: a run of characters but `/`
  | { readonly kind: 'dirs' } // `**/`: zero or more whole segments, each ending in `/`
  | { readonly kind: 'rest' } // `/**` at the end: nothing, or `/` and anything after
  | { readonly kind: 'all' }; // `**` alone: anything

export interface GlobMatcher {
  /** Whether the whole of `path` matches. */
  test(path: string): boolean;
}

function invalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_SEARCH_PATTERN_INVALID', message);
}

export function compileGlob(pattern: string): GlobMatcher {
  if (typeof pattern !== 'string' || pattern === '' || pattern.includes('\0')) {
    throw invalid('Expected the glob `pattern` to be a non-empty string without NUL bytes.');
  }
  const alternatives = expandBraces(pattern).map(tokenize);
  return { test: (path) => alternatives.some((tokens) => run(tokens, path)) };
}

/**
 * A predicate over paths relative to the search base (with `/` separators). A glob without `/`
 * is matched against the last name only, so `*.ts` finds TypeScript files at any depth.
 */
export function createGlobMatcher(pattern: string): (relativePath: string) => boolean {
  const glob = compileGlob(pattern);
  if (pattern.includes('/')) return (relativePath) => glob.test(relativePath);
  return (relativePath) => glob.test(relativePath.slice(relativePath.lastIndexOf('/') + 1));
}

/** `{a,b}c` -> [`ac`, `bc`], recursively; a brace without a comma or a close is literal. */
function expandBraces(pattern: string): string[] {
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i += 1) {
    const char = chars[i];
    if (char === '\\') {
      i += 1;
    } else if (char === '[') {
      const end = findClassEnd(chars, i);
      if (end !== undefined) i = end - 1;
    } else if (char === '{') {
      const group = splitBraces(chars, i);
      if (!group) continue;
      const prefix = chars.slice(0, i).join('');
      const suffix = chars.slice(group.end).join('');
      const results: string[] = [];
      for (const alternative of group.alternatives) {
        for (const expanded of expandBraces(prefix + alternative + suffix)) {
          results.push(expanded);
          if (results.length > MAX_ALTERNATIVES) {
            throw invalid(`The glob expands to more than ${MAX_ALTERNATIVES} alternatives; use fewer \`{a,b}\` groups.`);
          }
        }
      }
      return results;
    }
  }
  return [pattern];
}

function splitBraces(chars: string[], start: number): { alternatives: string[]; end: number } | undefined {
  const alternatives: string[] = [];
  let depth = 0;
  let current = '';
  for (let i = start + 1; i < chars.length; i += 1) {
    const char = chars[i];
    if (char === '\\' && i + 1 < chars.length) {
      current += char + chars[i + 1];
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

/** Index just past the `]` closing the class that starts at `start`, or undefined. */
function findClassEnd(chars: string[], start: number): number | undefined {
  let i = start + 1;
  if (chars[i] === '!' || chars[i] === '^') i += 1;
  let first = true;
  for (; i < chars.length; i += 1) {
    if (chars[i] === ']' && !first) return i + 1;
    if (chars[i] === '\\') i += 1;
    first = false;
  }
  return undefined;
}

function tokenize(pattern: string): Token[] {
  const chars = Array.from(pattern);
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    const char = chars[i];
    if (char === '\\') {
      tokens.push({ kind: 'char', char: chars[i + 1] ?? '\\' });
      i += 2;
    } else if (char === '*') {
      let j = i;
      while (chars[j] === '*') j += 1;
      const segmentStart = i === 0 || chars[i - 1] === '/';
      const segmentEnd = j === chars.length || chars[j] === '/';
      if (j - i >= 2 && segmentStart && segmentEnd) {
        if (chars[j] === '/') {
          if (tokens[tokens.length - 1]?.kind !== 'dirs') tokens.push({ kind: 'dirs' });
          j += 1;
        } else if (i > 0) {
          tokens.pop(); // the `/` before a final `**` belongs to it: `src/**` matches `src` too
          tokens.push({ kind: 'rest' });
        } else {
          tokens.push({ kind: 'all' });
        }
      } else if (tokens[tokens.length - 1]?.kind !== 'star') {
        tokens.push({ kind: 'star' });
      }
      i = j;
    } else if (char === '?') {
      tokens.push({ kind: 'one' });
      i += 1;
    } else if (char === '[' && findClassEnd(chars, i) !== undefined) {
      const end = findClassEnd(chars, i)!;
      tokens.push(parseClass(chars.slice(i + 1, end - 1)));
      i = end;
    } else {
      tokens.push({ kind: 'char', char });
      i += 1;
    }
  }
  return tokens;
}

function parseClass(body: string[]): Token {
  let i = 0;
  const negated = body[0] === '!' || body[0] === '^';
  if (negated) i = 1;
  const items: string[] = [];
  const literal: boolean[] = [];
  for (; i < body.length; i += 1) {
    if (body[i] === '\\' && i + 1 < body.length) {
      items.push(body[i + 1]);
      literal.push(true);
      i += 1;
    } else {
      items.push(body[i]);
      literal.push(false);
    }
  }
  const ranges: Array<readonly [string, string]> = [];
  for (let k = 0; k < items.length; k += 1) {
    if (k + 2 < items.length && items[k + 1] === '-' && !literal[k + 1]) {
      ranges.push([items[k], items[k + 2]]);
      k += 2;
    } else {
      ranges.push([items[k], items[k]]);
    }
  }
  return { kind: 'class', negated, ranges };
}

function inClass(token: Extract<Token, { kind: 'class' }>, char: string): boolean {
  if (char === '/') return false;
  const point = char.codePointAt(0)!;
  const hit = token.ranges.some(([from, to]) => point >= from.codePointAt(0)! && point <= to.codePointAt(0)!);
  return hit !== token.negated;
}

/*
 * State (i, sub): before token i; sub 1 means "inside" a multi-character token (within a segment
 * of `**\/`, or past the `/` of a final `/**`). State (n, 0) accepts.
 */
function run(tokens: Token[], path: string): boolean {
  const n = tokens.length;
  let current = new Uint8Array(2 * (n + 1));
  let next = new Uint8Array(2 * (n + 1));

  const add = (set: Uint8Array, i: number, sub: number): void => {
    if (set[i * 2 + sub]) return;
    set[i * 2 + sub] = 1;
    if (i === n) return;
    const kind = tokens[i].kind;
    // Tokens that may match nothing let the next token start here.
    if (sub === 0 && (kind === 'star' || kind === 'dirs' || kind === 'rest' || kind === 'all')) add(set, i + 1, 0);
    if (sub === 1 && kind === 'rest') add(set, i + 1, 0);
  };

  add(current, 0, 0);
  for (const char of path) {
    next.fill(0);
    let alive = false;
    for (let i = 0; i < n; i += 1) {
      for (let sub = 0; sub < 2; sub += 1) {
        if (!current[i * 2 + sub]) continue;
        const token = tokens[i];
        alive = true;
        switch (token.kind) {
          case 'char':
            if (char === token.char) add(next, i + 1, 0);
            break;
          case 'one':
            if (char !== '/') add(next, i + 1, 0);
            break;
          case 'class':
            if (inClass(token, char)) add(next, i + 1, 0);
            break;
          case 'star':
            if (char !== '/') add(next, i, 0);
            break;
          case 'dirs':
            add(next, i, char === '/' ? 0 : 1);
            break;
          case 'rest':
            if (sub === 1 || char === '/') add(next, i, 1);
            break;
          case 'all':
            add(next, i, 0);
            break;
        }
      }
    }
    if (!alive) return false;
    [current, next] = [next, current];
  }
  return current[n * 2] === 1;
}
