/*
 * The one table of commands that matter to the reader: shells, wrappers that run another command,
 * and builtins that parse a word as code, as arithmetic or as a variable name. Given the words of
 * one simple command it says which commands run (the wrapped ones included), which words are code
 * (read again as a nested script when static), where a token would be parsed after all, and what
 * it cannot be sure of.
 *
 * A word counts when it is static (known before the shell runs); a dynamic command name, a
 * dynamic option of a wrapper or a dynamic script leaves the command uncertain, and a dynamic
 * word where bash evaluates a value is a sink (a token anywhere could reach it through a variable).
 * What an interpreter other than a shell does with its arguments (`python -c`) is its own meaning.
 */

export interface Evaluation {
  readonly context: 'evaluated' | 'shell-script' | 'variable-name' | 'remote-command' | 'arithmetic' | 'uncertain';
  readonly reason: string;
}

export interface CommandWord {
  /** Static value after quote removal, or null when part of it is only known at run time. */
  readonly text: string | null;
  readonly start: number;
  readonly end: number;
  /** An unquoted `NAME=` (or `NAME[...]=`) starts the word. */
  readonly assignment: string | null;
  /** The word as written (for display). */
  readonly raw: string;
}

/** What reading one simple command reports; the reader turns it into the analysis. */
export interface CommandReport {
  command(words: readonly CommandWord[], via: string | undefined): void;
  /** Tokens in words [from, to) are parsed by the command. */
  refuse(from: number, to: number, evaluation: Evaluation): void;
  /** A static word (or words joined) that the command runs as code. */
  code(text: string, at: CommandWord, kind: 'script' | 'prompt', via: string): void;
  sink(reason: string, at: CommandWord): void;
  uncertain(reason: string, at: CommandWord): void;
  /** The command's standard input (a heredoc or here-string) is parsed as code. */
  input(evaluation: Evaluation): void;
  /** A token in the value of this assignment is refused if NAME turns out integer or array. */
  assigned(name: string, word: number, declaration: boolean): void;
  attribute(name: string, kind: 'integer' | 'array' | 'reference'): void;
  /** NAME may hold a value known only at run time (a reference's value among them). */
  taint(name: string): void;
}

/** A wrapper: options taking a value, options whose value (or the rest) is code, operands before the command, or all of it code. */
interface Wrapper {
  readonly kind: 'wrapper';
  readonly valued: string[];
  readonly code?: string[];
  readonly positional?: number;
  readonly all?: 'code' | 'remote';
}
type Kind = { kind: 'shell' } | Wrapper | { kind: 'builtin' };

const shell = (): Kind => ({ kind: 'shell' });
const wrap = (valued: string[] = [], extra: Omit<Wrapper, 'kind' | 'valued'> = {}): Kind => ({ kind: 'wrapper', valued, ...extra });

