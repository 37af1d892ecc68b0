/*
 * The simple commands in a shell text, for command rules and per-secret restrictions.
 *
 * This is defence in depth, not a sandbox: it reads the text the way bash would closely enough to
 * find the command words of every simple command (split at `;` `&` `|` `&&` `||` newlines and
 * parentheses, inside `$(...)`, backquotes, `${...}`, unquoted heredoc bodies, `bash -c TEXT` and
 * `eval TEXT`), with quotes removed and leading assignments, redirections and reserved words
 * skipped. A word whose value is only known at run time (a variable, a substitution, a glob, a
 * brace expansion, a reference token) is marked dynamic and never equals a literal. Where the
 * text cannot be read with confidence (an unterminated quote, an unbalanced parenthesis, a
 * nesting deeper than the bound) the result says `uncertain`, and allow forms then do not match.
 */

export interface Word {
  readonly text: string;
  /** Part of the word is only known when the shell runs it. */
  readonly dynamic: boolean;
}

export interface SimpleCommand {
  /** The command name and its arguments (assignments and redirections left out). */
  readonly words: readonly Word[];
}

export interface ParsedCommand {
  readonly commands: readonly SimpleCommand[];
  readonly uncertain: boolean;
}

export interface Span {
  readonly start: number;
  readonly end: number;
}

const MAX_DEPTH = 24;
const TOKEN_MARK = '\uE000';
const RESERVED_SKIP = new Set(['!', '{', '}', 'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', 'time', 'coproc']);
const NOT_A_COMMAND = new Set(['for', 'select', 'case', 'esac', 'in', 'function']);
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'mksh']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;
const METACHARS = ' \t\n;&|<>()';

/** A word as `policy explain` shows it: a reference as `<ref>`, a dynamic word marked `(?)`. */
export function describeWord(word: Word): string {
  const text = word.text.split(TOKEN_MARK).join('<ref>');
  return word.dynamic ? `${text}(?)` : text;
}

/** Parse `text`; `tokens` (reference tokens) are treated as dynamic word parts. */
export function parseCommandText(text: string, tokens: readonly Span[] = []): ParsedCommand {
  let source = text;
  for (const token of [...tokens].sort((a, b) => b.start - a.start)) {
    source = `${source.slice(0, token.start)}${TOKEN_MARK}${source.slice(token.end)}`;
  }
  const state: State = { commands: [], uncertain: false };
  new Lexer(source, 0, state).parseList(false);
  return { commands: state.commands, uncertain: state.uncertain };
}

interface State {
  commands: SimpleCommand[];
  uncertain: boolean;
}

interface Heredoc {
  readonly delimiter: string;
  readonly quoted: boolean;
  readonly stripTabs: boolean;
}

class Lexer {
  #i = 0;
  readonly #src: string;
  #depth: number;
  readonly #state: State;
  #pending: Heredoc[] = [];
  #lastWasHeredoc = false;

  constructor(src: string, depth: number, state: State) {
    this.#src = src;
    this.#depth = depth;
    this.#state = state;
    if (depth > MAX_DEPTH) state.uncertain = true;
  }

