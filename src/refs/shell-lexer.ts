/*
 * A small bash lexer that answers one question for every reference token that will be
 * substituted: in which quoting context does it sit?
 *
 * It reads the command the way bash will read the rewritten script. Tokens being substituted are
 * atomic word parts (they become `"${NAME}"`-style expansions that contain no syntax the
 * surrounding text can see); every other character, including tokens that stay literal, is plain
 * shell text. It is not a full parser: it tracks what decides quoting (quotes, escapes, `$(...)`,
 * backquotes, `${...}`, arithmetic, heredocs, comments, `case` patterns, `[[ ... ]]`) and the
 * words of each simple command (for commands that parse an argument as code), and fails
 * closed: where it cannot be sure how bash reads the text, tokens there are refused rather than
 * guessed at.
 *
 * Backquote bodies and heredoc bodies are lexed by a nested lexer over their text (after bash's
 * backslash removal for backquotes), with a map back to offsets in the original command.
 */

import { getEvaluation, getInputEvaluation, type Evaluation } from './evaluating-commands';
import type { RefToken } from './types';

/** Contexts where a token can be rewritten into an expansion. */
export type ExpansionContext =
  | 'unquoted'
  | 'double-quoted'
  | 'single-quoted'
  | 'heredoc'
  | 'parameter-word';

/** Contexts where no rewrite is possible or safe. */
export type RefusedContext =
  | Evaluation['context']
  | 'quoted-heredoc'
  | 'heredoc-delimiter'
  | 'ansi-c-string'
  | 'locale-string'
  | 'conditional-arithmetic'
  | 'parameter-name'
  | 'escaped'
  | 'after-dollar'
  | 'uncertain';

export type Placement =
  | { readonly kind: 'expand'; readonly context: ExpansionContext }
  | { readonly kind: 'literal'; readonly context: 'comment' }
  | { readonly kind: 'refuse'; readonly context: RefusedContext; readonly reason?: string };

export interface LexResult {
  /** One placement per token given, in the same order. */
  readonly placements: readonly Placement[];
  /** Set when the command as a whole cannot be read with confidence (an unterminated construct). */
  readonly problem?: { readonly reason: string; readonly offset: number };
}

/**
 * Place each token of `tokens` (tokens of `command` that will be substituted). The tokens must be
 * non-overlapping and lie inside `command`; the caller validates that.
 */
export function placeTokens(command: string, tokens: readonly RefToken[]): LexResult {
  const shared: Shared = {
    byStart: new Map(tokens.map((token) => [token.start, token])),
    placements: new Map(),
    poison: null,
    problem: null,
    conditions: new Set(),
  };
  const identity = Array.from({ length: command.length }, (_, index) => index);
  new Lexer(command, identity, shared, 'cmd', null).run();
  // A `[[` never closed with `]]` still decides the tokens it holds.
  for (const condition of shared.conditions) settleCondition(shared, condition);

  // Tokens the lexer never reached (it stops at an unterminated construct) are refused.
  const unplaced: Placement = {
    kind: 'refuse',
    context: 'uncertain',
    reason: shared.problem?.reason ?? 'the reference sits where execgate could not follow the shell syntax',
  };
  const placements = tokens.map((token): Placement => shared.placements.get(token) ?? unplaced);
  return shared.problem ? { placements, problem: shared.problem } : { placements };
}

/**
 * A `[[ ... ]]` being read: bash evaluates operands of -eq and friends as arithmetic, and the
 * operand of -v / -R as a variable name (whose subscript is arithmetic).
 */
interface Condition {
  arithmetic: boolean;
  variableName: boolean;
  readonly tokens: RefToken[];
}

interface Shared {
  readonly byStart: ReadonlyMap<number, RefToken>;
  readonly placements: Map<RefToken, Placement>;
  /** Once set, the lexer is unsure of everything after `offset`; tokens after it are refused. */
  poison: { reason: string; offset: number } | null;
  problem: { reason: string; offset: number } | null;
  readonly conditions: Set<Condition>;
}

type CaseState = 'subject' | 'in' | 'pattern' | 'body';

interface CommandFrame {
  readonly kind: 'cmd';
  /** How the frame began: the root of a (nested) lexer, `(`, `$(`, `<(` or `>(`. */
  readonly origin: 'root' | 'subshell' | 'substitution';
  readonly start: number;
  wordStart: boolean;
  commandStart: boolean;
  /** The current word while it is plain literal text (for reserved words), else null. */
  word: string | null;
  wordAtCommandStart: boolean;
  /** The next word names a function (`function NAME { ... }`); the body after it is a command. */
  functionName: boolean;
  /** Words of the current simple command so far (null where not plain literal text). */
  words: (string | null)[];
  /** The current word has an unquoted `=` (an assignment's value follows). */
  wordEquals: boolean;
  /** The current word follows a redirection operator: a file name or input, not an argument. */
  redirectTarget: boolean;
  /** The current word is a here-string (`<<< word`) that a shell will parse. */
  inputWord: Evaluation | null;
  patternStart: boolean;
  readonly cases: CaseState[];
  readonly pending: Heredoc[];
  condition: Condition | null;
}