/** Programs, by base name. */
const TABLE: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ...['sh', 'bash', 'rbash', 'dash', 'zsh', 'ksh', 'ksh93', 'mksh', 'pdksh', 'ash', 'yash', 'posh', 'lksh', 'oksh', 'loksh', 'fish', 'csh', 'tcsh'].map((name): [string, Kind] => [name, shell()]),
  ...['command', 'builtin', 'nohup', 'setsid', 'unbuffer', 'chronic'].map((name): [string, Kind] => [name, wrap()]),
  ...['chrt', 'taskset'].map((name): [string, Kind] => [name, wrap([], { positional: 1 })]),
  ...['parallel', 'tmux', 'screen'].map((name): [string, Kind] => [name, wrap([], { all: 'code' })]),
  ['exec', wrap(['-a'])],
  ['time', wrap(['-f', '--format', '-o', '--output'])],
  ['env', wrap(['-u', '--unset', '-C', '--chdir', '-P', '--default-signal', '--ignore-signal', '--block-signal'], { code: ['-S', '--split-string'] })],
  ['nice', wrap(['-n', '--adjustment'])],
  ['ionice', wrap(['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'])],
  ['timeout', wrap(['-s', '-k', '--signal', '--kill-after'], { positional: 1 })],
  ['stdbuf', wrap(['-i', '-o', '-e', '--input', '--output', '--error'])],
  ['xargs', wrap(['-I', '-n', '-P', '-d', '-s', '-L', '-a', '-E', '--max-args', '--max-procs', '--delimiter', '--arg-file', '--max-chars', '--max-lines', '--eof', '--process-slot-var'])],
  ['sudo', wrap(['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-R', '-T', '--user', '--group', '--chdir', '--prompt', '--host', '--role', '--type', '--close-from', '--other-user', '--chroot', '--command-timeout'], { code: ['-s', '-i', '--shell', '--login'] })],
  ['doas', wrap(['-u', '-C'], { code: ['-s'] })],
  ['pkexec', wrap(['--user'])],
  ['su', wrap(['-g', '-G', '-s', '-w', '--group', '--supp-group', '--shell', '--whitelist-environment'], { code: ['-c', '--command', '--session-command'], all: 'code' })],
  ['runuser', wrap(['-u', '-g', '-G', '-s', '-w', '--user', '--group', '--supp-group', '--shell'], { code: ['-c', '--command', '--session-command'] })],
  ['sg', wrap([], { all: 'code' })],
  ['fakeroot', wrap(['-l', '-s', '-i', '--lib', '--faked'])],
  ['chroot', wrap(['--userspec', '--groups'], { positional: 1 })],
  ['unshare', wrap(['--map-user', '--map-group', '--setuid', '--setgid', '-S', '-G', '-R', '-w', '--root', '--wd'])],
  ['nsenter', wrap(['-t', '-S', '-G', '-r', '-w', '--target', '--setuid', '--setgid', '--root', '--wd'])],
  ['strace', wrap(['-e', '-o', '-p', '-u', '-s', '-E', '-a', '-b', '-I', '-O', '-P', '-S', '-X'])],
  ['ltrace', wrap(['-e', '-o', '-p', '-u', '-s', '-a', '-n', '-l'])],
  ['flock', wrap(['-w', '-E', '--timeout', '--conflict-exit-code'], { code: ['-c', '--command'], positional: 1 })],
  ['script', wrap(['-E', '-I', '-O', '-B', '-T', '--echo', '--log-in', '--log-out', '--log-io', '--log-timing'], { code: ['-c', '--command'], all: 'code' })],
  ['watch', wrap(['-n', '-d', '-q', '--interval', '--differences'], { all: 'code' })],
  ['ssh', wrap(['-b', '-c', '-D', '-E', '-e', '-F', '-I', '-i', '-J', '-L', '-l', '-m', '-O', '-o', '-p', '-Q', '-R', '-S', '-W', '-w', '-B', '-P'], { all: 'remote' })],
  ...['eval', 'trap', 'let', 'declare', 'typeset', 'local', 'export', 'readonly', 'read', 'unset', 'mapfile', 'readarray', 'printf', 'getopts', 'wait', 'test', '[', 'complete', 'compgen', 'compopt', 'bind', 'alias', 'fc', 'shopt', 'enable'].map((name): [string, Kind] => [name, { kind: 'builtin' }]),
]);

/** Shell variables whose value bash runs as code or expands as a prompt. */
const CODE_VARIABLES = /^(?:PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|MAILPATH|BASH_FUNC_.*|HISTTIMEFORMAT|TIMEFORMAT)$/;
/** Shell variables whose assignment bash evaluates as arithmetic. */
const ARITHMETIC_VARIABLES = new Set(['RANDOM', 'SRANDOM', 'OPTIND', 'HISTCMD', 'LINENO', 'SECONDS', 'BASH_ARGV0', 'COLUMNS', 'LINES', 'HISTSIZE', 'HISTFILESIZE', 'TMOUT']);
const SHELL_VALUED = ['-o', '+o', '-O', '+O', '--rcfile', '--init-file'];
const SHELL_FLAGS = ['-s', '-i', '--shell', '--login'];
const FIND_EXEC = ['-exec', '-execdir', '-ok', '-okdir'];
const MAX_HOPS = 32;