  /** Read commands up to the end, or up to the `)` that closes a `$(` or `(` when `closing`. */
  parseList(closing: boolean): void {
    if (this.#depth > MAX_DEPTH) {
      this.#state.uncertain = true;
      this.#i = this.#src.length;
      return;
    }
    const src = this.#src;
    let words: Word[] = [];
    let redirectTarget = false;
    const flush = (): void => {
      this.#finish(words);
      words = [];
      redirectTarget = false;
    };
    while (this.#i < src.length) {
      const c = src[this.#i] as string;
      if (c === ' ' || c === '\t') {
        this.#i++;
        continue;
      }
      if (c === '\\' && src[this.#i + 1] === '\n') {
        this.#i += 2;
        continue;
      }
      if (c === '\n') {
        flush();
        this.#i++;
        this.#readHeredocBodies();
        continue;
      }
      if (c === '#') {
        while (this.#i < src.length && src[this.#i] !== '\n') this.#i++;
        continue;
      }
      if (c === ')') {
        flush();
        this.#i++;
        if (closing) return;
        this.#state.uncertain = true; // a `case` pattern, or an unbalanced parenthesis
        continue;
      }
      if (c === ';' || c === '&' || c === '|') {
        flush();
        if (c === '&' && src[this.#i + 1] === '>') {
          // `&>FILE` / `&>>FILE` redirect both streams; the command goes on.
          this.#i += src[this.#i + 2] === '>' ? 3 : 2;
          redirectTarget = true;
          continue;
        }
        this.#i++;
        while (this.#i < src.length && ';&|'.includes(src[this.#i] as string)) this.#i++;
        continue;
      }
      if (c === '(') {
        if (src[this.#i + 1] === '(') {
          // `(( arithmetic ))`: no command words, but it may hide substitutions.
          this.#skipArithmetic(this.#i + 2);
          continue;
        }
        flush();
        this.#i++;
        this.#parseNested();
        continue;
      }
      if (c === '<' || c === '>') {
        this.#readRedirection();
        redirectTarget = !this.#lastWasHeredoc;
        continue;
      }
      const word = this.#readWord();
      if (/^[0-9]+$/.test(word.text) && !word.dynamic && (src[this.#i] === '<' || src[this.#i] === '>')) continue; // an fd number
      if (redirectTarget) {
        redirectTarget = false;
        continue;
      }
      words.push(word);
    }
    flush();
    if (closing) this.#state.uncertain = true; // `$(` or `(` never closed
  }

  /** A list inside `$(...)` or `( ... )`, read from the same text up to its `)`. */
  #parseNested(): void {
    this.#depth++;
    try {
      this.parseList(true);
    } finally {
      this.#depth--;
    }
  }

  #finish(words: Word[]): void {
    let start = 0;
    while (start < words.length) {
      const word = words[start] as Word;
      if (!word.dynamic && RESERVED_SKIP.has(word.text)) start++;
      else if (ASSIGNMENT.test(word.text)) start++;
      else break;
    }
    const rest = words.slice(start);
    if (rest.length === 0) return;
    const first = rest[0] as Word;
    if (!first.dynamic && NOT_A_COMMAND.has(first.text)) return;
    this.#state.commands.push({ words: rest });
    this.#expandInnerScripts(rest);
  }

  /** `bash -c TEXT` and `eval TEXT` run TEXT as commands: read it as such. */
  #expandInnerScripts(words: readonly Word[]): void {
    const first = words[0] as Word;
    if (first.dynamic) return;
    const name = first.text.slice(first.text.lastIndexOf('/') + 1);
    let script: string | undefined;
    if (name === 'eval') {
      const rest = words.slice(1);
      if (rest.some((word) => word.dynamic)) this.#state.uncertain = true;
      script = rest.map((word) => word.text).join(' ');
    } else if (SHELLS.has(name)) {
      const flag = words.findIndex((word, index) => index > 0 && !word.dynamic && /^-[A-Za-z]*c[A-Za-z]*$/.test(word.text));
      if (flag > 0) {
        const text = words[flag + 1];
        if (text === undefined || text.dynamic) this.#state.uncertain = true;
        else script = text.text;
      }
    }
    if (script !== undefined && script.trim() !== '') new Lexer(script, this.#depth + 1, this.#state).parseList(false);
  }

  #readRedirection(): void {
    const src = this.#src;
    this.#lastWasHeredoc = false;
    if (src.startsWith('<<<', this.#i)) {
      this.#i += 3;
      return;
    }
    if (src.startsWith('<<', this.#i)) {
      this.#i += 2;
      let stripTabs = false;
      if (src[this.#i] === '-') {
        stripTabs = true;
        this.#i++;
      }
      while (src[this.#i] === ' ' || src[this.#i] === '\t') this.#i++;
      const start = this.#i;
      const word = this.#readWord();
      const raw = src.slice(start, this.#i);
      if (word.text === '') this.#state.uncertain = true;
      else this.#pending.push({ delimiter: word.text, quoted: /['"\\]/.test(raw), stripTabs });
      this.#lastWasHeredoc = true;
      return;
    }
    // < > >> <> >& <& >| — then the target word follows.
    this.#i++;
    while (this.#i < src.length && '<>&|'.includes(src[this.#i] as string)) {
      if (src[this.#i] === '&' && src[this.#i + 1] === '>') break;
      this.#i++;
    }
    if (src[this.#i] === '-') this.#i++; // `>&-` closes a descriptor
  }

  #readHeredocBodies(): void {
    const src = this.#src;
    const pending = this.#pending;
    this.#pending = [];
    for (const heredoc of pending) {
      const bodyStart = this.#i;
      let found = false;
      while (this.#i < src.length) {
        let lineEnd = src.indexOf('\n', this.#i);
        if (lineEnd === -1) lineEnd = src.length;
        let line = src.slice(this.#i, lineEnd);
        if (heredoc.stripTabs) line = line.replace(/^\t+/, '');
        const lineStart = this.#i;
        this.#i = Math.min(lineEnd + 1, src.length);
        if (line === heredoc.delimiter) {
          found = true;
          if (!heredoc.quoted) this.#scanExpansions(src.slice(bodyStart, lineStart));
          break;
        }
      }
      if (!found) {
        this.#state.uncertain = true;
        if (!heredoc.quoted) this.#scanExpansions(src.slice(bodyStart));
      }
    }
  }

  /** Find substitutions in text that is expanded but not split into commands (a heredoc body). */
  #scanExpansions(text: string): void {
    const lexer = new Lexer(text, this.#depth + 1, this.#state);
    while (lexer.#i < text.length) {
      const c = text[lexer.#i];
      if (c === '\\') lexer.#i += 2;
      else if (c === '$' || c === '`') lexer.#readDollarOrBackquote();
      else lexer.#i++;
    }
  }

  #skipArithmetic(from: number): void {
    // Up to the matching `))`; substitutions inside are read as commands.
    this.#i = from;
    let depth = 2;
    const src = this.#src;
    while (this.#i < src.length && depth > 0) {
      const c = src[this.#i];
      if (c === '(') depth++;
      else if (c === ')') depth--;
      if (c === '$' || c === '`') {
        this.#readDollarOrBackquote();
        continue;
      }
      this.#i++;
    }
    if (depth > 0) this.#state.uncertain = true;
  }

  /** At `$` or a backquote: read the expansion; returns whether the text there is dynamic and its literal part. */
  #readDollarOrBackquote(): { dynamic: boolean; text: string } {
    const src = this.#src;
    const c = src[this.#i];
    if (c === '`') {
      this.#i++;
      let body = '';
      while (this.#i < src.length && src[this.#i] !== '`') {
        if (src[this.#i] === '\\' && '\\`$'.includes(src[this.#i + 1] ?? '')) {
          body += src[this.#i + 1];
          this.#i += 2;
        } else {
          body += src[this.#i];
          this.#i++;
        }
      }
      if (this.#i >= src.length) this.#state.uncertain = true;
      this.#i++;
      new Lexer(body, this.#depth + 1, this.#state).parseList(false);
      return { dynamic: true, text: '' };
    }
    // c === '$'
    const next = src[this.#i + 1];
    if (next === '(') {
      if (src[this.#i + 2] === '(') {
        this.#skipArithmetic(this.#i + 3);
        return { dynamic: true, text: '' };
      }
      this.#i += 2;
      this.#parseNested();
      return { dynamic: true, text: '' };
    }
    if (next === '{') {
      this.#i += 2;
      let depth = 1;
      while (this.#i < src.length && depth > 0) {
        const d = src[this.#i];
        if (d === '\\') this.#i += 2;
        else if (d === '}') {
          depth--;
          this.#i++;
        } else if (d === '$' && src[this.#i + 1] === '{') {
          depth++;
          this.#i += 2;
        } else if (d === '$' || d === '`') this.#readDollarOrBackquote();
        else if (d === "'") this.#readSingleQuoted();
        else if (d === '"') this.#readDoubleQuoted();
        else this.#i++;
      }
      if (depth > 0) this.#state.uncertain = true;
      return { dynamic: true, text: '' };
    }
    if (next === "'") {
      this.#i += 2;
      return { dynamic: false, text: this.#readAnsiC() };
    }
    if (next === '"') {
      this.#i++;
      return this.#readDoubleQuoted();
    }
    if (next !== undefined && /[A-Za-z0-9_@*#?$!-]/.test(next)) {
      this.#i += 2;
      if (/[A-Za-z_]/.test(next)) while (this.#i < src.length && /[A-Za-z0-9_]/.test(src[this.#i] as string)) this.#i++;
      return { dynamic: true, text: '' };
    }
    this.#i++;
    return { dynamic: false, text: '$' };
  }

  #readSingleQuoted(): string {
    const src = this.#src;
    const end = src.indexOf("'", this.#i + 1);
    if (end === -1) {
      this.#state.uncertain = true;
      const text = src.slice(this.#i + 1);
      this.#i = src.length;
      return text;
    }
    const text = src.slice(this.#i + 1, end);
    this.#i = end + 1;
    return text;
  }

  /** At the opening `"`. */
  #readDoubleQuoted(): { dynamic: boolean; text: string } {
    const src = this.#src;
    this.#i++;
    let text = '';
    let dynamic = false;
    while (this.#i < src.length && src[this.#i] !== '"') {
      const c = src[this.#i] as string;
      if (c === '\\') {
        const next = src[this.#i + 1] ?? '';
        if ('$`"\\'.includes(next) && next !== '') text += next;
        else if (next !== '\n') text += c + next;
        this.#i += 2;
      } else if (c === '$' || c === '`') {
        const part = this.#readDollarOrBackquote();
        text += part.text;
        dynamic ||= part.dynamic;
      } else {
        text += c;
        this.#i++;
      }
    }
    if (this.#i >= src.length) this.#state.uncertain = true;
    this.#i++;
    return { dynamic, text };
  }

  /** After `$'`: the ANSI-C string up to its closing quote, common escapes decoded. */
  #readAnsiC(): string {
    const src = this.#src;
    let text = '';
    while (this.#i < src.length && src[this.#i] !== "'") {
      if (src[this.#i] === '\\') {
        const rest = src.slice(this.#i + 1);
        const hex = /^x([0-9A-Fa-f]{1,2})/.exec(rest);
        const octal = /^([0-7]{1,3})/.exec(rest);
        const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v' };
        if (hex) {
          text += String.fromCharCode(parseInt(hex[1] as string, 16));
          this.#i += 1 + hex[0].length;
        } else if (octal) {
          text += String.fromCharCode(parseInt(octal[1] as string, 8));
          this.#i += 1 + octal[0].length;
        } else if (rest[0] !== undefined && simple[rest[0]] !== undefined) {
          text += simple[rest[0]];
          this.#i += 2;
        } else {
          text += `\\${rest[0] ?? ''}`;
          this.#i += 2;
        }
      } else {
        text += src[this.#i];
        this.#i++;
      }
    }
    if (this.#i >= src.length) this.#state.uncertain = true;
    this.#i++;
    return text;
  }

  #readWord(): Word {
    const src = this.#src;
    let text = '';
    let dynamic = false;
    while (this.#i < src.length) {
      const c = src[this.#i] as string;
      if (METACHARS.includes(c)) {
        // `name=(a b)` is an array assignment, not a subshell.
        if (c === '(' && text.endsWith('=') && ASSIGNMENT.test(text)) {
          let depth = 0;
          do {
            if (src[this.#i] === '(') depth++;
            else if (src[this.#i] === ')') depth--;
            else if (src[this.#i] === '$' || src[this.#i] === '`') {
              this.#readDollarOrBackquote();
              continue;
            }
            this.#i++;
          } while (this.#i < src.length && depth > 0);
          dynamic = true;
          continue;
        }
        break;
      }
      if (c === '\\') {
        const next = src[this.#i + 1];
        if (next !== '\n' && next !== undefined) text += next;
        this.#i += 2;
      } else if (c === "'") {
        const quoted = this.#readSingleQuoted();
        if (quoted.includes(TOKEN_MARK)) dynamic = true;
        text += quoted;
      } else if (c === '"') {
        const part = this.#readDoubleQuoted();
        if (part.text.includes(TOKEN_MARK)) dynamic = true;
        text += part.text;
        dynamic ||= part.dynamic;
      } else if (c === '$' || c === '`') {
        const part = this.#readDollarOrBackquote();
        text += part.text;
        dynamic ||= part.dynamic;
      } else {
        if (c === TOKEN_MARK || c === '*' || c === '?') dynamic = true;
        if (c === '[' && src.indexOf(']', this.#i) !== -1 && text !== '[') dynamic = true;
        if (c === '{' && (text !== '' || !' \t\n;&|'.includes(src[this.#i + 1] ?? ' '))) dynamic = true;
        text += c;
        this.#i++;
      }
    }
    if (text === '[[' || text === '[' || text === ']]' || text === ']') dynamic = false;
    return { text, dynamic };
  }
}