interface StringFrame {
  readonly kind: 'squote' | 'dquote' | 'ansi' | 'locale' | 'heredoc';
  readonly start: number;
}

interface ParameterFrame {
  readonly kind: 'param';
  readonly start: number;
  /** The `${` sits inside double quotes or a heredoc body: single quotes are then unreliable. */
  readonly quoted: boolean;
  part: 'afterName' | 'word' | 'arith' | 'uncertain';
}

interface ArithmeticFrame {
  readonly kind: 'arith';
  readonly start: number;
  readonly closer: '))' | ']';
  depth: number;
}

type Frame = CommandFrame | StringFrame | ParameterFrame | ArithmeticFrame;

interface Heredoc {
  readonly delimiter: string;
  readonly quoted: boolean;
  readonly stripTabs: boolean;
  /** The words of the command the heredoc feeds (still growing until that command ends). */
  readonly words: readonly (string | null)[];
}

/** Nested lexers (backquotes in backquotes, heredocs in `$(...)` in heredocs) deeper than this are refused. */
const MAX_NESTING = 64;

/** Stands for a substituted token in lookahead: it is a word part, never an operator. */
const TOKEN = 'TOKEN';
const BLANK = new Set([' ', '\t']);
const METACHAR = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
const ARITHMETIC_TEST_OPERATORS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
// After these reserved words a new command (and so another reserved word) may start.
const COMMAND_PREFIX_WORDS = new Set(['!', '{', 'then', 'do', 'else', 'elif', 'if', 'while', 'until', 'time']);

const FRAME_NAMES: Record<Frame['kind'], string> = {
  cmd: '`$(...)` or `(...)`',
  squote: "single-quoted string '...'",
  dquote: 'double-quoted string "..."',
  ansi: "`$'...'` string",
  locale: '`$"..."` string',
  heredoc: 'heredoc body',
  param: '`${...}` expansion',
  arith: 'arithmetic expression',
};

class Lexer {
  private readonly stack: Frame[];
  private readonly starts = new Map<number, RefToken>();

  constructor(
    private readonly text: string,
    /** Offset in the original command of each character of `text`. */
    private readonly map: readonly number[],
    private readonly shared: Shared,
    root: 'cmd' | 'heredoc',
    /** Set when this lexer reads text where every token is refused (inside arithmetic, say). */
    private readonly inherited: Placement | null,
    private readonly depth = 0,
  ) {
    this.stack = [root === 'cmd' ? newCommandFrame('root', 0) : { kind: 'heredoc', start: 0 }];
    for (let index = 0; index < text.length; index += 1) {
      const token = shared.byStart.get(map[index] as number);
      if (token === undefined) continue;
      const last = index + token.raw.length - 1;
      // A token is contiguous in any nested text (its characters are never escapes); if not, the
      // map is wrong and the token is left unplaced, which refuses it.
      if (last < text.length && map[last] === token.end - 1) this.starts.set(index, token);
    }
  }

  run(): void {
    if (this.depth > MAX_NESTING) {
      this.fail(`the command nests backquotes or heredocs more than ${MAX_NESTING} levels deep`, 0);
      return;
    }
    let i = 0;
    while (i < this.text.length) {
      if (this.shared.problem) return;
      const token = this.starts.get(i);
      i = token ? this.placeToken(token, i) : this.step(i);
    }
    this.finish();
  }

  // --- helpers -------------------------------------------------------------------------------

  private peek(index: number): string {
    if (this.starts.has(index)) return TOKEN;
    return index < this.text.length ? (this.text[index] as string) : '';
  }

  private top(): Frame {
    return this.stack[this.stack.length - 1] as Frame;
  }

  private origin(index: number): number {
    return index < this.map.length ? (this.map[index] as number) : (this.map[this.map.length - 1] ?? -1) + 1;
  }

  /**
   * The refusal that applies to everything at the current position whatever its quoting: inside
   * arithmetic, or inside an argument that a command parses as code.
   */
  private enclosingRefusal(): Placement | null {
    if (this.inherited) return this.inherited;
    if (this.stack.some((frame) => frame.kind === 'arith')) return { kind: 'refuse', context: 'arithmetic' };
    for (const frame of this.stack) {
      if (frame.kind !== 'cmd' || frame.wordStart) continue;
      const evaluation = frame.redirectTarget
        ? frame.inputWord
        : getEvaluation(frame.words, frame.words.length, frame.wordEquals);
      if (evaluation) return { kind: 'refuse', context: evaluation.context, reason: evaluation.reason };
    }
    return null;
  }

  private setPlacement(token: RefToken, placement: Placement): void {
    if (!this.shared.placements.has(token)) this.shared.placements.set(token, placement);
  }