const baseName = (text: string): string => text.slice(text.lastIndexOf('/') + 1);

/** Read one simple command (its words in order, assignments and redirections' targets left out of nothing). */
export function readCommand(words: readonly CommandWord[], report: CommandReport): void {
  let index = 0;
  for (; index < words.length && words[index]!.assignment !== null; index += 1) readAssignment(words, index, report, false);
  readFrom(words, index, words.length, report, undefined, 0);
}

function readAssignment(words: readonly CommandWord[], index: number, report: CommandReport, declaration: boolean): void {
  const word = words[index]!;
  const name = word.assignment as string;
  if (CODE_VARIABLES.test(name)) {
    report.refuse(index, index + 1, { context: 'evaluated', reason: `bash runs or expands the value of \`${name}\` as code` });
    if (word.text === null) report.sink(`\`${name}\` is set from a value known only at run time`, word);
    else {
      const value = word.text.slice(word.text.indexOf('=') + 1);
      report.code(value, word, name.startsWith('BASH_FUNC_') || name === 'PROMPT_COMMAND' ? 'script' : 'prompt', name);
    }
    return;
  }
  if (word.text === null) report.taint(name);
  if (ARITHMETIC_VARIABLES.has(name)) {
    report.refuse(index, index + 1, { context: 'arithmetic', reason: `bash evaluates a value assigned to \`${name}\` as arithmetic` });
    if (word.text === null) report.sink(`\`${name}\` is assigned a value known only at run time, which bash evaluates as arithmetic`, word);
    return;
  }
  if (!declaration) report.assigned(name, index, false);
}

function readFrom(words: readonly CommandWord[], from: number, to: number, report: CommandReport, via: string | undefined, hops: number): void {
  if (from >= to) return;
  const first = words[from]!;
  if (first.text === null) {
    report.uncertain('the command name is known only at run time', first);
    report.sink('a command whose name is known only at run time could be `eval` or a shell', first);
    report.refuse(from, to, { context: 'uncertain', reason: 'the command name is known only at run time' });
  }
  report.command(words.slice(from, to), via);
  if (first.text === null) return;
  if (hops >= MAX_HOPS) return report.uncertain(`more than ${MAX_HOPS} wrappers in one command`, first);
  const name = baseName(first.text);
  if (name === 'busybox' || name === 'toybox') return readFrom(words, from + 1, to, report, name, hops + 1);
  if (name === 'find') return readFind(words, from, to, report, hops);
  const entry = TABLE.get(name);
  if (!entry) return;
  if (entry.kind === 'shell') return readShellCommand(words, from, to, report, name);
  if (entry.kind === 'builtin') return readBuiltin(words, from, to, report, name);
  return readWrapper(words, from, to, report, name, entry, hops);
}

type OnOption = (option: string, value: CommandWord | string | null, at: number) => void;

/** Options from `index` (`-iu X` clusters, `--name=value`, `--name value`): where the operands start; `onOption` hears each option with its value. */
function skipOptions(words: readonly CommandWord[], index: number, to: number, valued: readonly string[], onOption: OnOption = () => {}): number {
  let i = index;
  for (; i < to; i += 1) {
    const text = words[i]!.text;
    // A dynamic word ends the options: the caller decides what an operand known only at run
    // time means (a builtin's operand, a wrapper's command: uncertain).
    if (text === null || !text.startsWith('-') || text === '-') return i;
    if (text === '--') return i + 1;
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const option = equals < 0 ? text : text.slice(0, equals);
      if (equals >= 0) onOption(option, text.slice(equals + 1), i);
      else if (valued.includes(option)) onOption(option, words[i + 1] ?? null, (i += 1));
      else onOption(option, null, i);
      continue;
    }
    // A short cluster: letters up to the first that takes a value (the rest of the word, or the next word).
    for (let k = 1; k < text.length; k += 1) {
      const option = `-${text[k]}`;
      if (!valued.includes(option)) onOption(option, null, i);
      else {
        if (k + 1 < text.length) onOption(option, text.slice(k + 1), i);
        else onOption(option, words[i + 1] ?? null, (i += 1));
        break;
      }
    }
  }
  return i;
}

