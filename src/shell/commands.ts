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

type Kind =
  | { kind: 'shell' }
  | { kind: 'wrapper'; valued: string[]; code?: string[]; positional?: number; end?: string[]; all?: 'code' | 'remote' }
  | { kind: 'builtin' };

const shell = (): Kind => ({ kind: 'shell' });
const wrap = (valued: string[] = [], extra: Omit<Extract<Kind, { kind: 'wrapper' }>, 'kind' | 'valued'> = {}): Kind => ({ kind: 'wrapper', valued, ...extra });

/** Programs, by base name. */
const TABLE: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ...['sh', 'bash', 'rbash', 'dash', 'zsh', 'ksh', 'ksh93', 'mksh', 'pdksh', 'ash', 'yash', 'posh', 'lksh', 'oksh', 'loksh', 'fish', 'csh', 'tcsh'].map(
    (name): [string, Kind] => [name, shell()],
  ),
  ['command', wrap()],
  ['builtin', wrap()],
  ['exec', wrap(['-a'])],
  ['nohup', wrap()],
  ['time', wrap(['-f', '--format', '-o', '--output'])],
  ['env', wrap(['-u', '--unset', '-C', '--chdir', '-P', '--default-signal', '--ignore-signal', '--block-signal'], { code: ['-S', '--split-string'] })],
  ['nice', wrap(['-n', '--adjustment'])],
  ['ionice', wrap(['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'])],
  ['chrt', wrap([], { positional: 1 })],
  ['taskset', wrap([], { positional: 1 })],
  ['setsid', wrap()],
  ['timeout', wrap(['-s', '-k', '--signal', '--kill-after'], { positional: 1 })],
  ['stdbuf', wrap(['-i', '-o', '-e', '--input', '--output', '--error'])],
  ['xargs', wrap(['-I', '-n', '-P', '-d', '-s', '-L', '-a', '-E', '--max-args', '--max-procs', '--delimiter', '--arg-file', '--max-chars', '--max-lines', '--eof', '--process-slot-var'])],
  ['sudo', wrap(['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-R', '-T', '--user', '--group', '--chdir', '--prompt', '--host', '--role', '--type', '--close-from', '--other-user', '--chroot', '--command-timeout'], { code: ['-s', '-i', '--shell', '--login'] })],
  ['doas', wrap(['-u', '-C'], { code: ['-s'] })],
  ['pkexec', wrap(['--user'])],
  ['su', wrap(['-g', '-G', '-s', '-w', '--group', '--supp-group', '--shell', '--whitelist-environment'], { code: ['-c', '--command', '--session-command'], all: 'code' })],
  ['runuser', wrap(['-u', '-g', '-G', '-s', '-w', '--user', '--group', '--supp-group', '--shell'], { code: ['-c', '--command', '--session-command'] })],
  ['sg', wrap([], { all: 'code' })],
  ['unbuffer', wrap()],
  ['chronic', wrap()],
  ['fakeroot', wrap(['-l', '-s', '-i', '--lib', '--faked'])],
  ['chroot', wrap(['--userspec', '--groups'], { positional: 1 })],
  ['unshare', wrap(['--map-user', '--map-group', '--setuid', '--setgid', '-S', '-G', '-R', '-w', '--root', '--wd'])],
  ['nsenter', wrap(['-t', '-S', '-G', '-r', '-w', '--target', '--setuid', '--setgid', '--root', '--wd'])],
  ['strace', wrap(['-e', '-o', '-p', '-u', '-s', '-E', '-a', '-b', '-I', '-O', '-P', '-S', '-X'])],
  ['ltrace', wrap(['-e', '-o', '-p', '-u', '-s', '-a', '-n', '-l'])],
  ['flock', wrap(['-w', '-E', '--timeout', '--conflict-exit-code'], { code: ['-c', '--command'], positional: 1 })],
  ['script', wrap(['-E', '-I', '-O', '-B', '-T', '--echo', '--log-in', '--log-out', '--log-io', '--log-timing'], { code: ['-c', '--command'], all: 'code' })],
  ['watch', wrap(['-n', '-d', '-q', '--interval', '--differences'], { all: 'code' })],
  ['parallel', wrap([], { all: 'code' })],
  ['tmux', wrap([], { all: 'code' })],
  ['screen', wrap([], { all: 'code' })],
  ['ssh', wrap(['-b', '-c', '-D', '-E', '-e', '-F', '-I', '-i', '-J', '-L', '-l', '-m', '-O', '-o', '-p', '-Q', '-R', '-S', '-W', '-w', '-B', '-P'], { all: 'remote' })],
  ...['eval', 'trap', 'let', 'declare', 'typeset', 'local', 'export', 'readonly', 'read', 'unset', 'mapfile', 'readarray', 'printf', 'getopts', 'wait', 'test', '[', 'complete', 'compgen', 'compopt', 'bind', 'alias', 'fc', 'shopt', 'enable'].map(
    (name): [string, Kind] => [name, { kind: 'builtin' }],
  ),
]);