  private poison(reason: string, index: number): void {
    if (!this.shared.poison) this.shared.poison = { reason, offset: this.origin(index) };
  }

  private fail(reason: string, index: number): number {
    if (!this.shared.problem) this.shared.problem = { reason, offset: this.origin(index) };
    return this.text.length;
  }

  /** Place a token refused for a reason found by the character before it; returns the index after it. */
  private refuseAt(index: number, context: RefusedContext): number {
    const token = this.starts.get(index) as RefToken;
    this.setPlacement(token, { kind: 'refuse', context });
    return index + token.raw.length;
  }

  // --- tokens --------------------------------------------------------------------------------

  private placeToken(token: RefToken, index: number): number {
    const frame = this.top();
    for (const condition of this.shared.conditions) condition.tokens.push(token);
    if (frame.kind === 'cmd') markWordPart(frame);
    this.setPlacement(token, this.placementFor(frame));
    return index + token.raw.length;
  }

  private placementFor(frame: Frame): Placement {
    const poison = this.shared.poison;
    if (poison) return { kind: 'refuse', context: 'uncertain', reason: poison.reason };
    const enclosing = this.enclosingRefusal();
    if (enclosing) return enclosing;
    switch (frame.kind) {
      case 'cmd':
        return { kind: 'expand', context: 'unquoted' };
      case 'squote':
        return { kind: 'expand', context: 'single-quoted' };
      case 'dquote':
        return { kind: 'expand', context: 'double-quoted' };
      case 'heredoc':
        return { kind: 'expand', context: 'heredoc' };
      case 'ansi':
        return { kind: 'refuse', context: 'ansi-c-string' };
      case 'locale':
        return { kind: 'refuse', context: 'locale-string' };
      case 'arith':
        return { kind: 'refuse', context: 'arithmetic' };
      case 'param':
        if (frame.part === 'word') return { kind: 'expand', context: 'parameter-word' };
        if (frame.part === 'arith') return { kind: 'refuse', context: 'arithmetic' };
        if (frame.part === 'afterName') return { kind: 'refuse', context: 'parameter-name' };
        return {
          kind: 'refuse',
          context: 'uncertain',
          reason: 'the `${...}` expansion around the reference has a form execgate does not read',
        };
    }
  }

  // --- dispatch ------------------------------------------------------------------------------

  private step(i: number): number {
    const frame = this.top();
    const c = this.text[i] as string;
    if (c === '\n' && frame.kind !== 'cmd' && frame.kind !== 'heredoc' && !isStringFrame(frame)) {
      // A newline inside ${...} or arithmetic while a heredoc waits for its body: bash's order of
      // reading is not obvious there.
      if (this.hasPendingHeredoc()) this.poison('a line break inside an expansion before a heredoc body', i);
    }
    switch (frame.kind) {
      case 'cmd':
        return this.stepCommand(frame, i, c);
      case 'squote':
        if (c === "'") this.stack.pop();
        return i + 1;
      case 'ansi':
        if (c === '\\') return this.peek(i + 1) === TOKEN ? i + 1 : i + 2;
        if (c === "'") this.stack.pop();
        return i + 1;
      case 'dquote':
      case 'locale':
        return this.stepDoubleQuoted(i, c);
      case 'heredoc':
        return this.stepHeredoc(i, c);
      case 'param':
        return this.stepParameter(frame, i, c);
      case 'arith':
        return this.stepArithmetic(frame, i, c);
    }
  }

  // --- unquoted command text -----------------------------------------------------------------

  private stepCommand(frame: CommandFrame, i: number, c: string): number {
    if (BLANK.has(c)) {
      this.endWord(frame);
      return i + 1;
    }
    if (c === '\n') return this.commandNewline(frame, i);
    if (c === '#' && frame.wordStart) return this.skipComment(i);
    if (c === '\\') {
      const next = this.peek(i + 1);
      if (next === TOKEN) {
        markWordPart(frame);
        return this.refuseAt(i + 1, 'escaped');
      }
      // A backslash-newline is removed before anything else: the word goes on as if unbroken.
      if (next === '\n') return i + 2;
      markWordPart(frame);
      return Math.min(i + 2, this.text.length);
    }
    if (c === "'" || c === '"') {
      markWordPart(frame);
      this.stack.push({ kind: c === "'" ? 'squote' : 'dquote', start: i });
      return i + 1;
    }
    if (c === '`') {
      markWordPart(frame);
      return this.backquote(i);
    }
    if (c === '$') {
      markWordPart(frame);
      return this.dollar(i, true);
    }
    if (c === '(') return this.openParen(frame, i);
    if (c === ')') return this.closeParen(frame, i);
    if (c === '<' || c === '>') return this.redirection(frame, i, c);
    if (c === ';' || c === '&' || c === '|') return this.controlOperator(frame, i, c);
    return this.wordCharacter(frame, i, c);
  }