/** A word (or an option's value) that `via` runs as code: refused, and read again when static. */
function codeValue(value: CommandWord | string | null, at: number, words: readonly CommandWord[], report: CommandReport, via: string, context: Evaluation['context'] = 'shell-script'): void {
  if (value === null) return;
  const word = words[Math.min(at, words.length - 1)]!;
  report.refuse(at, at + 1, { context, reason: `\`${via}\` runs this word as shell code` });
  const text = typeof value === 'string' ? value : value.text;
  if (text === null) {
    report.uncertain(`the code \`${via}\` runs is known only at run time`, word);
    report.sink(`\`${via}\` runs code known only at run time`, word);
  } else report.code(text, word, 'script', via);
}

/**
 * Words [from, to) that a command evaluates as one line: refused; read again as code by `via`
 * when all are static, else a sink (`dynamic` says why; `unsure`: the text is uncertain too).
 */
function codeWords(words: readonly CommandWord[], from: number, to: number, report: CommandReport, evaluation: Evaluation, via: string | null, dynamic: string, at: CommandWord, unsure: boolean): void {
  report.refuse(from, to, evaluation);
  const operands = words.slice(from, to);
  if (operands.some((word) => word.text === null)) {
    report.sink(dynamic, at);
    if (unsure) report.uncertain(dynamic, at);
  } else if (operands.length > 0 && via !== null) report.code(operands.map((word) => word.text).join(' '), operands[0]!, 'script', via);
}

function readShellCommand(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string): void {
  let script = false;
  let stdin = false;
  const operands = skipOptions(words, from + 1, to, SHELL_VALUED, (option) => {
    script ||= option === '-c' || option === '--command';
    stdin ||= option === '-s' || option === '-i';
  });
  if (operands < to && words[operands]!.text === null && !script) {
    // `bash "$x" ...`: the word could be `-c`, which would make the next word a script.
    report.refuse(operands, to, { context: 'uncertain', reason: `\`${name}\` gets an option or script file known only at run time` });
    report.uncertain(`\`${name}\` gets an option or script file known only at run time`, words[operands]!);
  } else if (script) {
    if (operands < to) codeValue(words[operands]!, operands, words, report, `${name} -c`);
  } else if (stdin || operands >= to) {
    report.input({ context: 'shell-script', reason: `\`${name}\` reads its script from this input` });
    report.uncertain(`\`${name}\` reads its script from its input`, words[from]!);
  }
}

