/*
 * The one shell reader. It reads a command the way bash will read the script execgate runs, once,
 * and returns one analysis: every simple command with its static words (quotes removed, so `"sh"`,
 * `\sh` and `s""h` read as `sh`), the context of every reference token, the places where bash
 * evaluates a value as code, and what it could not read with confidence.
 *
 * Tokens are atomic word parts (they become `"${NAME}"`-style expansions); every other character
 * is shell text. The reader is a loop over an explicit stack of frames (quotes, `$(...)`,
 * `${...}`, arithmetic, heredoc bodies), so its cost is linear in the text and deep nesting ends
 * in EXECGATE_ERR_COMMAND_TOO_COMPLEX instead of a stack overflow. Backquote bodies, heredoc
 * bodies and static code (the script of `sh -c`, `eval`'s words, a `trap` action, a prompt
 * string) are read by a nested reader over their text; nested code is bounded in depth and in
 * total size. Where bash's reading is not certain, the reader says so and callers fail closed.
 *
 * A command that reads code from its standard input (a shell without a script, `source
 * /dev/stdin`, `python3` without a program, `xargs sh`: commands.ts) is code fed at run time
 * when that input is a pipe, a process substitution's, a coprocess's, a descriptor an `exec`
 * opened, or text with expansions: every process of a run holds the resolved values in its
 * environment and can write them there, so such a reader is a sink and a token anywhere in the
 * text is refused. Its input counts as a pipe when the command is in a later stage of a pipeline
 * at any level around it (a compound command, a subshell, `$(...)`, a script run by `sh -c`), or
 * in a function body (which a pipe may call). A heredoc or here-string of static text, or a file
 * named in a redirection, is not: a token inside such text is refused on its own, and a file's
 * contents are not followed (the same as a script file the command runs).
 *
 * One file over the usual size on purpose: the reader is one state machine over one stack of
 * frames, and splitting it would spread that state across modules that must agree on it.
 */
import { ExecgateError } from '../errors';
// The reader knows a reference token only as a span (shell/types.ts); refs/ sits above shell/.
import type { TokenSpan as RefToken } from './types';
import { ARITHMETIC_VARIABLES, CODE_VARIABLES, readCommand, type CommandReport, type CommandWord, type Evaluation } from './commands';
import { isStdinPath } from './input-programs';
import { isEnvironPath } from './option-hazards';
import type { Finding, Placement, RefusedContext, ShellAnalysis, SimpleCommand, VariableSet, Word } from './types';

/** Frames open at once (quotes, substitutions, arithmetic, `${...}`) before the text is refused. */
export const MAX_FRAMES = 256;
/** Nested readers (backquotes in backquotes, `sh -c` in `eval`, heredocs in `$(...)`). */
export const MAX_NESTING = 32;
/** Variables listed in one analysis; past this the list ends in "any variable". */
const MAX_VARIABLES = 256;

/** Read `command`; `tokens` are the reference tokens that will be substituted (non-overlapping). */
export function readShell(command: string, tokens: readonly RefToken[] = []): ShellAnalysis {
  const shared = new Shared(command, tokens);
  const identity = new Int32Array(command.length);
  for (let index = 0; index < identity.length; index += 1) identity[index] = index;
  new Lexer(toSource(command, identity, shared, true), 0, command.length, shared, 'cmd', null, 0, [], undefined, []).run();
  for (const condition of shared.conditions) shared.settleCondition(condition);
  shared.settleAssignments();
  shared.settleEvaluatedVariables();
  shared.settleReaders();

  const uncertain = [shared.problem, shared.poison, ...shared.uncertain].filter((each): each is Finding => each !== null);
  const unplaced: Placement = { kind: 'refuse', context: 'uncertain', reason: shared.problem?.reason ?? 'the reference sits where execgate could not follow the shell syntax' };
  // A sink counts when it may evaluate a value that came from a reference: any value, or a
  // variable the text sets from something known only at run time (or execgate's own variables).
  const references = [...shared.attributes.values()].some((set) => set.has('reference'));
  const reaches = (name: string): boolean => references || shared.tainted.has(name) || SET_BY_SHELL.test(name);
  const sinks = shared.sinks.filter((each) => each.names === null || [...each.names].some(reaches)).map(({ reason, offset }) => ({ reason, offset }));
  const sink = sinks[0];
  const readings = tokens.map((token) => {
    let placement = shared.problem ? unplaced : (shared.placements.get(token) ?? unplaced);
    if (sink && placement.kind === 'expand') placement = { kind: 'refuse', context: 'value-evaluated', reason: `${sink.reason}, at offset ${sink.offset}` };
    return Object.freeze({ token, placement });
  });
  // Code evaluated at run time (`eval "$x"`, arithmetic on a variable holding `PATH=0`) can set
  // any variable.
  if (sink) shared.setsVariable(null, sink.offset, 'evaluated');
  return Object.freeze({
    command,
    commands: Object.freeze(shared.commands),
    tokens: Object.freeze(readings),
    uncertain: Object.freeze(uncertain),
    sinks: Object.freeze(sinks),
    variables: Object.freeze(shared.variables),
  });
}

/** An open `[[ ... ]]`: whether it compares arithmetically or names a variable, and the tokens inside. */
type Condition = { arithmetic: boolean; variableName: boolean; readonly tokens: RefToken[] };

/** What the readers of one command share: its tokens, what they found, and what settles at the end. */
class Shared {
  readonly byStart: ReadonlyMap<number, RefToken>;
  /** 1 at the offset of each token's start: a cheap test before the map lookup. */
  readonly isStart: Uint8Array;
  readonly placements = new Map<RefToken, Placement>();
  poison: Finding | null = null;
  problem: Finding | null = null;
  readonly conditions = new Set<Condition>();
  readonly commands: SimpleCommand[] = [];
  readonly uncertain: Finding[] = [];
  readonly sinks: Array<Finding & { readonly names: ReadonlySet<string> | null }> = [];
  /** Variables that may hold a value known only at run time (a reference's value among them). */
  readonly tainted = new Set<string>();
  readonly attributes = new Map<string, Set<'integer' | 'array' | 'reference'>>();
  /** Variables the text sets, exports or unsets (names only), each place once; bounded like the findings. */
  readonly variables: VariableSet[] = [];
  readonly #variableKeys = new Set<string>();
  readonly assignments: Array<{ name: string; declaration: boolean; tokens: RefToken[] }> = [];
  /** Commands that read code from their input; those whose input is the shell's own; a `coproc`; an `exec` that gives the shell an input a process writes. */
  readers: Finding[] = [];
  inheritedReaders = 0;
  coproc = false;
  execInput: Finding | null = null;
  codeBudget: number;
  /** The simple command the table is reading, and what it reported (one report for every reader). */
  settling: Settling | null = null;
  readonly report: CommandReport = {
    command: (words, via = this.settling!.via) => {
      const listed = words.map((word): Word => ({ text: word.text ?? word.raw, dynamic: word.text === null, start: word.start, end: word.end }));
      this.commands.push(via === undefined ? { words: listed } : { words: listed, via });
    },
    refuse: (from, to, evaluation) => this.settling!.refusals.push({ from, to, evaluation }),
    code: (...args) => this.settling!.codes.push(args),
    sink: (reason, at) => this.sinks.length < 64 && this.sinks.push({ reason, offset: at.start, names: null }),
    uncertain: (reason, at) => this.unsure(reason, at.start),
    input: (evaluation, piped = true) => {
      const cmd = this.settling!.cmd;
      cmd.input ??= evaluation;
      if (piped) cmd.reads ??= evaluation;
    },
    assigned: (name, word, declaration) => {
      const settling = this.settling!;
      if (settling.byWord === null) {
        const byWord = new Map<Outer['word'], RefToken[]>();
        settling.byWord = byWord;
        for (const entry of settling.cmd.tokens) (byWord.get(entry.word) ?? byWord.set(entry.word, []).get(entry.word))!.push(entry.token);
      }
      if (settling.byWord.has(word)) this.assignments.push({ name, declaration, tokens: settling.byWord.get(word)! });
    },
    taint: (name) => this.tainted.add(name),
    variable: (name, at, how) => this.setsVariable(name, at.start, how),
    attribute: (name, kind) => this.attributes.set(name, (this.attributes.get(name) ?? new Set()).add(kind)),
  };

  constructor(command: string, tokens: readonly RefToken[]) {
    this.byStart = new Map(tokens.map((token) => [token.start, token]));
    this.isStart = new Uint8Array(command.length + 1);
    for (const token of tokens) if (token.start >= 0 && token.start < command.length) this.isStart[token.start] = 1;
    this.codeBudget = 4 * command.length + 65536;
  }