  private wordCharacter(frame: CommandFrame, i: number, c: string): number {
    if (frame.wordStart) {
      beginWord(frame);
      // `name[` starts an array subscript (`a[i]=v`, `unset a[i]`, `declare a[i]`) and a `[` that
      // opens a word may be one in `arr=([i]=v)`: bash may evaluate it as arithmetic.
      const subscript = /^(?:[A-Za-z_][A-Za-z0-9_]*)?\[/.exec(this.plainSlice(i));
      const after = subscript ? this.peek(i + subscript[0].length) : '';
      if (subscript && after !== '' && after !== '[' && !BLANK.has(after) && after !== '\n') {
        frame.word = null;
        this.stack.push({ kind: 'arith', start: i, closer: ']', depth: 0 });
        return i + subscript[0].length;
      }
    }
    if (frame.word !== null) frame.word += c;
    if (c === '=') frame.wordEquals = true;
    return i + 1;
  }

  /** The text from `i` up to the next substituted token or line end, for small lookahead regexes. */
  private plainSlice(i: number): string {
    let end = i;
    while (end < this.text.length && end - i < 300 && !this.starts.has(end) && this.text[end] !== '\n') end += 1;
    return this.text.slice(i, end);
  }

  private endWord(frame: CommandFrame): void {
    if (frame.wordStart) return;
    frame.wordStart = true;
    const word = frame.word;
    const atCommandStart = frame.wordAtCommandStart;
    frame.word = null;
    if (!frame.redirectTarget) frame.words.push(word);
    frame.redirectTarget = false;
    frame.inputWord = null;
    frame.commandStart = false;
    const state = frame.cases[frame.cases.length - 1];
    if (state === 'subject') {
      frame.cases[frame.cases.length - 1] = 'in';
      return;
    }
    if (state === 'in') {
      // Anything but `in` here is a syntax error in bash; reading on as patterns is harmless.
      frame.cases[frame.cases.length - 1] = 'pattern';
      frame.patternStart = true;
      return;
    }
    if (state === 'pattern') {
      if (word === 'esac') frame.cases.pop();
      return;
    }
    if (frame.functionName) {
      frame.functionName = false;
      frame.commandStart = true;
      return;
    }
    if (word === null) return;
    if (atCommandStart && word === 'function') {
      frame.functionName = true;
      return;
    }
    if (atCommandStart && word === 'case') {
      frame.cases.push('subject');
      return;
    }
    if (atCommandStart && word === 'esac' && state === 'body') {
      frame.cases.pop();
      return;
    }
    if (atCommandStart && word === '[[' && frame.condition === null) {
      frame.condition = { arithmetic: false, variableName: false, tokens: [] };
      this.shared.conditions.add(frame.condition);
      return;
    }
    if (frame.condition !== null) {
      if (word === ']]') {
        settleCondition(this.shared, frame.condition);
        frame.condition = null;
      } else if (ARITHMETIC_TEST_OPERATORS.has(word)) {
        frame.condition.arithmetic = true;
      } else if (word === '-v' || word === '-R') {
        frame.condition.variableName = true;
      }
      return;
    }
    frame.commandStart = atCommandStart && COMMAND_PREFIX_WORDS.has(word);
  }

  private commandNewline(frame: CommandFrame, i: number): number {
    this.endWord(frame);
    frame.commandStart = true;
    const level = this.parserLevel();
    const outer = this.stack.some((each) => each !== level && each.kind === 'cmd' && each.pending.length > 0);
    // bash 5 parses `$(...)` with a parser of its own: which one reads a heredoc body that an
    // outer line started is not something to guess about.
    if (outer) this.poison('a line break inside `$(...)` before a heredoc body', i);
    if (level.pending.length > 0) return this.readHeredocBodies(level, i + 1);
    return i + 1;
  }

  /**
   * The frame that owns heredocs started here: `( ... )` subshells share their parser with the
   * enclosing text (a heredoc body starts after the next line break, even inside the subshell);
   * `$(...)` and nested lexers have their own.
   */
  private parserLevel(): CommandFrame {
    for (let k = this.stack.length - 1; k >= 0; k -= 1) {
      const frame = this.stack[k] as Frame;
      if (frame.kind === 'cmd' && frame.origin !== 'subshell') return frame;
    }
    return this.stack[0] as CommandFrame;
  }

  private skipComment(i: number): number {
    let j = i;
    while (j < this.text.length && this.text[j] !== '\n') {
      const token = this.starts.get(j);
      if (token) {
        this.setPlacement(token, { kind: 'literal', context: 'comment' });
        j += token.raw.length;
      } else {
        j += 1;
      }
    }
    return j;
  }

  private openParen(frame: CommandFrame, i: number): number {
    if (frame.wordStart && this.peek(i + 1) === '(') {
      this.stack.push({ kind: 'arith', start: i, closer: '))', depth: 0 });
      return i + 2;
    }
    if (frame.cases[frame.cases.length - 1] === 'pattern' && frame.patternStart && frame.wordStart) {
      // The optional `(` before a case pattern.
      frame.patternStart = false;
      return i + 1;
    }
    this.endWord(frame);
    this.stack.push(newCommandFrame('subshell', i));
    return i + 1;
  }

  private closeParen(frame: CommandFrame, i: number): number {
    this.endWord(frame);
    if (frame.cases[frame.cases.length - 1] === 'pattern') {
      frame.cases[frame.cases.length - 1] = 'body';
      frame.commandStart = true;
      return i + 1;
    }
    if (frame.origin === 'root') {
      this.poison('an unmatched `)`', i);
      return i + 1;
    }
    this.closeCommandFrame(frame, i);
    return i + 1;
  }

  private closeCommandFrame(frame: CommandFrame, i: number): void {
    if (frame.pending.length > 0) this.poison('a heredoc whose body never started', i);
    if (frame.condition) {
      settleCondition(this.shared, frame.condition);
      frame.condition = null;
    }
    this.stack.pop();
    const parent = this.top();
    // After `( ... )` a new word starts (and after `name()` the function body, a command); after
    // `$( ... )` the word goes on.
    if (parent.kind === 'cmd' && frame.origin === 'subshell') {
      parent.wordStart = true;
      parent.commandStart = true;
    }
  }

  private redirection(frame: CommandFrame, i: number, c: string): number {
    this.endWord(frame);
    const next = this.peek(i + 1);
    if (c === '<' && next === '<') {
      if (this.peek(i + 2) === '<') {
        // A here-string is an ordinary word, unless a shell reads it as its script.
        frame.redirectTarget = true;
        frame.inputWord = getInputEvaluation(frame.words);
        return i + 3;
      }
      return this.heredocOperator(i);
    }
    if (next === '(') {
      markWordPart(frame); // `<(...)` is a word (a file name), not an operator
      this.stack.push(newCommandFrame('substitution', i));
      return i + 2;
    }
    // `>>`, `>&`, `<&`, `>|`, `<>`: one operator; the next word is a file name or descriptor.
    frame.redirectTarget = true;
    return next === '>' || next === '&' || next === '|' || (c === '<' && next === '>') ? i + 2 : i + 1;
  }

  private controlOperator(frame: CommandFrame, i: number, c: string): number {
    this.endWord(frame);
    let length = 1;
    if (c === ';' && this.peek(i + 1) === ';') length = this.peek(i + 2) === '&' ? 3 : 2;
    else if (c === ';' && this.peek(i + 1) === '&') length = 2;
    else if (c === '&' && this.peek(i + 1) === '>') return i + 1; // `&>`: a redirection, not a separator
    else if ((c === '&' || c === '|') && (this.peek(i + 1) === c || (c === '|' && this.peek(i + 1) === '&'))) length = 2;
    if (length > 1 && c === ';' && frame.cases[frame.cases.length - 1] === 'body') {
      frame.cases[frame.cases.length - 1] = 'pattern';
      frame.patternStart = true;
    }
    frame.commandStart = true;
    return i + length;
  }

  // --- heredocs ------------------------------------------------------------------------------

  private heredocOperator(i: number): number {
    let j = i + 2;
    const stripTabs = this.peek(j) === '-';
    if (stripTabs) j += 1;
    while (BLANK.has(this.peek(j))) j += 1;
    let delimiter = '';
    let quoted = false;
    while (j < this.text.length) {
      const c = this.peek(j);
      if (c === TOKEN) {
        j = this.refuseAt(j, 'heredoc-delimiter');
        this.poison('a heredoc delimiter made of a reference', j);
        continue;
      }
      if (METACHAR.has(c)) break;
      if (c === "'" || c === '"') {
        quoted = true;
        const end = this.quotedDelimiterEnd(j, c);
        if (end < 0) return this.fail('the command ends inside a quoted heredoc delimiter', j);
        delimiter += c === '"' ? this.text.slice(j + 1, end).replace(/\\([$`"\\\n])/g, '$1') : this.text.slice(j + 1, end);
        j = end + 1;
      } else if (c === '\\') {
        quoted = true;
        delimiter += this.text[j + 1] ?? '';
        j += 2;
      } else {
        // bash does not expand a delimiter, but `$` and backquotes make its end hard to find.
        if (c === '$' || c === '`') this.poison('a heredoc delimiter containing `$` or a backquote', j);
        delimiter += c;
        j += 1;
      }
    }
    if (delimiter === '' && !quoted) this.poison('a `<<` without a delimiter word', j);
    const command = this.top() as CommandFrame;
    this.parserLevel().pending.push({ delimiter, quoted, stripTabs, words: command.words });
    return j;
  }

  private quotedDelimiterEnd(j: number, quote: string): number {
    let k = j + 1;
    while (k < this.text.length) {
      if (this.starts.has(k)) {
        k = this.refuseAt(k, 'heredoc-delimiter');
        continue;
      }
      const c = this.text[k];
      if (c === quote) return k;
      if (c === '$' || c === '`') this.poison('a heredoc delimiter containing `$` or a backquote', k);
      k += quote === '"' && c === '\\' ? 2 : 1;
    }
    return -1;
  }

  /** Read the bodies of the heredocs started on the line that just ended; returns the index after them. */
  private readHeredocBodies(frame: CommandFrame, from: number): number {
    let position = from;
    for (const heredoc of frame.pending.splice(0)) {
      const { bodyEnd, next } = this.findHeredocEnd(heredoc, position);
      if (heredoc.quoted) {
        for (let k = position; k < bodyEnd; k += 1) {
          if (this.starts.has(k)) k = this.refuseAt(k, 'quoted-heredoc') - 1;
        }
      } else {
        const input = getInputEvaluation(heredoc.words);
        const body = new Lexer(
          this.text.slice(position, bodyEnd),
          this.map.slice(position, bodyEnd),
          this.shared,
          'heredoc',
          this.enclosingRefusal() ?? (input && { kind: 'refuse', context: input.context, reason: input.reason }),
          this.depth + 1,
        );
        body.run();
      }
      position = next;
    }
    return position;
  }

  private findHeredocEnd(heredoc: Heredoc, from: number): { bodyEnd: number; next: number } {
    let lineStart = from;
    while (lineStart < this.text.length) {
      let lineEnd = this.lineEnd(lineStart);
      // In an unquoted heredoc bash joins a line ending in a backslash with the next one before it
      // compares lines with the delimiter.
      if (!heredoc.quoted) {
        while (lineEnd < this.text.length && endsWithEscape(this.text, lineStart, lineEnd)) {
          lineEnd = this.lineEnd(lineEnd + 1);
        }
      }
      let line = this.text.slice(lineStart, lineEnd);
      if (!heredoc.quoted) line = line.replace(/\\\n/g, '');
      if (heredoc.stripTabs) line = line.replace(/^\t+/, '');
      // A line holding a substituted token never matches: bash compares the rewritten line.
      if (line === heredoc.delimiter && !this.hasTokenIn(lineStart, lineEnd)) {
        return { bodyEnd: lineStart, next: Math.min(lineEnd + 1, this.text.length) };
      }
      lineStart = lineEnd + 1;
    }
    // No delimiter line: bash warns and takes the rest of the input as the body.
    return { bodyEnd: this.text.length, next: this.text.length };
  }

  private lineEnd(from: number): number {
    const end = this.text.indexOf('\n', from);
    return end < 0 ? this.text.length : end;
  }

  private hasTokenIn(from: number, to: number): boolean {
    for (let k = from; k < to; k += 1) if (this.starts.has(k)) return true;
    return false;
  }

  private hasPendingHeredoc(): boolean {
    return this.stack.some((frame) => frame.kind === 'cmd' && frame.pending.length > 0);
  }

  // --- quoted text ---------------------------------------------------------------------------

  private stepDoubleQuoted(i: number, c: string): number {
    if (c === '"') {
      this.stack.pop();
      return i + 1;
    }
    if (c === '\\') {
      const next = this.peek(i + 1);
      // `\${NAME}` would print `${NAME}` literally.
      if (next === TOKEN) return this.refuseAt(i + 1, 'escaped');
      return next === '$' || next === '`' || next === '"' || next === '\\' || next === '\n' ? i + 2 : i + 1;
    }
    if (c === '$') return this.dollar(i, false);
    if (c === '`') return this.backquote(i);
    return i + 1;
  }

  private stepHeredoc(i: number, c: string): number {
    if (c === '\\') {
      const next = this.peek(i + 1);
      if (next === TOKEN) return this.refuseAt(i + 1, 'escaped');
      return next === '$' || next === '`' || next === '\\' || next === '\n' ? i + 2 : i + 1;
    }
    if (c === '$') return this.dollar(i, false);
    if (c === '`') return this.backquote(i);
    return i + 1;
  }

  // --- expansions ----------------------------------------------------------------------------

  /** At a `$`. `unquoted`: `$'...'` and `$"..."` are special here (not inside "..." or heredocs). */
  private dollar(i: number, unquoted: boolean): number {
    const next = this.peek(i + 1);
    // `$` + `"${NAME}"` is bash's `$"..."`; `$` + `${NAME}` is `$$` followed by text.
    if (next === TOKEN) return this.refuseAt(i + 1, 'after-dollar');
    if (next === '$') return i + 2; // `$$`, the shell's PID: whatever follows is a new part
    if (next === '(') {
      if (this.peek(i + 2) === '(') {
        this.stack.push({ kind: 'arith', start: i, closer: '))', depth: 0 });
        return i + 3;
      }
      this.stack.push(newCommandFrame('substitution', i));
      return i + 2;
    }
    if (next === '[') {
      this.stack.push({ kind: 'arith', start: i, closer: ']', depth: 0 });
      return i + 2;
    }
    if (next === '{') return this.parameterName(i);
    if (unquoted && next === "'") {
      this.stack.push({ kind: 'ansi', start: i });
      return i + 2;
    }
    if (unquoted && next === '"') {
      this.stack.push({ kind: 'locale', start: i });
      return i + 2;
    }
    return i + 1;
  }

  /** At `${`: read the parameter name, then leave the frame expecting an operator or `}`. */
  private parameterName(i: number): number {
    const outer = this.top();
    const quoted =
      outer.kind === 'dquote' || outer.kind === 'locale' || outer.kind === 'heredoc' || (outer.kind === 'param' && outer.quoted);
    const frame: ParameterFrame = { kind: 'param', start: i, quoted, part: 'afterName' };
    this.stack.push(frame);
    const name = /^(?:[!#](?=[A-Za-z0-9_@*#?$!-]))?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/.exec(
      this.plainSlice(i + 2),
    );
    if (!name) {
      frame.part = this.peek(i + 2) === TOKEN ? 'afterName' : 'uncertain';
      return i + 2;
    }
    const after = i + 2 + name[0].length;
    if (this.peek(after) === '[') {
      // The subscript of an indexed array is arithmetic.
      this.stack.push({ kind: 'arith', start: after, closer: ']', depth: 0 });
      return after + 1;
    }
    return after;
  }

  private stepParameter(frame: ParameterFrame, i: number, c: string): number {
    if (c === '}') {
      this.stack.pop();
      return i + 1;
    }
    if (frame.part === 'afterName') return this.parameterOperator(frame, i, c);
    if (c === '\\') {
      if (this.peek(i + 1) === TOKEN) return this.refuseAt(i + 1, 'escaped');
      return i + 2;
    }
    if (c === '$') return this.dollar(i, !frame.quoted);
    if (c === '`') return this.backquote(i);
    if (c === '"') {
      this.stack.push({ kind: 'dquote', start: i });
      return i + 1;
    }
    if (c === "'") {
      if (frame.quoted) {
        // Inside "${...}" bash keeps single quotes literal but still matches them when finding
        // the `}`; sh (dash) does not. The end of this expansion is therefore uncertain.
        frame.part = 'uncertain';
        this.poison("a single quote inside a double-quoted `${...}`, which bash and sh read differently", i);
        return i + 1;
      }
      this.stack.push({ kind: 'squote', start: i });
      return i + 1;
    }
    return i + 1;
  }

  private parameterOperator(frame: ParameterFrame, i: number, c: string): number {
    const next = this.peek(i + 1);
    if (c === ':') {
      if (next === '-' || next === '=' || next === '+' || next === '?') {
        frame.part = 'word';
        return i + 2;
      }
      frame.part = 'arith'; // ${name:offset:length}
      return i + 1;
    }
    if ('-=+?@'.includes(c)) {
      frame.part = 'word';
      return i + 1;
    }
    if ('#%^,'.includes(c)) {
      frame.part = 'word'; // a pattern: quoted text in it is literal, as the rewrite wants
      return next === c ? i + 2 : i + 1;
    }
    if (c === '/') {
      frame.part = 'word';
      return next === '/' || next === '#' || next === '%' ? i + 2 : i + 1;
    }
    frame.part = 'uncertain';
    return i + 1;
  }

  private stepArithmetic(frame: ArithmeticFrame, i: number, c: string): number {
    if (c === '(' || (c === '[' && frame.closer === ']')) {
      frame.depth += 1;
      return i + 1;
    }
    if (c === ')' && frame.closer === '))') {
      if (frame.depth > 0) {
        frame.depth -= 1;
        return i + 1;
      }
      this.stack.pop();
      this.afterArithmetic(frame);
      if (this.peek(i + 1) === ')') return i + 2;
      // `$((a) b)` is a command substitution holding a subshell, not arithmetic.
      this.poison('a `$((` or `((` that is not closed by `))`', i);
      return i + 1;
    }
    if (c === ']' && frame.closer === ']') {
      if (frame.depth > 0) frame.depth -= 1;
      else {
        this.stack.pop();
        this.afterArithmetic(frame);
      }
      return i + 1;
    }
    if (c === '\\') return this.peek(i + 1) === TOKEN ? i + 1 : i + 2;
    if (c === '$') return this.dollar(i, true);
    if (c === '`') return this.backquote(i);
    if (c === '"' || c === "'") {
      this.stack.push({ kind: c === "'" ? 'squote' : 'dquote', start: i });
      return i + 1;
    }
    return i + 1;
  }

  private afterArithmetic(frame: ArithmeticFrame): void {
    const parent = this.top();
    // `(( ... ))` is a whole command; `name[...]` and `$((...))` are parts of a word.
    if (parent.kind === 'cmd' && frame.closer === '))' && this.text[frame.start] === '(') parent.wordStart = true;
  }

  /**
   * At a backquote: find its end the way bash does (a backslash quotes `$`, a backquote and a
   * backslash, and inside "..." also `"`), strip those backslashes, and lex the body as a command.
   */
  private backquote(i: number): number {
    const quotes = this.backquoteQuoteRule();
    let body = '';
    let escapedQuote = false;
    const map: number[] = [];
    let j = i + 1;
    while (j < this.text.length && this.text[j] !== '`') {
      const next = this.text[j + 1];
      if (this.text[j] === '\\' && next === '"') escapedQuote = true;
      const escapes = next === '$' || next === '`' || next === '\\' || (quotes === 'strip' && next === '"');
      if (this.text[j] === '\\' && escapes) j += 1;
      body += this.text[j];
      map.push(this.map[j] as number);
      j += 1;
    }
    if (j >= this.text.length) return this.fail('the command ends inside a backquoted command substitution', i);
    if (quotes === 'unsure' && escapedQuote) {
      const reason = 'a `\\"` in a backquoted command inside `${...}` or a heredoc, which bash and sh read differently';
      for (let k = i + 1; k < j; k += 1) {
        const token = this.starts.get(k);
        if (token) this.setPlacement(token, { kind: 'refuse', context: 'uncertain', reason });
      }
      return j + 1;
    }
    new Lexer(body, map, this.shared, 'cmd', this.enclosingRefusal(), this.depth + 1).run();
    return j + 1;
  }

  /**
   * Whether a backslash before `"` in a backquoted command is removed: yes directly inside "..."
   * and no in unquoted text, for bash and sh alike; inside a quoted `${...}` or a heredoc body
   * the two shells differ.
   */
  private backquoteQuoteRule(): 'strip' | 'keep' | 'unsure' {
    const top = this.top();
    const below = this.stack[this.stack.length - 2];
    if (top.kind === 'dquote') return below?.kind === 'param' && below.quoted ? 'unsure' : 'strip';
    if (top.kind === 'heredoc' || top.kind === 'locale' || (top.kind === 'param' && top.quoted)) return 'unsure';
    return 'keep';
  }

  // --- end of text ---------------------------------------------------------------------------

  private finish(): void {
    if (this.shared.problem) return;
    const root = this.stack[0] as Frame;
    if (root.kind === 'cmd') {
      this.endWord(root);
      if (root.condition) settleCondition(this.shared, root.condition);
    }
    if (this.stack.length > 1) {
      const open = this.stack[this.stack.length - 1] as Frame;
      const name = open.kind === 'cmd' && open.origin === 'substitution' ? '`$(...)`, `<(...)` or `>(...)`' : FRAME_NAMES[open.kind];
      this.fail(`the command ends inside an unterminated ${name}`, open.start);
    }
  }
}

function newCommandFrame(origin: CommandFrame['origin'], start: number): CommandFrame {
  return {
    kind: 'cmd',
    origin,
    start,
    wordStart: true,
    commandStart: true,
    word: null,
    wordAtCommandStart: false,
    functionName: false,
    words: [],
    wordEquals: false,
    redirectTarget: false,
    inputWord: null,
    patternStart: false,
    cases: [],
    pending: [],
    condition: null,
  };
}

/** Something other than a plain character joins the current word (a quote, an expansion, a token). */
function markWordPart(frame: CommandFrame): void {
  if (frame.wordStart) beginWord(frame);
  frame.word = null;
}

function beginWord(frame: CommandFrame): void {
  frame.wordStart = false;
  frame.wordAtCommandStart = frame.commandStart;
  frame.patternStart = false;
  frame.word = '';
  frame.wordEquals = false;
  // A new array, not a cleared one: a heredoc keeps the words of the command it feeds.
  if (frame.commandStart) frame.words = [];
}

function isStringFrame(frame: Frame): boolean {
  return frame.kind === 'squote' || frame.kind === 'dquote' || frame.kind === 'ansi' || frame.kind === 'locale';
}

/** True when the line [from, to) ends in an odd number of backslashes. */
function endsWithEscape(text: string, from: number, to: number): boolean {
  let count = 0;
  for (let k = to - 1; k >= from && text[k] === '\\'; k -= 1) count += 1;
  return count % 2 === 1;
}

function settleCondition(shared: Shared, condition: Condition): void {
  shared.conditions.delete(condition);
  let refusal: Placement | null = null;
  if (condition.arithmetic) refusal = { kind: 'refuse', context: 'conditional-arithmetic' };
  else if (condition.variableName) {
    refusal = { kind: 'refuse', context: 'variable-name', reason: '`[[ -v ]]` takes a variable name' };
  }
  if (!refusal) return;
  for (const token of condition.tokens) {
    const placement = shared.placements.get(token);
    if (placement && placement.kind === 'expand') shared.placements.set(token, refusal);
  }
}