function readWrapper(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string, spec: Wrapper, hops: number): void {
  let codeFound = false;
  // `sudo -s` / `-i` take no value: they hand the rest of the command to a shell.
  const valued = [...spec.valued, ...(spec.code ?? []).filter((option) => !SHELL_FLAGS.includes(option))];
  let start = skipOptions(words, from + 1, to, valued, (option, value, at) => {
    if (!(spec.code ?? []).includes(option)) return;
    codeFound = true;
    codeValue(value, at, words, report, `${name} ${option}`);
  });
  if (spec.all === 'remote') {
    // The host, then the command line the remote shell parses (or its input).
    report.refuse(start + 1, to, { context: 'remote-command', reason: 'ssh hands its command line to the remote shell, which parses it' });
    report.input({ context: 'remote-command', reason: 'ssh may hand its input to the remote shell, which parses it' });
    if (start + 1 < to) report.uncertain('ssh runs a command on another host, which the policy cannot see', words[from]!);
  } else if (codeFound && (name === 'sudo' || name === 'doas')) {
    // `sudo -s CMD` hands the words to a shell as one command line.
    codeWords(words, start, to, report, { context: 'shell-script', reason: `\`${name} -s\` / \`-i\` hands its command to a shell` }, name, `\`${name} -s\` runs a command line known only at run time`, words[from]!, false);
  } else if (codeFound) {
    return;
  } else if (spec.all === 'code' && (name === 'su' || name === 'script')) {
    // `su USER` / `script FILE` without -c: an interactive shell reading its input.
    report.input({ context: 'shell-script', reason: `\`${name}\` starts a shell that reads this input` });
  } else if (spec.all === 'code') {
    if (name === 'sg') {
      // `sg [-] GROUP [-c] COMMAND`: the group, and the optional `-` and `-c` around it, are not code.
      start += words[start]?.text === '-' ? 2 : 1;
      if (words[start]?.text === '-c') start += 1;
    }
    codeWords(words, start, to, report, { context: 'shell-script', reason: `\`${name}\` runs its arguments through a shell` }, name, `\`${name}\` runs a command line known only at run time`, words[from]!, true);
  } else {
    // env takes any `NAME=value` (quoted too, `BASH_FUNC_f%%` too) as a variable for the command.
    for (let variable = name === 'env' ? envName(words[start]) : null; start < to && variable !== null; variable = envName(words[start])) {
      readAssignment(words.map((word, at) => (at === start ? { ...word, assignment: variable } : word)), start, report, true);
      start += 1;
    }
    readFrom(words, start + Math.min(spec.positional ?? 0, to - start), to, report, name, hops + 1);
  }
}