/** Shell variables whose value bash runs as code or expands as a prompt. */
const CODE_VARIABLES = /^(?:PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|MAILPATH|BASH_FUNC_.*|HISTTIMEFORMAT|TIMEFORMAT)$/;
/** Shell variables whose assignment bash evaluates as arithmetic. */
const ARITHMETIC_VARIABLES = new Set(['RANDOM', 'SRANDOM', 'OPTIND', 'HISTCMD', 'LINENO', 'SECONDS', 'BASH_ARGV0', 'COLUMNS', 'LINES', 'HISTSIZE', 'HISTFILESIZE', 'TMOUT']);
const SHELL_VALUED = new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file']);
const MAX_HOPS = 32;

const baseName = (text: string): string => text.slice(text.lastIndexOf('/') + 1);

export const isCodeVariable = (name: string): boolean => CODE_VARIABLES.test(name);
export const isArithmeticVariable = (name: string): boolean => ARITHMETIC_VARIABLES.has(name);

/** Read one simple command (its words in order, assignments and redirections' targets left out of nothing). */
export function readCommand(words: readonly CommandWord[], report: CommandReport): void {
  let index = 0;
  while (index < words.length && words[index]!.assignment !== null) {
    readAssignment(words, index, report, false);
    index += 1;
  }
  readFrom(words, index, words.length, report, undefined, 0);
}

function readAssignment(words: readonly CommandWord[], index: number, report: CommandReport, declaration: boolean): void {
  const word = words[index]!;
  const name = word.assignment as string;
  if (isCodeVariable(name)) {
    report.refuse(index, index + 1, { context: 'evaluated', reason: `bash runs or expands the value of \`${name}\` as code` });
    if (word.text === null) report.sink(`\`${name}\` is set from a value known only at run time`, word);
    else {
      const value = word.text.slice(word.text.indexOf('=') + 1);
      report.code(value, word, name.startsWith('BASH_FUNC_') || name === 'PROMPT_COMMAND' ? 'script' : 'prompt', name);
    }
    return;
  }
  if (word.text === null) report.taint(name);
  if (isArithmeticVariable(name)) {
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
    report.command(words.slice(from, to), via);
    return;
  }
  report.command(words.slice(from, to), via);
  if (hops >= MAX_HOPS) {
    report.uncertain(`more than ${MAX_HOPS} wrappers in one command`, first);
    return;
  }
  const name = baseName(first.text);
  if (name === 'busybox' || name === 'toybox') {
    readFrom(words, from + 1, to, report, name, hops + 1);
    return;
  }
  if (name === 'find') return readFind(words, from, to, report, hops);
  const entry = TABLE.get(name);
  if (!entry) return;
  if (entry.kind === 'shell') return readShellCommand(words, from, to, report, name);
  if (entry.kind === 'builtin') return readBuiltin(words, from, to, report, name, hops);
  return readWrapper(words, from, to, report, name, entry, hops);
}