  setsVariable(name: string | null, offset: number, how: string): void {
    const key = `${name ?? ''}\0${offset}\0${how}`;
    if (this.#variableKeys.has(key)) return;
    this.#variableKeys.add(key);
    if (this.variables.length < MAX_VARIABLES) this.variables.push(Object.freeze({ name, offset, how }));
    // Past the bound the list says "any variable": a policy reading it fails closed.
    else if (this.variables[this.variables.length - 1].name !== null) this.variables.push(Object.freeze({ name: null, offset, how: 'more than the reader lists' }));
  }

  /** A reader of code whose input a process of the run writes: a sink for any value. */
  feed(reason: string, offset: number): void {
    if (this.sinks.length < 64) this.sinks.push({ reason, offset, names: null });
  }

  /** What only the whole text tells: a coprocess, or an `exec` redirection, feeding a reader anywhere. */
  settleReaders(): void {
    const [reader] = this.readers;
    if (reader === undefined) return;
    if (this.coproc) this.feed(`${reader.reason}, in a text that starts a coprocess, whose input the text can write anything into`, reader.offset);
    if (this.execInput && this.inheritedReaders > 0) this.feed(`${reader.reason}, after \`exec\` gave the shell an input that a process writes`, this.execInput.offset);
  }

  unsure(reason: string, offset: number): void {
    if (this.uncertain.length < 64) this.uncertain.push({ reason, offset });
  }

  /** A refusal found later (when a command or a test ends) replaces an expansion decided earlier. */
  refine(tokens: readonly RefToken[], placement: Placement): void {
    for (const token of tokens) {
      const current = this.placements.get(token);
      if (current === undefined || current.kind === 'expand') this.placements.set(token, placement);
    }
  }

  settleCondition(condition: Condition): void {
    this.conditions.delete(condition);
    if (condition.arithmetic) this.refine(condition.tokens, { kind: 'refuse', context: 'conditional-arithmetic' });
    else if (condition.variableName) this.refine(condition.tokens, { kind: 'refuse', context: 'variable-name', reason: '`[[ -v ]]` takes a variable name' });
  }

  /** Assignments of tokens to names that this text gives the integer or array attribute. */
  /*
   * Variables whose value bash evaluates however they are set: one with the integer attribute
   * (arithmetic), and the shell's own code and arithmetic variables (PS4, PROMPT_COMMAND, BASH_ENV,
   * OPTIND, RANDOM, ...). A plain assignment to a special variable, and a declaration's own
   * value, are read where they are written (commands.ts); any other way of setting one (`read`,
   * `printf -v`, `mapfile`, `for`, `${NAME:=...}`, a plain assignment to an integer) may hand it a
   * value that came from a reference: a sink for any value. So is a `{NAME}` redirection on a
   * variable the text sets from a run-time value (bash takes its value as a descriptor number).
   */
  settleEvaluatedVariables(): void {
    // A name reference sends whatever is assigned to it (by any form) to the variable it names,
    // which a later assignment may make PS4 or an integer.
    for (const [name, kinds] of this.attributes) {
      if (kinds.has('reference')) {
        this.feed(`\`${name}\` is a name reference: what is assigned to it goes to the variable it names, which may be one bash evaluates`, 0);
        break;
      }
    }
    for (const { name, offset, how } of this.variables) {
      if (name === null || how === 'unset' || how === 'env -u') continue;
      const base = name.replace(/\[[\s\S]*$/, '');
      const declared = DECLARATIONS.has(how);
      if (OPTION_VARIABLES.has(base)) {
        this.feed(`\`${base}\` sets the options of a shell the text starts (\`extglob\`, \`keyword\`, \`xtrace\`), which change how it reads its script`, offset);
      } else if (COMMAND_TABLES.has(base)) {
        this.feed(`\`${base}\` maps a command name to ${base === 'BASH_ALIASES' ? 'code (an alias)' : 'another program'}, which a later word then runs unseen`, offset);
      } else if (this.attributes.get(base)?.has('integer') && !declared) {
        this.feed(`\`${base}\` has the integer attribute: bash evaluates as arithmetic what is assigned to it (here by ${how}), a value's variables included`, offset);
      } else if ((CODE_VARIABLES.test(base) || ARITHMETIC_VARIABLES.has(base)) && how !== 'assignment' && how !== 'env' && !declared) {
        this.feed(`bash evaluates the value of \`${base}\`, which ${how} sets here`, offset);
      } else if (how === 'redirection' && this.tainted.has(base)) {
        this.feed(`the redirection \`{${base}}\` takes a value known only at run time as a descriptor, which bash evaluates`, offset);
      }
    }
  }

  settleAssignments(): void {
    const references = [...this.attributes.values()].some((set) => set.has('reference'));
    const integers = references && [...this.attributes.values()].some((set) => set.has('integer'));
    // Arrays made without `declare -a` or `=(...)`: `y[0]=1`, `read -a y`, `mapfile y`, `printf -v 'y[0]'`.
    const arrays = new Set<string>();
    for (const { name, how } of this.variables) {
      if (name === null) continue;
      const bracket = name.indexOf('[');
      if (bracket > 0) arrays.add(name.slice(0, bracket));
      else if (ARRAY_SETTERS.has(how)) arrays.add(name);
    }
    for (const { name, declaration, tokens } of this.assignments) {
      const attributes = this.attributes.get(name);
      const integer = attributes?.has('integer') || integers;
      if (integer) this.refine(tokens, { kind: 'refuse', context: 'arithmetic', reason: `\`${name}\` has the integer attribute, so bash evaluates a value assigned to it as arithmetic` });
      else if (declaration && (attributes?.has('array') || references || arrays.has(name) || SHELL_ARRAYS.has(name))) {
        this.refine(tokens, { kind: 'refuse', context: 'evaluated', reason: `\`${name}\` is an array, so a declaration parses the value as a compound assignment` });
      }
    }
  }
}

/** A simple command the table reads, and what it reported: refusals of words, code to read, tokens by word. */
type Settling = { cmd: Cmd; via: string | undefined; refusals: Array<{ from: number; to: number; evaluation: Evaluation }>; codes: Array<Parameters<CommandReport['code']>>; byWord: Map<Outer['word'], RefToken[]> | null };

/** One simple command being read: its words, and the tokens inside each (for refusals at its end). */
interface Cmd {
  readonly words: CommandWord[];
  readonly tokens: Array<{ token: RefToken; word: Outer['word'] }>;
  /** Its heredoc or here-string is parsed as code. */
  input: Evaluation | null;
  /** It reads code from whatever its standard input is (a pipe too). */
  reads: Evaluation | null;
  /** Standard input is text written here (a heredoc, a here-string) or a file named in a redirection. */
  stdinReplaced: boolean;
  /** An input a process writes at run time (`< <(...)`, `<&N`), or a here-string with expansions. */
  runtimeInput: boolean;
  /** It has an input redirection on any descriptor (`<`, a heredoc, a here-string, `3<<<`). */
  opensInput?: boolean;
}

/**
 * A list of commands where pipelines run: a frame's text, or the body of a compound command in
 * it. `stage`: the current command's place in its pipeline (0: first); `fn`: a function body;
 * `fed`: the text of a `>(...)`, whose input another command writes; `reads`: a command in it
 * reads code from its input (the redirections of the compound command then feed it).
 */
interface Level {
  stage: number;
  pipeOpen: boolean;
  readonly fn: boolean;
  readonly fed: boolean;
  reads: Evaluation | null;
}

/** A level as a spot of text saw it: its stage then. */
type Place = { readonly level: Level; readonly stage: number };

type CaseState = 'subject' | 'in' | 'pattern' | 'body';

interface CommandFrame {
  readonly kind: 'cmd';
  readonly origin: 'root' | 'subshell' | 'substitution' | 'array';
  readonly start: number;
  /** Between words; before a command's first word; whether the current word began at a command's start. */
  wordStart: boolean;
  commandStart: boolean;
  wordAtCommandStart: boolean;
  /** The current word while it is plain unquoted text (for reserved words), else null. */
  word: string | null;
  /** The current word's static value (quotes removed), null once part of it is dynamic. */
  value: string | null;
  /** Unquoted characters of the current word (for globs, braces and tilde). */
  unquoted: string;
  wordBegin: number;
  /** `NAME=` / `NAME[...]=` starting the word; the subscript's name and where it closed; whether a `=` was seen. */
  assignment: string | null;
  subscriptName: string | null;
  arithEnd: number;
  wordEquals: boolean;
  /**
   * Reserved-word states: after `function` (the name comes), in a `for`/`select` header (its
   * next word names the loop variable), after `time`, after `coproc`; the word is a redirection's
   * target or a here-string; a `case` pattern may start with `(`.
   */
  functionName: boolean;
  header: boolean;
  loopVar: boolean;
  afterTime: boolean;
  coproc: boolean;
  redirectTarget: boolean;
  hereString: boolean;
  patternStart: boolean;
  cmd: Cmd;
  readonly cases: CaseState[];
  readonly pending: Heredoc[];
  condition: Condition | null;
  /** The levels open in this frame, outermost first (see Level); a function body comes next. */
  readonly levels: Level[];
  fnPending: boolean;
  /** The current word is the target of an input redirection of this descriptor (-1: named by a variable). */
  inputFd: number | null;
}

interface StringFrame {
  readonly kind: 'squote' | 'dquote' | 'ansi' | 'locale' | 'heredoc';
  readonly start: number;
  /** The command frame whose word this string is directly part of (quote removal goes there). */
  readonly owner: CommandFrame | null;
}

interface ParameterFrame {
  readonly kind: 'param';
  readonly start: number;
  readonly quoted: boolean;
  /** The parameter's name once read (`${NAME...}`). */
  name?: string;
  part: 'afterName' | 'word' | 'arith' | 'uncertain';
  names?: Set<string> | null;
}

interface ArithmeticFrame {
  readonly kind: 'arith';
  readonly start: number;
  readonly closer: '))' | ']';
  depth: number;
  /** Variables the expression reads; null once it reads something else (`$(...)`, `$1`). */
  names: Set<string> | null;
}

type Frame = CommandFrame | StringFrame | ParameterFrame | ArithmeticFrame;

type Heredoc = { readonly delimiter: string; readonly quoted: boolean; readonly stripTabs: boolean; readonly cmd: Cmd; readonly places: readonly Place[] };
/** A command (of this reader or an enclosing one) and the word, its input or a redirection's target that holds a spot of text. */
type Outer = { readonly cmd: Cmd; readonly word: number | 'input' | 'redirect' };

const TOKEN = 'TOKEN';
/** Variables that may hold a reference's value without an assignment in the text. */
const DECLARATIONS = new Set(['declare', 'typeset', 'local', 'export', 'readonly']);
/** bash's tables of aliases and of command paths: an entry makes a command name run something else. */
const COMMAND_TABLES = new Set(['BASH_ALIASES', 'BASH_CMDS']);
/** Options a shell takes from its environment at start. */
const OPTION_VARIABLES = new Set(['BASHOPTS', 'SHELLOPTS']);
/** Arrays bash itself keeps: a declaration of one parses its value as a compound assignment. */
const SHELL_ARRAYS = new Set(['DIRSTACK', 'PIPESTATUS', 'BASH_REMATCH', 'BASH_ARGV', 'BASH_ARGC', 'BASH_LINENO', 'BASH_SOURCE', 'FUNCNAME', 'GROUPS', 'MAPFILE', 'COPROC', 'COMP_WORDS', 'BASH_VERSINFO']);
/** Ways of setting a variable that can make it an array. */
const ARRAY_SETTERS = new Set(['read', 'mapfile', 'readarray', 'printf']);
const SET_BY_SHELL = /^(?:EXECGATE_REF_.*|[0-9@*]|REPLY|MAPFILE|DIRSTACK|BASH_REMATCH|OPTARG|COPROC|BASH_ARGV|BASH_ARGC|FUNCNAME|BASH_COMMAND|_)$/;
const BLANK = new Set([' ', '\t']);
const METACHAR = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
const ARITHMETIC_TEST_OPERATORS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
/** An assignment operator in arithmetic (`=`, `+=`, `<<=`, ..., `++`, `--`), not a comparison. */
const ARITHMETIC_ASSIGNMENT = /(?:^|[^=!<>]|<<|>>)=(?!=)|\+\+|--/;
// Reserved words after which a new command starts.
const COMMAND_PREFIX_WORDS = new Set(['!', '{', '}', 'then', 'do', 'else', 'elif', 'if', 'while', 'until', 'fi', 'done', 'time', 'coproc']);
/** Reserved words that open and close a compound command's body (`for`, `select` and `case` open theirs too). */
const GROUP_OPENERS = new Set(['{', 'if', 'while', 'until']);
const GROUP_CLOSERS = new Set(['}', 'fi', 'done']);
const PATTERN_CHARACTER = /[*?[{]|^~|[@+!]\(/;
const BODY_NEXT = /[ \t]*[{(]/y;
const EMPTY_PARENS = /[ \t]*\)/y;
const SUBSCRIPT = /(?:[A-Za-z_][A-Za-z0-9_]*)?\[/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const PARAMETER_NAME = /(?:[!#](?=[A-Za-z0-9_@*#?$!-]))?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/y;
const READ_NAME = /\$(?:\{#?[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_])/y;
const stops = (chars: string): Uint8Array => Uint8Array.from({ length: 128 }, (_, code) => (chars.includes(String.fromCharCode(code)) ? 1 : 0));
/** Characters that end a run of plain text in an unquoted word, in `'...'`, `"..."` and a heredoc body. */
const WORD_STOPS = stops(' \t\n;&|()<>\'"`$\\=');
const SQUOTE_STOPS = stops("'");
const DQUOTE_STOPS = stops('"`$\\');
const HEREDOC_STOPS = stops('`$\\');

const PLACEMENTS: Record<Exclude<Frame['kind'], 'param'>, Placement> = {
  cmd: { kind: 'expand', context: 'unquoted' }, squote: { kind: 'expand', context: 'single-quoted' }, dquote: { kind: 'expand', context: 'double-quoted' },
  heredoc: { kind: 'expand', context: 'heredoc' }, ansi: { kind: 'refuse', context: 'ansi-c-string' }, locale: { kind: 'refuse', context: 'locale-string' },
  arith: { kind: 'refuse', context: 'arithmetic' },
};
const FRAME_NAMES: Record<Frame['kind'], string> = {
  cmd: '`$(...)` or `(...)`', squote: "single-quoted string '...'", dquote: 'double-quoted string "..."', ansi: "`$'...'` string", locale: '`$"..."` string',
  heredoc: 'heredoc body', param: '`${...}` expansion', arith: 'arithmetic expression',
};

/** A text readers read: the command itself, or code built from it (a backquote body, a static script). */
interface Source {
  readonly text: string;
  /** Offset in the original command of each character of `text`. */
  readonly map: Int32Array;
  readonly starts: ReadonlyMap<number, RefToken>;
  /** 1 where a token starts in `text`: the per-character test, cheaper than the map. */
  readonly marks: Uint8Array;
}

function toSource(text: string, map: Int32Array, shared: Shared, root = false): Source {
  const starts = new Map<number, RefToken>();
  const marks = new Uint8Array(text.length);
  const add = (index: number, token: RefToken | undefined): void => {
    if (token === undefined || map[index + token.raw.length - 1] !== token.end - 1) return;
    starts.set(index, token);
    marks[index] = 1;
  };
  // The command's tokens sit at their own offsets. Static code read again maps every character
  // to one offset, so no token registers there.
  if (root) for (const [start, token] of shared.byStart) add(start, token);
  else if (shared.byStart.size > 0) for (let index = 0; index < text.length; index += 1) if (shared.isStart[map[index]] === 1) add(index, shared.byStart.get(map[index]));
  return { text, map, starts, marks };
}

class Lexer {
  private readonly stack: Frame[];
  private readonly source: Source;
  private readonly text: string;
  private readonly map: Int32Array;
  private readonly starts: ReadonlyMap<number, RefToken>;
  private readonly marks: Uint8Array;
  private cursor = 0;
  constructor(
    source: Source,
    /** The part of the source this reader reads (a heredoc body is a part of its command's text). */
    private readonly begin: number,
    private readonly end: number,
    private readonly shared: Shared,
    root: 'cmd' | 'heredoc',
    /** Set when this reader reads text where every token is refused (inside arithmetic, say). */
    private readonly inherited: Placement | null,
    private readonly depth: number,
    /** Commands of enclosing readers whose words hold this text. */
    private readonly outer: readonly Outer[],
    /** For static code read again: what ran it (`sh -c`, `eval`). */
    private readonly via: string | undefined,
    /** The levels of enclosing readers around this text (see Level). */
    private readonly outerPlaces: readonly Place[],
  ) {
    if (depth > MAX_NESTING) throw tooComplex(`nests backquotes, heredocs or code run by \`eval\`/\`sh -c\` more than ${MAX_NESTING} levels deep`);
    this.source = source;
    ({ text: this.text, map: this.map, starts: this.starts, marks: this.marks } = source);
    this.stack = [root === 'cmd' ? newCommandFrame('root', begin) : { kind: 'heredoc', start: begin, owner: null }];
  }

  run(): void {
    let i = this.begin;
    while (i < this.end) {
      if (this.shared.problem) return;
      this.cursor = i;
      i = this.marks[i] === 1 ? this.placeToken(this.starts.get(i) as RefToken, i) : this.step(i);
    }
    this.cursor = this.end;
    this.finish();
  }

  // --- helpers -------------------------------------------------------------------------------

  private peek(index: number): string {
    if (index >= this.end) return '';
    return this.marks[index] === 1 ? TOKEN : (this.text[index]);
  }

  private top(): Frame {
    return this.stack[this.stack.length - 1];
  }

  /** Open `frame`; reading goes on at `next`. */
  private push(frame: Frame, next: number): number {
    if (this.stack.length >= MAX_FRAMES) throw tooComplex(`opens more than ${MAX_FRAMES} quotes, substitutions or expansions inside each other`);
    this.stack.push(frame);
    return next;
  }

  /** The end of the run of plain characters from `i`: none in `stops`, no token start. */
  private span(i: number, stops: Uint8Array): number {
    let j = i;
    for (let code = this.text.charCodeAt(j); j < this.end && this.marks[j] === 0 && !(code < 128 && stops[code] === 1); code = this.text.charCodeAt(j)) j += 1;
    return j;
  }

  /** The text `pattern` (sticky) matches at `i`, or null. */
  private matchAt(pattern: RegExp, i: number): string | null {
    pattern.lastIndex = i;
    return pattern.exec(this.text)?.[0] ?? null;
  }

  private origin(index: number): number {
    return index < this.end ? (this.map[index]) : (this.map[this.end - 1] ?? -1) + 1;
  }

  private inArithmetic(): Placement | null {
    if (this.inherited) return this.inherited;
    for (let k = this.stack.length - 1; k >= 0; k -= 1) if ((this.stack[k]).kind === 'arith') return { kind: 'refuse', context: 'arithmetic' };
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
    return this.end;
  }

  /** `names`: the variables whose values the sink evaluates (null: any value at all). */
  private sink(reason: string, index: number, names: ReadonlySet<string> | null = null): void {
    if (this.shared.sinks.length < 256) this.shared.sinks.push({ reason, offset: this.origin(index), names });
  }

  private refuseAt(index: number, context: RefusedContext): number {
    const token = this.starts.get(index) as RefToken;
    this.registerToken(token);
    this.setPlacement(token, { kind: 'refuse', context });
    return index + token.raw.length;
  }

  /** Every command whose word holds the token hears of it, to refuse it if the command parses that word. */
  private registerToken(token: RefToken): void {
    for (const { cmd, word } of this.outer) cmd.tokens.push({ token, word });
    for (const frame of this.stack) if (frame.kind === 'cmd' && !frame.wordStart) frame.cmd.tokens.push({ token, word: slot(frame) });
    for (const condition of this.shared.conditions) condition.tokens.push(token);
  }

  /** The levels around this spot, outermost first, with their stages now. */
  private places(): Place[] {
    const places = [...this.outerPlaces];
    for (const frame of this.stack) if (frame.kind === 'cmd') for (const level of frame.levels) places.push({ level, stage: level.stage });
    return places;
  }

  /** The innermost level: where the current command is. */
  private level(frame: CommandFrame): Level {
    return frame.levels[frame.levels.length - 1];
  }

  /** A compound command opens (`{`, `if`, `while`, `for`, `case`): its body is a level of its own. */
  private pushLevel(frame: CommandFrame): void {
    this.level(frame).pipeOpen = false;
    frame.levels.push({ stage: 0, pipeOpen: false, fn: frame.fnPending, fed: false, reads: null });
    frame.fnPending = false;
  }

  /** It closes: a command in it that reads code from its input reads what its redirections give. */
  private popLevel(frame: CommandFrame): void {
    if (frame.levels.length <= 1) return;
    const level = frame.levels.pop() as Level;
    if (level.reads) readsFromGroup(frame.cmd, level.reads);
  }

  /** `cmd` reads code from its input: a sink when a process of the run may write that input. */
  private reader(cmd: Cmd, reads: Evaluation, places: readonly Place[]): void {
    const offset = cmd.words[0]?.start ?? this.origin(this.cursor);
    this.shared.readers.push({ reason: reads.reason, offset });
    if (!cmd.stdinReplaced) {
      this.shared.inheritedReaders += 1;
      for (const { level } of places) level.reads ??= reads;
    }
    let from: string | null = null;
    if (cmd.runtimeInput) from = 'an input that a process of the run writes (`< <(...)`, `<&N`, a here-string with expansions)';
    else if (!cmd.stdinReplaced) {
      if (places.some((place) => place.stage > 0)) from = 'a pipe';
      else if (places.some((place) => place.level.fed)) from = 'the process substitution `>(...)` it runs in';
      else if (places.some((place) => place.level.fn)) from = 'the input its function is called with';
    }
    if (from !== null) this.shared.feed(`${reads.reason}, which is ${from}: any command of the run can write a reference's value into it`, offset);
  }

  /** The commands whose current word holds this spot: enclosing readers' and this one's. */
  private outers(): Outer[] {
    const open = this.stack.filter((frame): frame is CommandFrame => frame.kind === 'cmd' && !frame.wordStart);
    return [...this.outer, ...open.map((frame) => ({ cmd: frame.cmd, word: slot(frame) }))];
  }

  // --- tokens --------------------------------------------------------------------------------

  private placeToken(token: RefToken, index: number): number {
    const frame = this.top();
    if (frame.kind === 'cmd') markWordPart(frame, index);
    this.dynamicWord();
    this.registerToken(token);
    this.setPlacement(token, this.placementFor(frame));
    return index + token.raw.length;
  }

  /** The innermost word being built becomes dynamic (an expansion or a token joins it). */
  private dynamicWord(): void {
    const frame = this.top();
    if (frame.kind === 'cmd') frame.value = null;
    else if ((frame.kind === 'dquote' || frame.kind === 'squote' || frame.kind === 'ansi' || frame.kind === 'locale') && frame.owner) frame.owner.value = null;
  }

  private placementFor(frame: Frame): Placement {
    const poison = this.shared.poison;
    if (poison) return { kind: 'refuse', context: 'uncertain', reason: poison.reason };
    const enclosing = this.inArithmetic();
    if (enclosing) return enclosing;
    if (frame.kind !== 'param') return PLACEMENTS[frame.kind];
    if (frame.part === 'word') return { kind: 'expand', context: 'parameter-word' };
    if (frame.part === 'arith') return { kind: 'refuse', context: 'arithmetic' };
    if (frame.part === 'afterName') return { kind: 'refuse', context: 'parameter-name' };
    return { kind: 'refuse', context: 'uncertain', reason: 'the `${...}` expansion around the reference has a form execgate does not read' };
  }

  // --- dispatch ------------------------------------------------------------------------------

  private step(i: number): number {
    const frame = this.top();
    const c = this.text[i];
    if (c === '\n' && (frame.kind === 'param' || frame.kind === 'arith') && this.stack.some((each) => each.kind === 'cmd' && each.pending.length > 0)) {
      this.poison('a line break inside an expansion before a heredoc body', i);
    }
    switch (frame.kind) {
      case 'cmd':
        return this.stepCommand(frame, i, c);
      case 'squote': {
        if (c === "'") {
          this.stack.pop();
          return i + 1;
        }
        const end = this.span(i + 1, SQUOTE_STOPS);
        if (frame.owner && frame.owner.value !== null) frame.owner.value += this.text.slice(i, end);
        return end;
      }
      case 'ansi': {
        if (c === '\\') return this.peek(i + 1) === TOKEN ? i + 1 : i + 2;
        if (c === "'") {
          this.stack.pop();
          if (frame.owner && frame.owner.value !== null) frame.owner.value += decodeAnsiC(this.text.slice(frame.start + 2, i));
        }
        return i + 1;
      }
      case 'dquote':
      case 'locale':
      case 'heredoc':
        return this.stepDoubleQuoted(frame, i, c);
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
        markWordPart(frame, i);
        frame.value = null;
        return this.refuseAt(i + 1, 'escaped');
      }
      if (next === '\n') return i + 2;
      markWordPart(frame, i);
      if (frame.value !== null) frame.value += next;
      return Math.min(i + 2, this.end);
    }
    if (c === "'" || c === '"') {
      markWordPart(frame, i);
      return this.push({ kind: c === "'" ? 'squote' : 'dquote', start: i, owner: frame }, i + 1);
    }
    if (c === '`') {
      markWordPart(frame, i);
      frame.value = null;
      return this.backquote(i);
    }
    if (c === '$') {
      markWordPart(frame, i);
      return this.dollar(i, true, frame);
    }
    if (c === '(') return this.openParen(frame, i);
    if (c === ')') return this.closeParen(frame, i);
    if (c === '<' || c === '>') return this.redirection(frame, i, c);
    if (c === ';' || c === '&' || c === '|') return this.controlOperator(frame, i, c);
    return this.wordCharacter(frame, i, c);
  }

  private wordCharacter(frame: CommandFrame, i: number, c: string): number {
    if (frame.wordStart) {
      beginWord(frame, i);
      // `name[` starts an array subscript (`a[i]=v`), and a `[` opening a word may be one in
      // `arr=([i]=v)`: bash may evaluate it as arithmetic.
      const subscript = this.matchAt(SUBSCRIPT, i);
      const after = subscript ? this.peek(i + subscript.length) : '';
      if (subscript && after !== '' && after !== '[' && after !== ']' && !BLANK.has(after) && after !== '\n') {
        frame.word = null;
        frame.value = null;
        frame.subscriptName = subscript.slice(0, -1) || null;
        return this.push(arith(i, ']'), i + subscript.length);
      }
    }
    if (c === '=' && !frame.wordEquals) {
      if (frame.word !== null && /^[A-Za-z_][A-Za-z0-9_]*\+?$/.test(frame.word)) frame.assignment = frame.word.replace(/\+$/, '');
      else if (frame.subscriptName && (frame.arithEnd === i || (frame.arithEnd === i - 1 && this.text[i - 1] === '+'))) frame.assignment = frame.subscriptName;
      frame.wordEquals = true;
    }
    const end = this.span(i + 1, WORD_STOPS);
    const part = this.text.slice(i, end);
    if (frame.word !== null) frame.word += part;
    if (frame.value !== null) frame.value += part;
    frame.unquoted += part;
    return end;
  }

  /** The current word ends: it steps the reserved-word states (case, function, for, [[, time, coproc) or joins the command. */
  private endWord(frame: CommandFrame): void {
    if (frame.wordStart) return;
    const { word, cases, condition } = frame;
    const state = cases[cases.length - 1];
    const redirect = frame.redirectTarget;
    const reserved = frame.wordAtCommandStart && word !== null && frame.cmd.words.length === 0 && !redirect;
    let value = frame.value;
    if (value !== null && (isPattern(frame.unquoted) || (frame.assignment !== null && /[=:]~/.test(frame.unquoted)))) value = null;
    const built: CommandWord = { text: value, start: this.origin(frame.wordBegin), end: this.origin(this.cursor), assignment: frame.assignment, raw: this.text.slice(frame.wordBegin, this.cursor) };
    if (frame.hereString && value === null) frame.cmd.runtimeInput = true;
    if (redirect && frame.inputFd !== null) {
      // `< /dev/stdin`, `< /dev/fd/3`, `< /proc/self/fd/3`, `< /dev/std?n`, `< "$f"`: a path that
      // is (or may be) a descriptor the command already has, so its input is still what feeds
      // that descriptor (a pipe, a here-string): read like `<&N`, not like a file.
      if (value === null || isStdinPath(value) || isEnvironPath(value)) frame.cmd.runtimeInput = true;
      else if (frame.inputFd === 0) frame.cmd.stdinReplaced = true;
    }
    frame.inputFd = null;
    frame.wordStart = true;
    frame.redirectTarget = frame.hereString = frame.commandStart = false;
    frame.word = null;

    if (state === 'subject' || state === 'in') {
      cases[cases.length - 1] = state === 'subject' ? 'in' : 'pattern';
      frame.patternStart = state === 'in';
    } else if (state === 'pattern') {
      if (word === 'esac') {
        cases.pop();
        this.popLevel(frame);
      }
    } else if (frame.functionName) {
      frame.functionName = false;
      frame.commandStart = true;
      frame.fnPending = true;
    } else if (condition !== null) {
      if (word === ']]') {
        this.shared.settleCondition(condition);
        frame.condition = null;
      } else if (word !== null && ARITHMETIC_TEST_OPERATORS.has(word)) {
        condition.arithmetic = true;
        this.sink('a `[[ ... ]]` test with an arithmetic operator, which evaluates its operands (variables included) as expressions', frame.wordBegin);
      } else if (word === '-v' || word === '-R') condition.variableName = true;
      // An operand of `-eq` is arithmetic: `[[ PATH=0 -eq 0 ]]` assigns.
      else if (value !== null && value !== '=' && value !== '==' && value !== '!=' && ARITHMETIC_ASSIGNMENT.test(value)) {
        for (const name of value.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) this.shared.setsVariable(name, built.start, 'conditional arithmetic');
      }
      else if (condition.variableName && value === null) this.sink('`[[ -v ]]` with a variable name known only at run time', frame.wordBegin);
    } else if (frame.origin === 'array') {
      // Words of `NAME=( ... )` are data.
    } else if (frame.header) {
      if (frame.loopVar) {
        this.shared.tainted.add(value ?? '');
        this.shared.setsVariable(value, built.start, 'for');
      }
      frame.loopVar = false;
      frame.header = word !== 'do';
      frame.commandStart = word === 'do';
    } else if (reserved && frame.afterTime && (word === '-p' || word === '--')) {
      frame.commandStart = true;
    } else {
      frame.afterTime = false;
      // `coproc NAME { ...; }` / `coproc NAME ( ... )`: the word was the name.
      const coprocName = reserved && frame.coproc && this.matchAt(BODY_NEXT, this.cursor) !== null;
      if (reserved) frame.coproc = false;
      if (!reserved || coprocName) {
        if (coprocName) {
          frame.commandStart = true;
          // `coproc NAME { ...; }` makes NAME an array of descriptor numbers (`coproc PATH` sets PATH to `63`).
          this.shared.setsVariable(word, built.start, 'coproc');
        } else if (!redirect) frame.cmd.words.push(built);
      } else if (word === 'function') frame.functionName = true;
      else if (word === 'case') {
        cases.push('subject');
        this.pushLevel(frame);
      } else if (word === 'esac' && state === 'body') {
        cases.pop();
        this.popLevel(frame);
      } else if (word === 'for' || word === 'select') {
        frame.header = frame.loopVar = true;
        this.pushLevel(frame);
      }
      else if (word === '[[') this.shared.conditions.add((frame.condition = { arithmetic: false, variableName: false, tokens: [] }));
      else if (COMMAND_PREFIX_WORDS.has(word)) {
        frame.commandStart = true;
        frame.afterTime = word === 'time';
        frame.coproc = word === 'coproc';
        if (word === 'coproc') this.shared.coproc = true;
        if (GROUP_OPENERS.has(word)) this.pushLevel(frame);
        else if (GROUP_CLOSERS.has(word)) this.popLevel(frame);
      } else frame.cmd.words.push(built);
    }
  }

  /** The simple command in `frame` ends: read it with the table, apply its refusals, list it. */
  private endCommand(frame: CommandFrame): void {
    this.endWord(frame);
    frame.header = false;
    frame.commandStart = true;
    const cmd = frame.cmd;
    if (cmd.words.length === 0 && cmd.tokens.length === 0 && cmd.reads === null && !cmd.runtimeInput) return;
    frame.cmd = newCmd();
    if (cmd.words.length > 0) this.level(frame).pipeOpen = false;
    this.settleCommand(cmd);
  }

  private settleCommand(cmd: Cmd): void {
    const settling: Settling = { cmd, via: this.via, refusals: [], codes: [], byWord: null };
    this.shared.settling = settling;
    readCommand(cmd.words, this.shared.report);
    for (const { token, word } of cmd.tokens) {
      const hit = typeof word === 'number' ? settling.refusals.find((refusal) => word >= refusal.from && word < refusal.to)?.evaluation : word === 'input' ? cmd.input : null;
      if (hit) this.shared.refine([token], { kind: 'refuse', context: hit.context, reason: hit.reason });
    }
    const places = this.places();
    if (cmd.reads) this.reader(cmd, cmd.reads, places);
    // `exec < <(...)` (no command): every later command's input is what a process writes.
    // So too `exec <<EOF`, `exec 3<<< ...`: a later command's input (or a descriptor it opens) is text here.
    if ((cmd.runtimeInput || cmd.opensInput) && cmd.words.length === 1 && cmd.words[0].text === 'exec') this.shared.execInput ??= { reason: 'exec', offset: cmd.words[0].start };
    for (const args of settling.codes) this.readCode(...args, places);
  }

  /** Static text that a command runs as code (or expands as a prompt): read it too. */
  private readCode(text: string, at: CommandWord, kind: 'script' | 'prompt', via: string, places: readonly Place[]): void {
    this.shared.codeBudget -= text.length;
    if (this.shared.codeBudget < 0) return this.shared.unsure('more code run by `eval`/`sh -c` than execgate reads', at.start);
    const map = new Int32Array(text.length).fill(at.start);
    const readers = this.shared.inheritedReaders;
    new Lexer(toSource(text, map, this.shared), 0, text.length, this.shared, kind === 'script' ? 'cmd' : 'heredoc', null, this.depth + 1, [], via, places).run();
    // `bash -c sh <<< ...`, `bash -c 'source /dev/fd/3' 3<<< ...`: a command of the script reads
    // code from an input it inherits, which is the outer command's (a here-string, a heredoc, a
    // pipe, a descriptor the outer command opened).
    if (this.shared.inheritedReaders > readers) this.shared.feed(`\`${via}\` runs a script in which a command reads code from the input (or a descriptor) it inherits`, at.start);
  }

  private commandNewline(frame: CommandFrame, i: number): number {
    this.endCommand(frame);
    const current = this.level(frame);
    if (!current.pipeOpen) current.stage = 0;
    const level = this.parserLevel();
    const outer = this.stack.some((each) => each !== level && each.kind === 'cmd' && each.pending.length > 0);
    if (outer) this.poison('a line break inside `$(...)` before a heredoc body', i);
    if (level.pending.length > 0) return this.readHeredocBodies(level, i + 1);
    return i + 1;
  }

  private parserLevel(): CommandFrame {
    for (let k = this.stack.length - 1; k >= 0; k -= 1) {
      const frame = this.stack[k];
      if (frame.kind === 'cmd' && frame.origin !== 'subshell' && frame.origin !== 'array') return frame;
    }
    return this.stack[0] as CommandFrame;
  }

  private skipComment(i: number): number {
    const end = this.lineEnd(i);
    for (let j = i; j < end; j += 1) if (this.marks[j] === 1) this.setPlacement(this.starts.get(j) as RefToken, { kind: 'literal', context: 'comment' });
    return end;
  }

  private openParen(frame: CommandFrame, i: number): number {
    if (frame.wordStart && this.peek(i + 1) === '(') return this.push(arith(i, '))'), i + 2);
    if (frame.cases[frame.cases.length - 1] === 'pattern' && frame.patternStart && frame.wordStart) {
      frame.patternStart = false;
      return i + 1;
    }
    if (!frame.wordStart && frame.wordEquals && frame.assignment !== null && this.text[i - 1] === '=') {
      // `NAME=( ... )`: a compound array assignment; its words are data (subscripts are arithmetic).
      this.shared.attributes.set(frame.assignment, new Set([...(this.shared.attributes.get(frame.assignment) ?? []), 'array']));
      this.shared.tainted.add(frame.assignment);
      frame.value = null;
      return this.push(newCommandFrame('array', i), i + 1);
    }
    this.endWord(frame);
    // `name ( )`: a function definition; the body that follows is a command.
    const empty = this.matchAt(EMPTY_PARENS, i + 1);
    if (empty !== null && frame.cmd.words.length === 1) {
      frame.cmd = newCmd();
      frame.commandStart = true;
      frame.fnPending = true;
      return i + 1 + empty.length;
    }
    this.endCommand(frame);
    const fn = frame.fnPending;
    frame.fnPending = false;
    return this.push(newCommandFrame('subshell', i, fn), i + 1);
  }

  private closeParen(frame: CommandFrame, i: number): number {
    this.endWord(frame);
    if (frame.cases[frame.cases.length - 1] === 'pattern') {
      frame.cases[frame.cases.length - 1] = 'body';
      frame.commandStart = true;
    } else {
      this.endCommand(frame);
      if (frame.origin === 'root') this.poison('an unmatched `)`', i);
      else this.closeCommandFrame(frame, i);
    }
    return i + 1;
  }

  private closeCommandFrame(frame: CommandFrame, i: number): void {
    if (frame.pending.length > 0) this.poison('a heredoc whose body never started', i);
    if (frame.condition) {
      this.shared.settleCondition(frame.condition);
      frame.condition = null;
    }
    this.stack.pop();
    const parent = this.top();
    if (parent.kind === 'cmd' && frame.origin === 'subshell') {
      parent.wordStart = true;
      parent.commandStart = true;
      const reads = frame.levels[0].reads;
      if (reads) readsFromGroup(parent.cmd, reads);
    }
  }

  private redirection(frame: CommandFrame, i: number, c: string): number {
    const next = this.peek(i + 1);
    if (c === '<') frame.cmd.opensInput = true;
    // `a=(<<A)`: bash takes no redirection (and opens no heredoc) inside a compound assignment;
    // it rejects that command and reads on, where the reader would have taken lines for a body.
    if (frame.origin === 'array' && !(next === '(' && frame.wordStart)) this.poison('a redirection or heredoc inside a compound array assignment `NAME=(...)`, which bash rejects and reads past', i);
    // The descriptor redirected: standard input unless a number or a variable says otherwise.
    let fd = c === '<' ? 0 : 1;
    // `2>&1`, `{fd}>file`: a descriptor number or variable right before the operator is part of it.
    if (!frame.wordStart && frame.word !== null && /^(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})$/.test(frame.word)) {
      frame.redirectTarget = true;
      fd = frame.word.startsWith('{') ? -1 : Number(frame.word);
      // `{NAME}>file` stores the descriptor's number in NAME (`exec {PATH}>x` makes PATH `10`).
      if (frame.word.startsWith('{')) this.shared.setsVariable(frame.word.slice(1, -1), this.origin(frame.wordBegin), 'redirection');
    }
    if (next === '(' && frame.wordStart) {
      beginWord(frame, i);
      frame.value = null;
      // `>(...)`: its input is what the command writes there.
      return this.push(newCommandFrame('substitution', i, false, c === '>'), i + 2);
    }
    this.endWord(frame);
    if (c === '<' && next === '<') {
      if (fd === 0) frame.cmd.stdinReplaced = true;
      if (this.peek(i + 2) === '<') {
        frame.redirectTarget = true;
        frame.hereString = true;
        return i + 3;
      }
      return this.heredocOperator(i);
    }
    if (next === '(') {
      markWordPart(frame, i);
      frame.value = null;
      return this.push(newCommandFrame('substitution', i, false, c === '>'), i + 2);
    }
    frame.redirectTarget = true;
    // `<&N`, `<&-`: a descriptor opened elsewhere; `<`, `<>`: a file, or what a process substitution writes.
    if (c === '<' && next === '&') frame.cmd.runtimeInput = true;
    else if (c === '<') frame.inputFd = fd;
    return next === '>' || next === '&' || next === '|' || (c === '<' && next === '>') ? i + 2 : i + 1;
  }

  private controlOperator(frame: CommandFrame, i: number, c: string): number {
    if (c === '&' && this.peek(i + 1) === '>') {
      this.endWord(frame);
      frame.redirectTarget = true;
      return this.peek(i + 2) === '>' ? i + 3 : i + 2;
    }
    this.endCommand(frame);
    // `|` and `|&` go on to the next stage of a pipeline; every other operator starts a new one.
    const level = this.level(frame);
    if (c === '|' && this.peek(i + 1) !== '|') {
      level.stage += 1;
      level.pipeOpen = true;
    } else {
      level.stage = 0;
      level.pipeOpen = false;
    }
    let length = 1;
    if (c === ';' && this.peek(i + 1) === ';') length = this.peek(i + 2) === '&' ? 3 : 2;
    else if (c === ';' && this.peek(i + 1) === '&') length = 2;
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
    let quote = '';
    let opened = j;
    // The delimiter word after quote removal; quoting any part of it leaves the body unexpanded.
    for (; j < this.end; j += 1) {
      const c = this.peek(j);
      if (c === TOKEN) {
        const after = this.refuseAt(j, 'heredoc-delimiter');
        if (quote === '') this.poison('a heredoc delimiter made of a reference', after);
        else delimiter += this.text.slice(j, after);
        j = after - 1;
      } else if (quote === '' && METACHAR.has(c)) break;
      else if (c === quote) quote = '';
      else if (quote === '' && (c === "'" || c === '"')) {
        quote = c;
        quoted = true;
        opened = j;
      } else if (c === '\\' && (quote === '' || (quote === '"' && '$`"\\\n'.includes(this.peek(j + 1) || 'x')))) {
        quoted = true;
        delimiter += this.text[j + 1] ?? '';
        j += 1;
      } else {
        if (c === '$' || c === '`') this.poison('a heredoc delimiter containing `$` or a backquote', j);
        delimiter += c;
      }
    }
    if (quote !== '') return this.fail('the command ends inside a quoted heredoc delimiter', opened);
    if (delimiter === '' && !quoted) this.poison('a `<<` without a delimiter word', j);
    const command = this.top() as CommandFrame;
    this.parserLevel().pending.push({ delimiter, quoted, stripTabs, cmd: command.cmd, places: this.places() });
    return j;
  }

  private readHeredocBodies(frame: CommandFrame, from: number): number {
    let position = from;
    for (const heredoc of frame.pending.splice(0)) {
      const { bodyEnd, next } = this.findHeredocEnd(heredoc, position);
      if (heredoc.quoted) {
        for (let k = position; k < bodyEnd; k += 1) {
          const token = this.starts.get(k);
          if (token) {
            heredoc.cmd.tokens.push({ token, word: 'input' });
            k = this.refuseAt(k, 'quoted-heredoc') - 1;
          }
        }
      } else {
        const refused: Placement | null = this.inArithmetic() ?? (heredoc.cmd.input && { kind: 'refuse', ...heredoc.cmd.input });
        new Lexer(this.source, position, bodyEnd, this.shared, 'heredoc', refused, this.depth + 1, [...this.outers(), { cmd: heredoc.cmd, word: 'input' }], undefined, heredoc.places).run();
        // Expansions in the body put values of the run into the code the command reads.
        const reads = heredoc.cmd.reads;
        if (reads && /[$`]/.test(this.text.slice(position, bodyEnd))) this.shared.feed(`${reads.reason}, a heredoc with expansions: a reference's value there would be read as code`, this.origin(position));
      }
      if (heredoc.cmd.input?.context === 'shell-script') this.readCode(this.text.slice(position, bodyEnd), { text: null, start: this.origin(position), end: this.origin(bodyEnd), assignment: null, raw: '' }, 'script', 'heredoc', heredoc.places);
      position = next;
    }
    return position;
  }

  private findHeredocEnd(heredoc: Heredoc, from: number): { bodyEnd: number; next: number } {
    let lineStart = from;
    while (lineStart < this.end) {
      let lineEnd = this.lineEnd(lineStart);
      if (!heredoc.quoted) while (lineEnd < this.end && endsWithEscape(this.text, lineStart, lineEnd)) lineEnd = this.lineEnd(lineEnd + 1);
      let line = this.text.slice(lineStart, lineEnd);
      if (!heredoc.quoted) line = line.replace(/\\\n/g, '');
      if (heredoc.stripTabs) line = line.replace(/^\t+/, '');
      if (line === heredoc.delimiter && !this.marks.subarray(lineStart, lineEnd).includes(1)) return { bodyEnd: lineStart, next: Math.min(lineEnd + 1, this.end) };
      lineStart = lineEnd + 1;
    }
    this.shared.unsure(`a heredoc without its delimiter line \`${heredoc.delimiter}\``, this.origin(from));
    return { bodyEnd: this.end, next: this.end };
  }

  private lineEnd(from: number): number {
    const end = this.text.indexOf('\n', from);
    return end < 0 || end > this.end ? this.end : end;
  }

  // --- quoted text ---------------------------------------------------------------------------

  /** `"..."`, `$"..."` and an unquoted heredoc body (where `"` is plain text). */
  private stepDoubleQuoted(frame: StringFrame, i: number, c: string): number {
    const owner = frame.kind === 'dquote' ? frame.owner : null;
    const heredoc = frame.kind === 'heredoc';
    if (c === '"' && !heredoc) {
      this.stack.pop();
      return i + 1;
    }
    if (c === '\\') {
      const next = this.peek(i + 1);
      if (next === TOKEN) {
        if (owner) owner.value = null;
        return this.refuseAt(i + 1, 'escaped');
      }
      const escapes = next === '$' || next === '`' || (next === '"' && !heredoc) || next === '\\' || next === '\n';
      if (owner && owner.value !== null) owner.value += escapes ? (next === '\n' ? '' : next) : '\\';
      return escapes ? i + 2 : i + 1;
    }
    if (c === '$') return this.dollar(i, false, owner);
    if (c === '`') {
      if (owner) owner.value = null;
      return this.backquote(i);
    }
    const end = this.span(i + 1, heredoc ? HEREDOC_STOPS : DQUOTE_STOPS);
    if (owner && owner.value !== null) owner.value += this.text.slice(i, end);
    return end;
  }

  // --- expansions ----------------------------------------------------------------------------

  /** At a `$`; `owner` is the command frame whose word it is part of, to mark dynamic. */
  private dollar(i: number, unquoted: boolean, owner: CommandFrame | null): number {
    const next = this.peek(i + 1);
    // Every form but `$'...'` and a lone `$` makes the word dynamic.
    const expands = next === TOKEN || next === '(' || next === '[' || next === '{' || (unquoted && next === '"') || /^[A-Za-z0-9_@*#?$!-]$/.test(next);
    if (expands && owner) owner.value = null;
    if (next === TOKEN) return this.refuseAt(i + 1, 'after-dollar');
    if (next === '(') return this.peek(i + 2) === '(' ? this.push(arith(i, '))'), i + 3) : this.push(newCommandFrame('substitution', i), i + 2);
    if (next === '[') return this.push(arith(i, ']'), i + 2);
    if (next === '{') return this.parameterName(i);
    if (unquoted && (next === "'" || next === '"')) return this.push({ kind: next === "'" ? 'ansi' : 'locale', start: i, owner }, i + 2);
    if (expands) return i + 1 + (this.matchAt(NAME, i + 1)?.length ?? 1);
    if (owner && owner.value !== null) owner.value += '$';
    if (owner && unquoted) owner.unquoted += '$';
    return i + 1;
  }

  private parameterName(i: number): number {
    const outer = this.top();
    const quoted = outer.kind === 'dquote' || outer.kind === 'locale' || outer.kind === 'heredoc' || (outer.kind === 'param' && outer.quoted);
    const frame: ParameterFrame = { kind: 'param', start: i, quoted, part: 'afterName' };
    this.push(frame, i + 2);
    const name = this.matchAt(PARAMETER_NAME, i + 2);
    if (name === null) {
      frame.part = this.peek(i + 2) === TOKEN ? 'afterName' : 'uncertain';
      return i + 2;
    }
    frame.name = name;
    const after = i + 2 + name.length;
    if (name.startsWith('!') && name.length > 1 && !'*@['.includes(this.text[after] ?? '*')) {
      this.sink('an indirect expansion `${!NAME}`, which takes a value as a variable name (and evaluates its subscript)', i);
    }
    if (this.peek(after) === '[') return this.push(arith(after, ']'), after + 1);
    return after;
  }

  private stepParameter(frame: ParameterFrame, i: number, c: string): number {
    if (c === '}') {
      this.stack.pop();
      return i + 1;
    }
    if (frame.part === 'afterName') return this.parameterOperator(frame, i, c);
    if (frame.part === 'arith') {
      frame.names ??= new Set();
      // `${x:0:"$y"}`: a quoted offset or length is still arithmetic on what it expands to.
      if (c === '"' || c === "'") frame.names = null;
      if (frame.names !== null) this.readsIn(frame, i, c);
      if (frame.names === null || (frame.names.size > 0 && /[A-Za-z_$`]/.test(c))) this.sink('an offset or length in `${NAME:offset:length}`, which is arithmetic on variables', i, frame.names);
    }
    if (c === '\\') {
      if (this.peek(i + 1) === TOKEN) return this.refuseAt(i + 1, 'escaped');
      return i + 2;
    }
    if (c === '$') return this.dollar(i, !frame.quoted, null);
    if (c === '`') return this.backquote(i);
    if (c === '"') return this.push({ kind: 'dquote', start: i, owner: null }, i + 1);
    if (c === "'") {
      if (frame.quoted) {
        frame.part = 'uncertain';
        this.poison('a single quote inside a double-quoted `${...}`, which bash and sh read differently', i);
        return i + 1;
      }
      return this.push({ kind: 'squote', start: i, owner: null }, i + 1);
    }
    return i + 1;
  }

  /** Right after `${NAME`: the operator says what follows (a word, arithmetic, or a form execgate does not read). */
  private parameterOperator(frame: ParameterFrame, i: number, c: string): number {
    const next = this.peek(i + 1);
    const doubled = next !== '' && (c === ':' ? '-=+?'.includes(next) : '#%^,'.includes(c) ? next === c : c === '/' && '/#%'.includes(next));
    frame.part = c === ':' && !doubled ? 'arith' : ':-=+?@#%^,/'.includes(c) ? 'word' : 'uncertain';
    // `${NAME=word}` / `${NAME:=word}` assigns NAME.
    if ((c === '=' || (c === ':' && next === '=')) && frame.name !== undefined) {
      this.shared.setsVariable(frame.name, this.origin(frame.start), 'default');
      this.shared.tainted.add(frame.name);
    }
    // `${NAME@P}` expands the value as a prompt: its `$(...)` and backquotes run.
    if (c === '@' && next === 'P') this.sink('a prompt expansion `${NAME@P}`, which runs the command substitutions in the value', i);
    return doubled ? i + 2 : i + 1;
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
      this.afterArithmetic(frame, i + 2);
      if (this.peek(i + 1) === ')') return i + 2;
      this.poison('a `$((` or `((` that is not closed by `))`', i);
      return i + 1;
    }
    if (c === ']' && frame.closer === ']') {
      if (frame.depth > 0) frame.depth -= 1;
      else {
        this.stack.pop();
        this.afterArithmetic(frame, i + 1);
      }
      return i + 1;
    }
    if (frame.names !== null) this.readsIn(frame, i, c);
    if (c === '\\') return this.peek(i + 1) === TOKEN ? i + 1 : i + 2;
    if (c === '$') return this.dollar(i, true, null);
    if (c === '`') return this.backquote(i);
    if (c === '"' || c === "'") {
      // `$(( "$n" + 1 ))`: bash drops the quotes and evaluates what they expand to as an
      // expression, which the names noted here do not follow: anything may be read.
      frame.names = null;
      return this.push({ kind: c === "'" ? 'squote' : 'dquote', start: i, owner: null }, i + 1);
    }
    return i + 1;
  }

  /** Note what an arithmetic expression (or `${x:offset:length}`) at `i` reads. */
  private readsIn(frame: { names?: Set<string> | null }, i: number, c: string): void {
    const before = this.text[i - 1] ?? '';
    if (/[A-Za-z_]/.test(c) && !/[A-Za-z0-9_#$]/.test(before)) {
      frame.names?.add(this.matchAt(NAME, i) as string);
    } else if (c === '`' || c === '$') {
      const read = c === '$' ? this.matchAt(READ_NAME, i) : null;
      if (read === null) frame.names = null; // `$(...)`, backquotes, `$1`, `$@`: any value
      else if (!read.startsWith('${#')) frame.names?.add(this.matchAt(NAME, i + (read[1] === '{' ? 2 : 1)) as string); // `${#NAME}` is a number
    }
  }

  private afterArithmetic(frame: ArithmeticFrame, end: number): void {
    // `(( PATH = 0 ))`, `n++`: an expression that assigns may assign any name it holds.
    if (ARITHMETIC_ASSIGNMENT.test(this.text.slice(frame.start, end))) {
      if (frame.names === null) this.shared.setsVariable(null, this.origin(frame.start), 'arithmetic');
      else for (const name of frame.names) this.shared.setsVariable(name, this.origin(frame.start), 'arithmetic');
    }
    if (frame.names === null || frame.names.size > 0) this.sink('an arithmetic context that reads variables or expansions, whose values bash evaluates as expressions', frame.start, frame.names);
    const parent = this.top();
    if (parent.kind !== 'cmd') return;
    parent.arithEnd = end;
    if (frame.closer === '))' && this.text[frame.start] === '(') {
      parent.wordStart = true;
      if (parent.header) {
        // `for (( ... ))` may go straight on to `do`.
        parent.header = false;
        parent.commandStart = true;
      }
    }
  }

  private backquote(i: number): number {
    const quotes = this.backquoteQuoteRule();
    let body = '';
    let escapedQuote = false;
    const map: number[] = [];
    let j = i + 1;
    while (j < this.end && this.text[j] !== '`') {
      const next = this.text[j + 1];
      if (this.text[j] === '\\' && next === '"') escapedQuote = true;
      const escapes = next === '$' || next === '`' || next === '\\' || (quotes === 'strip' && next === '"');
      if (this.text[j] === '\\' && escapes) j += 1;
      body += this.text[j];
      map.push(this.map[j]);
      j += 1;
    }
    if (j >= this.end) return this.fail('the command ends inside a backquoted command substitution', i);
    if (quotes === 'unsure' && escapedQuote) {
      const reason = 'a `\\"` in a backquoted command inside `${...}` or a heredoc, which bash and sh read differently';
      this.poison(reason, i);
      for (let k = i + 1; k < j; k += 1) {
        const token = this.starts.get(k);
        if (token) this.setPlacement(token, { kind: 'refuse', context: 'uncertain', reason });
      }
      return j + 1;
    }
    new Lexer(toSource(body, Int32Array.from(map), this.shared), 0, body.length, this.shared, 'cmd', this.inArithmetic(), this.depth + 1, this.outers(), this.via, this.places()).run();
    return j + 1;
  }

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
    const root = this.stack[0];
    if (root.kind === 'cmd') {
      if (this.stack.length === 1) this.endCommand(root);
      if (root.condition) this.shared.settleCondition(root.condition);
      if (root.pending.length > 0) this.poison('a heredoc whose body never started', this.end);
    }
    if (this.stack.length > 1) {
      const open = this.stack[this.stack.length - 1];
      const name = open.kind === 'cmd' && open.origin === 'substitution' ? '`$(...)`, `<(...)` or `>(...)`' : FRAME_NAMES[open.kind];
      this.fail(`the command ends inside an unterminated ${name}`, open.start);
    }
  }
}

/** Where in its command the current spot of text sits: a word, the input (a here-string) or a redirection's target. */
const slot = (frame: CommandFrame): Outer['word'] => (frame.hereString ? 'input' : frame.redirectTarget ? 'redirect' : frame.cmd.words.length);

function arith(start: number, closer: ArithmeticFrame['closer']): ArithmeticFrame {
  return { kind: 'arith', start, closer, depth: 0, names: new Set() };
}

function newCmd(): Cmd {
  return { words: [], tokens: [], input: null, reads: null, stdinReplaced: false, runtimeInput: false };
}

/** The command after a compound command that holds a reader: its redirections feed that reader. */
function readsFromGroup(cmd: Cmd, reads: Evaluation): void {
  cmd.input ??= reads;
  cmd.reads ??= reads;
}

function newCommandFrame(origin: CommandFrame['origin'], start: number, fn = false, fed = false): CommandFrame {
  return { kind: 'cmd', origin, start, wordStart: true, commandStart: true, word: null, value: null, unquoted: '', wordBegin: start, assignment: null, subscriptName: null, arithEnd: -1,
    wordAtCommandStart: false, functionName: false, header: false, loopVar: false, afterTime: false, coproc: false, cmd: newCmd(), wordEquals: false, redirectTarget: false, hereString: false,
    patternStart: false, cases: [], pending: [], condition: null, levels: [{ stage: 0, pipeOpen: false, fn, fed, reads: null }], fnPending: false, inputFd: null };
}

/** Something other than a plain character joins the current word (a quote, an expansion, a token). */
function markWordPart(frame: CommandFrame, index: number): void {
  if (frame.wordStart) beginWord(frame, index);
  frame.word = null;
}

function beginWord(frame: CommandFrame, index: number): void {
  frame.wordStart = false;
  frame.wordAtCommandStart = frame.commandStart;
  frame.patternStart = false;
  frame.word = '';
  frame.value = '';
  frame.unquoted = '';
  frame.wordBegin = index;
  frame.assignment = null;
  frame.subscriptName = null;
  frame.wordEquals = false;
}

/** Whether unquoted word text holds a glob, a brace expansion or a leading tilde (linear, unlike a regex with `.*`). */
function isPattern(text: string): boolean {
  if (!PATTERN_CHARACTER.test(text)) return false;
  if (text.startsWith('~') || text.includes('*') || text.includes('?')) return true;
  const bracket = text.indexOf('[');
  if (bracket >= 0 && text.lastIndexOf(']') > bracket) return true;
  if (!text.includes('{')) return false;
  let open = false;
  let list = false;
  for (let k = 0; k < text.length; k += 1) {
    const c = text[k];
    if (c === '{') open = true;
    else if (c === '}') {
      if (open && list) return true;
      open = list = false;
    } else if (open && (c === ',' || (c === '.' && text[k + 1] === '.'))) list = true;
  }
  return false;
}

function endsWithEscape(text: string, from: number, to: number): boolean {
  let count = 0;
  for (let k = to - 1; k >= from && text[k] === '\\'; k -= 1) count += 1;
  return count % 2 === 1;
}

const ANSI_SIMPLE: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };

/** The value of a `$'...'` body, as bash decodes it. */
function decodeAnsiC(body: string): string {
  const decoded = body.replace(/\\(?:([abeEfnrtv\\'"?])|x\{([0-9A-Fa-f]+)\}|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})|c(.))/g, (all, simple, braced, hex, u, bigU, octal, control) => {
    if (simple) return ANSI_SIMPLE[simple as string];
    // `\x{HH}` (bash 5.2): as many hex digits as the braces hold, the byte they make.
    if (braced) return String.fromCharCode(parseInt((braced as string).slice(-2), 16));
    if (hex) return String.fromCharCode(parseInt(hex as string, 16));
    if (u || bigU) {
      const code = parseInt((u ?? bigU) as string, 16);
      return code <= 0x10ffff ? String.fromCodePoint(code) : all;
    }
    if (octal) return String.fromCharCode(parseInt(octal as string, 8) & 0xff);
    return String.fromCharCode((control as string).charCodeAt(0) & 0x1f);
  });
  // bash ends the string at its first NUL (`$'ev\0x'al` is `eval`).
  const nul = decoded.indexOf('\0');
  return nul < 0 ? decoded : decoded.slice(0, nul);
}

function tooComplex(what: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_COMMAND_TOO_COMPLEX',
    `The command ${what}, which execgate does not read. Split it into simpler commands or move the nested part into a script file. Nothing was run.`,
  );
}