function envName(word: CommandWord | undefined): string | null {
  const match = word && /^([^=]+)=/.exec(word.text ?? word.raw.replace(/['"\\]/g, ''));
  return match && !match[1]!.startsWith('-') ? match[1]! : null;
}

function readFind(words: readonly CommandWord[], from: number, to: number, report: CommandReport, hops: number): void {
  for (let i = from + 1; i < to; i += 1) {
    if (!FIND_EXEC.includes(words[i]!.text ?? '')) continue;
    let end = i + 1;
    while (end < to && words[end]!.text !== ';' && words[end]!.text !== '+') end += 1;
    readFrom(words, i + 1, end, report, 'find', hops + 1);
    i = end;
  }
}

/** Builtins with an option whose value is a variable name (or, `-C`, code); `names`: their operands are variable names too. */
const NAME_OPTIONS: Readonly<Record<string, { valued: string[]; option: string; names: boolean }>> = {
  read: { valued: ['-a', '-d', '-i', '-n', '-N', '-p', '-t', '-u'], option: '-a', names: true },
  mapfile: { valued: ['-d', '-n', '-O', '-s', '-u', '-C', '-c'], option: '-C', names: true },
  readarray: { valued: ['-d', '-n', '-O', '-s', '-u', '-C', '-c'], option: '-C', names: true },
  printf: { valued: ['-v'], option: '-v', names: false },
  wait: { valued: ['-p'], option: '-p', names: false },
};

function readBuiltin(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string): void {
  const at = words[from]!;
  const names = (start: number, end: number): void => {
    report.refuse(start, end, { context: 'variable-name', reason: `\`${name}\` takes this word as a variable name` });
    for (let i = start; i < end; i += 1) {
      const text = words[i]!.text;
      if (text === null) report.sink(`\`${name}\` takes a variable name known only at run time`, words[i]!);
      else report.taint(text);
    }
  };
  const spec = NAME_OPTIONS[name];
  if (spec) {
    const start = skipOptions(words, from + 1, to, spec.valued, (option, value, index) => {
      if (option !== spec.option || value === null) return;
      if (option === '-C') codeValue(value, index, words, report, `${name} -C`, 'evaluated');
      else names(index, index + 1);
    });
    if (spec.names) names(start, to);
    return;
  }
  switch (name) {
    case 'eval':
      return codeWords(words, from + 1, to, report, { context: 'evaluated', reason: '`eval` runs its arguments as shell code' }, 'eval', '`eval` runs code known only at run time', at, true);
    case 'trap': {
      const start = skipOptions(words, from + 1, to, []);
      report.refuse(start, to, { context: 'evaluated', reason: '`trap` runs its action as shell code' });
      if (start < to) codeValue(words[start]!, start, words, report, 'trap', 'evaluated');
      return;
    }
    case 'let':
      report.refuse(from + 1, to, { context: 'arithmetic', reason: '`let` evaluates its arguments as arithmetic' });
      if (from + 1 < to) report.sink('`let` evaluates its arguments as arithmetic, variables included', at);
      return;
    case 'declare':
    case 'typeset':
    case 'local':
    case 'export':
    case 'readonly':
      return readDeclaration(words, from, to, report, name);
    case 'unset':
      return names(from + 1, to);
    case 'getopts':
      if (from + 2 < to) names(from + 2, from + 3);
      return;
    case 'test':
    case '[':
      for (let i = from + 1; i + 1 < to; i += 1) if (words[i]!.text === '-v' || words[i]!.text === '-R') names(i + 1, i + 2);
      return;
    case 'alias':
      report.refuse(from + 1, to, { context: 'evaluated', reason: 'an alias is shell code that bash parses where it is used' });
      for (const word of words.slice(from + 1, to)) {
        if (word.text === null) report.sink('`alias` defines code known only at run time', word);
        else if (word.text.includes('=')) report.code(word.text.slice(word.text.indexOf('=') + 1), word, 'script', 'alias');
      }
      return;
    case 'shopt':
    case 'enable':
      if (words.slice(from + 1, to).some((word) => word.text === null)) report.uncertain(`\`${name}\` changes the shell with arguments known only at run time`, at);
      return;
    default: // complete, compgen, compopt, bind, fc
      codeWords(words, from + 1, to, report, { context: 'evaluated', reason: `\`${name}\` can run its arguments (word lists, commands) as shell code` }, null, `\`${name}\` with arguments known only at run time`, at, false);
  }
}

/** `declare`, `typeset`, `local`, `export`, `readonly`: attributes, and values bash evaluates because of them. */
function readDeclaration(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string): void {
  const flags = new Set<string>();
  const start = skipOptions(words, from + 1, to, [], (option) => flags.add(option));
  const attribute = flags.has('-i') ? 'integer' : flags.has('-n') ? 'reference' : flags.has('-a') || flags.has('-A') ? 'array' : null;
  if (flags.has('-f') || flags.has('-F')) return;
  for (let i = start; i < to; i += 1) {
    const word = words[i]!;
    const assigned = word.assignment;
    const varName = assigned ?? (word.text !== null && /^[A-Za-z_][A-Za-z0-9_]*$/.test(word.text) ? word.text : null);
    if (varName === null) {
      // `declare "$x"` or `declare "a[$i]=v"`: a name bash evaluates (its subscript too).
      report.refuse(i, i + 1, { context: 'variable-name', reason: `\`${name}\` takes this word as a variable name` });
      if (word.text === null) report.sink(`\`${name}\` takes a variable name known only at run time`, word);
      continue;
    }
    if (attribute) report.attribute(varName, attribute);
    if (assigned === null) continue;
    if (attribute) {
      const as = attribute === 'integer' ? 'arithmetic' : attribute === 'array' ? 'a compound array assignment' : 'a variable name';
      report.refuse(i, i + 1, { context: 'evaluated', reason: `\`${name} ${[...flags].join(' ')}\` evaluates the value as ${as}` });
      if (word.text === null) report.sink(`\`${name}\` gives a value known only at run time to a variable it evaluates`, word);
      continue;
    }
    readAssignment(words, i, report, true);
    // `declare a=$v` where `a` is an array in this text parses $v as a compound assignment.
    report.assigned(varName, i, name === 'declare' || name === 'typeset' || name === 'local');
  }
}