/** Options of `name` from `index`: returns where its operands start, calling `onValue` for valued options. */
function skipOptions(
  words: readonly CommandWord[],
  index: number,
  to: number,
  valued: (option: string) => boolean,
  onOption: (option: string, value: CommandWord | string | null, at: number) => void,
): number {
  let i = index;
  while (i < to) {
    const word = words[i]!;
    // A dynamic word ends the options: the caller decides what an operand known only at run
    // time means (a builtin's operand, a wrapper's command: uncertain).
    if (word.text === null) return i;
    const text = word.text;
    if (text === '--') return i + 1;
    if (!text.startsWith('-') || text === '-') return i;
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const option = equals < 0 ? text : text.slice(0, equals);
      if (equals >= 0) onOption(option, text.slice(equals + 1), i);
      else if (valued(option)) {
        onOption(option, words[i + 1] ?? null, i + 1);
        i += 1;
      } else onOption(option, null, i);
      i += 1;
      continue;
    }
    let taken = false;
    for (let k = 1; k < text.length; k += 1) {
      const option = `-${text[k]}`;
      if (valued(option)) {
        const rest = text.slice(k + 1);
        if (rest) onOption(option, rest, i);
        else {
          onOption(option, words[i + 1] ?? null, i + 1);
          taken = true;
        }
        break;
      }
      onOption(option, null, i);
    }
    i += taken ? 2 : 1;
  }
  return i;
}

function codeValue(
  value: CommandWord | string | null,
  at: number,
  words: readonly CommandWord[],
  report: CommandReport,
  via: string,
  context: Evaluation['context'] = 'shell-script',
): void {
  if (value === null) return;
  const word = words[Math.min(at, words.length - 1)]!;
  report.refuse(at, at + 1, { context, reason: `\`${via}\` runs this word as shell code` });
  const text = typeof value === 'string' ? value : value.text;
  if (text === null) {
    report.uncertain(`the code \`${via}\` runs is known only at run time`, word);
    report.sink(`\`${via}\` runs code known only at run time`, word);
  } else report.code(text, word, 'script', via);
}

function readShellCommand(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string): void {
  let script = false;
  let stdin = false;
  const operands = skipOptions(
    words,
    from + 1,
    to,
    (option) => SHELL_VALUED.has(option),
    (option) => {
      if (option === '-c' || option === '--command') script = true;
      if (option === '-s' || option === '-i') stdin = true;
    },
  );
  if (operands < to && words[operands]!.text === null && !script) {
    // `bash "$x" ...`: the word could be `-c`, which would make the next word a script.
    report.refuse(operands, to, { context: 'uncertain', reason: `\`${name}\` gets an option or script file known only at run time` });
    report.uncertain(`\`${name}\` gets an option or script file known only at run time`, words[operands]!);
    return;
  }
  if (script) {
    if (operands < to) codeValue(words[operands]!, operands, words, report, `${name} -c`);
    return;
  }
  if (stdin || operands >= to) {
    report.input({ context: 'shell-script', reason: `\`${name}\` reads its script from this input` });
    report.uncertain(`\`${name}\` reads its script from its input`, words[from]!);
  }
}

function readWrapper(
  words: readonly CommandWord[],
  from: number,
  to: number,
  report: CommandReport,
  name: string,
  spec: Extract<Kind, { kind: 'wrapper' }>,
  hops: number,
): void {
  let codeFound = false;
  const valued = new Set([...spec.valued, ...(spec.code ?? []).filter((option) => option !== '-s' && option !== '-i' && option !== '--shell' && option !== '--login')]);
  let start = skipOptions(
    words,
    from + 1,
    to,
    (option) => valued.has(option),
    (option, value, at) => {
      if (!(spec.code ?? []).includes(option)) return;
      codeFound = true;
      if (value !== null) codeValue(value, at, words, report, `${name} ${option}`);
    },
  );
  if (spec.all === 'remote') {
    // The host, then the command line the remote shell parses (or its input).
    report.refuse(start + 1, to, { context: 'remote-command', reason: 'ssh hands its command line to the remote shell, which parses it' });
    report.input({ context: 'remote-command', reason: 'ssh may hand its input to the remote shell, which parses it' });
    if (start + 1 < to) report.uncertain('ssh runs a command on another host, which the policy cannot see', words[from]!);
    return;
  }
  if (codeFound && (name === 'sudo' || name === 'doas')) {
    // `sudo -s CMD` hands the words to a shell as one command line.
    const joined = words.slice(start, to);
    report.refuse(start, to, { context: 'shell-script', reason: `\`${name} -s\` / \`-i\` hands its command to a shell` });
    if (joined.some((word) => word.text === null)) report.sink(`\`${name} -s\` runs a command line known only at run time`, words[from]!);
    else if (joined.length > 0) report.code(joined.map((word) => word.text).join(' '), words[start]!, 'script', name);
    return;
  }
  if (codeFound) return;
  if (spec.all === 'code') {
    if (name === 'su' || name === 'script') {
      // `su USER` / `script FILE` without -c: an interactive shell reading its input.
      report.input({ context: 'shell-script', reason: `\`${name}\` starts a shell that reads this input` });
      return;
    }
    if (name === 'sg') {
      // `sg [-] GROUP [-c] COMMAND`: the group, and the optional `-` and `-c` around it, are not code.
      if (words[start]?.text === '-') start += 1;
      start += 1;
      if (words[start]?.text === '-c') start += 1;
    }
    const operands = words.slice(start, to);
    report.refuse(start, to, { context: 'shell-script', reason: `\`${name}\` runs its arguments through a shell` });
    if (operands.some((word) => word.text === null)) {
      report.sink(`\`${name}\` runs a command line known only at run time`, words[from]!);
      report.uncertain(`\`${name}\` runs a command line known only at run time`, words[from]!);
    } else if (operands.length > 0) report.code(operands.map((word) => word.text).join(' '), words[start]!, 'script', name);
    return;
  }
  if (name === 'env') {
    // env takes any `NAME=value` (quoted too, `BASH_FUNC_f%%` too) as a variable for the command.
    for (let name = envName(words[start]); start < to && name !== null; name = envName(words[start])) {
      readAssignment(words.map((word, at) => (at === start ? { ...word, assignment: name } : word)), start, report, true);
      start += 1;
    }
  }
  start += Math.min(spec.positional ?? 0, to - start);
  readFrom(words, start, to, report, name, hops + 1);
}

function envName(word: CommandWord | undefined): string | null {
  if (!word) return null;
  const match = /^([^=]+)=/.exec(word.text ?? word.raw.replace(/['"\\]/g, ''));
  return match && !match[1]!.startsWith('-') ? match[1]! : null;
}

function readFind(words: readonly CommandWord[], from: number, to: number, report: CommandReport, hops: number): void {
  for (let i = from + 1; i < to; i += 1) {
    const text = words[i]!.text;
    if (text === null) continue;
    if (text === '-exec' || text === '-execdir' || text === '-ok' || text === '-okdir') {
      let end = i + 1;
      while (end < to && words[end]!.text !== ';' && words[end]!.text !== '+') end += 1;
      readFrom(words, i + 1, end, report, 'find', hops + 1);
      i = end;
    }
  }
}

function readBuiltin(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string, hops: number): void {
  const at = words[from]!;
  const operandsOf = (valued: string[], onOption: (option: string, value: CommandWord | string | null, at: number) => void = () => {}): number => {
    return skipOptions(words, from + 1, to, (option) => valued.includes(option), onOption);
  };
  const names = (start: number, end: number, reason: string): void => {
    report.refuse(start, end, { context: 'variable-name', reason });
    for (let i = start; i < end; i += 1) {
      const text = words[i]!.text;
      if (text === null) report.sink(`\`${name}\` takes a variable name known only at run time`, words[i]!);
      else report.taint(text);
    }
  };
  switch (name) {
    case 'eval': {
      const operands = words.slice(from + 1, to);
      report.refuse(from + 1, to, { context: 'evaluated', reason: '`eval` runs its arguments as shell code' });
      if (operands.some((word) => word.text === null)) {
        report.sink('`eval` runs code known only at run time', at);
        report.uncertain('`eval` runs code known only at run time', at);
      } else if (operands.length > 0) report.code(operands.map((word) => word.text).join(' '), words[from + 1]!, 'script', 'eval');
      return;
    }
    case 'trap': {
      const start = operandsOf([]);
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
    case 'readonly': {
      const flags = new Set<string>();
      const start = operandsOf([], (option) => flags.add(option));
      const attribute = flags.has('-i') ? 'integer' : flags.has('-n') ? 'reference' : flags.has('-a') || flags.has('-A') ? 'array' : null;
      if (flags.has('-f') || flags.has('-F')) return;
      for (let i = start; i < to; i += 1) {
        const word = words[i]!;
        const assigned = word.assignment;
        const plainName = word.text !== null && /^[A-Za-z_][A-Za-z0-9_]*$/.test(word.text) ? word.text : null;
        const varName = assigned ?? plainName;
        if (varName === null) {
          // `declare "$x"` or `declare "a[$i]=v"`: a name bash evaluates (its subscript too).
          report.refuse(i, i + 1, { context: 'variable-name', reason: `\`${name}\` takes this word as a variable name` });
          if (word.text === null) report.sink(`\`${name}\` takes a variable name known only at run time`, word);
          continue;
        }
        if (attribute) report.attribute(varName, attribute);
        if (assigned === null) continue;
        if (attribute) {
          report.refuse(i, i + 1, {
            context: 'evaluated',
            reason: `\`${name} ${[...flags].join(' ')}\` evaluates the value as ${attribute === 'integer' ? 'arithmetic' : attribute === 'array' ? 'a compound array assignment' : 'a variable name'}`,
          });
          if (word.text === null) report.sink(`\`${name}\` gives a value known only at run time to a variable it evaluates`, word);
          continue;
        }
        readAssignment(words, i, report, true);
        // `declare a=$v` where `a` is an array in this text parses $v as a compound assignment.
        report.assigned(varName, i, name === 'declare' || name === 'typeset' || name === 'local');
      }
      return;
    }
    case 'read': {
      const start = operandsOf(['-a', '-d', '-i', '-n', '-N', '-p', '-t', '-u'], (option, value, index) => {
        if (option === '-a' && value !== null) names(index, index + 1, '`read -a` takes this word as a variable name');
      });
      if (start >= 0) names(start, to, '`read` takes its arguments as variable names');
      return;
    }
    case 'unset':
      names(from + 1, to, '`unset` takes its arguments as variable names');
      return;
    case 'mapfile':
    case 'readarray': {
      const start = operandsOf(['-d', '-n', '-O', '-s', '-u', '-C', '-c'], (option, value, index) => {
        if (option === '-C' && value !== null) codeValue(value, index, words, report, `${name} -C`, 'evaluated');
      });
      if (start >= 0) names(start, to, `\`${name}\` takes this word as a variable name`);
      return;
    }
    case 'printf': {
      operandsOf(['-v'], (option, value, index) => {
        if (option === '-v' && value !== null) names(index, index + 1, '`printf -v` takes this word as a variable name');
      });
      return;
    }
    case 'getopts':
      if (from + 2 < to) names(from + 2, from + 3, '`getopts` takes this word as a variable name');
      return;
    case 'wait':
      operandsOf(['-p'], (option, value, index) => {
        if (option === '-p' && value !== null) names(index, index + 1, '`wait -p` takes this word as a variable name');
      });
      return;
    case 'test':
    case '[':
      for (let i = from + 1; i < to; i += 1) {
        const text = words[i]!.text;
        if ((text === '-v' || text === '-R') && i + 1 < to) names(i + 1, i + 2, `\`${name} ${text}\` takes a variable name`);
      }
      return;
    case 'complete':
    case 'compgen':
    case 'compopt':
    case 'bind':
    case 'fc':
      report.refuse(from + 1, to, { context: 'evaluated', reason: `\`${name}\` can run its arguments (word lists, commands) as shell code` });
      if (words.slice(from + 1, to).some((word) => word.text === null)) report.sink(`\`${name}\` with arguments known only at run time`, at);
      return;
    case 'alias':
      report.refuse(from + 1, to, { context: 'evaluated', reason: 'an alias is shell code that bash parses where it is used' });
      for (let i = from + 1; i < to; i += 1) {
        const word = words[i]!;
        if (word.text === null) report.sink('`alias` defines code known only at run time', word);
        else if (word.text.includes('=')) report.code(word.text.slice(word.text.indexOf('=') + 1), word, 'script', 'alias');
      }
      return;
    case 'shopt':
    case 'enable':
      if (words.slice(from + 1, to).some((word) => word.text === null)) report.uncertain(`\`${name}\` changes the shell with arguments known only at run time`, at);
      return;
    case 'command':
    case 'builtin':
      return readFrom(words, from + 1, to, report, name, hops + 1);
  }
}
