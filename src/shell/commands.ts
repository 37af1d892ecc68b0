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
 *
 * Wrappers are read as their own option parsers read their arguments (getopt's clusters,
 * attached and separate values, long options and their abbreviations, options after operands
 * where GNU getopt permutes them), so that no spelling moves the wrapped command out of sight.
 * Programs that paste data into a command line a shell runs (`xargs -I{} sh -c '...{}...'`,
 * `find -exec sh -c '...{}...'`, `parallel`) are read with that data as a word known only at
 * run time: a script holding it is code known only at run time.
 *
 * Every variable a command sets (a leading or lone `NAME=value`, `export`, `declare`, `env
 * NAME=value`, `read`, `printf -v`, ...) is reported, so that a policy can refuse a text that
 * points a program at other code or configuration (`PATH=. git`).
 *
 * A command that reads code from its standard input is reported too (`input`): a shell without a
 * script (`sh`, `bash -s`, `bash /dev/stdin`, `sudo -s`, `su`), `source /dev/stdin`, an
 * interpreter without a program (`python3`, `python3 -`, `node`, `perl`, `ruby`, `php`, `lua -`),
 * `xargs` handing its items to one of these. The reader refuses a token in a heredoc or
 * here-string it reads, and a token anywhere when such a command reads a pipe or another input a
 * process of the run writes (read.ts). A script or program that a process substitution writes
 * (`bash <(...)`, `source <(...)`) is code made at run time: a sink. Other programs that run
 * their input as commands (`awk '{system($0)}'`, `sed e`, `sqlite3`, `docker exec -i c sh`, ...)
 * and wrappers without an option table here (`gosu`, `setpriv`, ...) are in input-programs.ts.
 *
 * One file, though long, because it is one recursive reading rather than a table: the tables
 * (TABLE, INTERPRETERS, NAME_OPTIONS) are about a hundred lines, the rest reads each entry's
 * arguments, and every wrapper and form (`env -S`, `xargs`, `su`, `flock`, `find -exec`) hands
 * the words it finds back to the one dispatcher (readFrom) or to the shell reader, all of them
 * marking code with the same helpers (codeValue, codeWords, readAssignment). That no spelling
 * moves a command out of sight rests on all of them doing so alike. Split by family, each family
 * would import the dispatcher and the dispatcher each family, and that argument would have to be
 * checked across files.
 */
import { inputProgram, isStdinPath } from './input-programs';
import { hazardOf, isEnvironPath, type OptionHazard } from './option-hazards';

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
  /**
   * The command's standard input (a heredoc or here-string) is parsed as code. `piped`: the
   * command reads code from whatever its input is (a pipe too); false for ssh with a command,
   * whose input goes to that command.
   */
  input(evaluation: Evaluation, piped?: boolean): void;
  /** A token in the value of this assignment is refused if NAME turns out integer or array. */
  assigned(name: string, word: number, declaration: boolean): void;
  attribute(name: string, kind: 'integer' | 'array' | 'reference'): void;
  /** NAME may hold a value known only at run time (a reference's value among them). */
  taint(name: string): void;
  /** The command sets (or exports, or unsets) NAME; null: a variable known only at run time. */
  variable(name: string | null, at: CommandWord, how: string): void;
}

/**
 * A program that runs another command, as its option parser reads its arguments:
 * `valued` options take a value (the rest of the word or the next word), `optional` ones only an
 * attached value (`-dX`, `--name=X`), `code` ones a shell script, `shell` flags hand the operands
 * to a shell as one command line (`sudo -s`), and `flags` are the long options that take no value
 * (listed so that an abbreviation such as `--comm` resolves as getopt_long resolves it).
 * `permute`: the GNU getopt default, options may follow operands until `--` (su, runuser,
 * script); otherwise options end at the first operand. `positional`: operands before the command.
 * `all`: every operand is code (run through a shell) or a remote command line. `form`: programs
 * whose operands need their own reading (below).
 */
interface Wrapper {
  readonly kind: 'wrapper';
  readonly valued: readonly string[];
  readonly optional?: readonly string[];
  readonly code?: readonly string[];
  readonly shell?: readonly string[];
  readonly flags?: readonly string[];
  readonly permute?: boolean;
  readonly positional?: number;
  readonly all?: 'code' | 'remote';
  /** `NAME=value` words before the command set variables for it (sudo). */
  readonly assignments?: boolean;
  readonly form?: 'env' | 'xargs' | 'su' | 'script' | 'flock' | 'watch' | 'ssh' | 'parallel' | 'shell-when-empty';
}
type Kind = { kind: 'shell' } | Wrapper | { kind: 'builtin' };

/**
 * An interpreter that runs a program from its standard input when it is given none (or `-`, or
 * `/dev/stdin`): `code` options give the program (`-c`, `-e`, `-m`) or end the run (`--version`),
 * `valued` ones take a value (attached, or the next word), `rest` letters take the rest of their
 * word (`perl -Mstrict`). Read as its option parser reads its arguments.
 */
interface Interpreter {
  readonly name: string;
  readonly code: readonly string[];
  readonly valued: readonly string[];
  readonly rest?: readonly string[];
  /** `lua -i`, `python3 -i`: interactive after the program, reading the input as code. */
  readonly interactive?: readonly string[];
  /** Options that end the option list (`python3 -c CODE ARGS`: ARGS are the program's). */
  readonly ends?: readonly string[];
  /** Valued options whose value may be code itself (node's `--import data:...`). */
  readonly codeValued?: readonly string[];
}

const INTERPRETERS: ReadonlyArray<readonly [RegExp, Interpreter]> = [
  [/^(?:python|pypy|ipython|bpython|ptpython)[0-9.]*$/, { name: 'python', code: ['-c', '-m', '-h', '-?', '--help', '-V', '--version', '--help-env', '--help-xoptions', '--help-all'], valued: ['-W', '-X', '--check-hash-based-pycs'], interactive: ['-i'], ends: ['-c', '-m'] }],
  [/^(?:node|nodejs)$/, {
    name: 'node',
    code: ['-e', '--eval', '-p', '--print', '-pe', '--test', '-c', '--check', '-v', '--version', '-h', '--help', '--run', '--v8-options'],
    valued: ['-r', '--require', '--import', '--loader', '--experimental-loader', '-C', '--conditions', '--input-type', '--env-file', '--title', '--inspect-port', '--stack-trace-limit', '--redirect-warnings', '--max-http-header-size', '--openssl-config', '--icu-data-dir', '--diagnostic-dir', '--report-dir', '--watch-path', '--experimental-policy', '--policy-integrity', '--secure-heap', '--secure-heap-min', '--unhandled-rejections', '--dns-result-order', '--disable-warning', '--heapsnapshot-signal', '--trace-event-categories', '--cpu-prof-dir', '--heap-prof-dir'],
    interactive: ['-i', '--interactive'],
    codeValued: ['--import', '--loader', '--experimental-loader'],
  }],
  [/^perl[0-9.]*(?:-[A-Za-z0-9_.-]+)?$/, { name: 'perl', code: ['-e', '-E', '-v', '-h'], valued: ['-I'], rest: ['-d', '-D', '-F', '-i', '-l', '-M', '-m', '-x', '-0', '-C', '-V'], interactive: ['-d'] }],
  [/^ruby[0-9.]*$/, { name: 'ruby', code: ['-e', '-v', '--version', '-h', '--help', '-c', '-y', '--yydebug', '--dump'], valued: ['-I', '-r', '-C', '-E', '--encoding', '--external-encoding', '--internal-encoding', '--enable', '--disable'], rest: ['-F', '-x', '-W', '-T', '-0', '-K', '-l'] }],
  [/^php[0-9.]*$/, { name: 'php', code: ['-r', '-R', '-B', '-E', '-f', '-F', '-h', '-v', '-i', '-m', '-l', '-s', '-w', '--rf', '--rc', '--re', '--rz', '--ri'], valued: ['-c', '-d', '-z', '-t'], interactive: ['-a'] }],
  [/^(?:lua[0-9.]*|luajit)$/, { name: 'lua', code: ['-e', '-v'], valued: ['-l', '-j', '-O', '-b'], interactive: ['-i'] }],
  [/^(?:tclsh|wish|jimsh)[0-9.]*$/, { name: 'tclsh', code: [], valued: ['-encoding'] }],
];

const shell = (): Kind => ({ kind: 'shell' });
const wrap = (valued: string[] = [], extra: Omit<Wrapper, 'kind' | 'valued'> = {}): Kind => ({ kind: 'wrapper', valued, ...extra });

const SU_OPTIONS: Omit<Wrapper, 'kind' | 'valued'> = {
  code: ['-c', '--command', '--session-command'],
  flags: ['--fast', '--login', '--preserve-environment', '--pty', '--help', '--version'],
  permute: true,
  form: 'su',
};
const SU_VALUED = ['-g', '-G', '-s', '-w', '--group', '--supp-group', '--shell', '--whitelist-environment'];

/** Programs, by base name. */
const TABLE: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ...['sh', 'bash', 'rbash', 'dash', 'zsh', 'ksh', 'ksh93', 'mksh', 'pdksh', 'ash', 'hush', 'yash', 'posh', 'lksh', 'oksh', 'loksh', 'fish', 'csh', 'tcsh'].map((name): [string, Kind] => [name, shell()]),
  ...['command', 'builtin', 'unbuffer', 'chronic'].map((name): [string, Kind] => [name, wrap()]),
  ['nohup', wrap([], { flags: ['--help', '--version'] })],
  ['setsid', wrap([], { flags: ['--ctty', '--fork', '--wait', '--help', '--version'] })],
  ['chrt', wrap(['-T', '-P', '-D', '--sched-runtime', '--sched-period', '--sched-deadline'], { positional: 1 })],
  ['taskset', wrap([], { positional: 1 })],
  ...['parallel', 'sem'].map((name): [string, Kind] => [name, wrap([], { form: 'parallel' })]),
  ...['tmux', 'screen'].map((name): [string, Kind] => [name, wrap([], { all: 'code' })]),
  ['exec', wrap(['-a'])],
  ['time', wrap(['-f', '--format', '-o', '--output'])],
  ['env', wrap(['-u', '--unset', '-C', '--chdir', '-a', '--argv0'], {
    code: ['-S', '--split-string'],
    optional: ['--block-signal', '--default-signal', '--ignore-signal'],
    flags: ['--ignore-environment', '--null', '--list-signal-handling', '--debug', '--help', '--version'],
    form: 'env',
  })],
  ['nice', wrap(['-n', '--adjustment'], { flags: ['--help', '--version'] })],
  ['ionice', wrap(['-c', '-n', '-p', '-P', '-u', '--class', '--classdata', '--pid', '--pgid', '--uid'], { flags: ['--ignore', '--help', '--version'] })],
  ['timeout', wrap(['-s', '-k', '--signal', '--kill-after'], { positional: 1, flags: ['--preserve-status', '--foreground', '--verbose', '--help', '--version'] })],
  ['stdbuf', wrap(['-i', '-o', '-e', '--input', '--output', '--error'], { flags: ['--help', '--version'] })],
  ['xargs', wrap(['-a', '-d', '-E', '-I', '-L', '-n', '-P', '-s', '--arg-file', '--delimiter', '--max-lines', '--max-args', '--max-procs', '--max-chars', '--process-slot-var'], {
    optional: ['-i', '-e', '-l', '--replace', '--eof'],
    flags: ['--null', '--open-tty', '--interactive', '--no-run-if-empty', '--show-limits', '--verbose', '--exit', '--help', '--version'],
    form: 'xargs',
  })],
  ['sudo', wrap(['-a', '-C', '-c', '-D', '-g', '-p', '-R', '-r', '-T', '-t', '-U', '-u', '--auth-type', '--close-from', '--login-class', '--chdir', '--group', '--host', '--prompt', '--chroot', '--role', '--command-timeout', '--type', '--other-user', '--user'], {
    optional: ['-h', '--preserve-env'],
    shell: ['-s', '-i', '--shell', '--login'],
    assignments: true,
    flags: ['--askpass', '--background', '--bell', '--edit', '--help', '--set-home', '--remove-timestamp', '--reset-timestamp', '--list', '--non-interactive', '--preserve-groups', '--stdin', '--validate', '--version'],
  })],
  ['doas', wrap(['-a', '-C', '-u'], { shell: ['-s'] })],
  ['pkexec', wrap(['--user'], { flags: ['--disable-internal-agent', '--keep-cwd', '--help', '--version'] })],
  ['su', wrap(SU_VALUED, SU_OPTIONS)],
  ['runuser', wrap([...SU_VALUED, '-u', '--user'], SU_OPTIONS)],
  ['sg', wrap([], { all: 'code' })],
  ['fakeroot', wrap(['-l', '-s', '-i', '-b', '--lib', '--faked', '--fd-base'])],
  ['chroot', wrap(['--userspec', '--groups'], { positional: 1, flags: ['--skip-chdir', '--help', '--version'], form: 'shell-when-empty' })],
  ['unshare', wrap(['-R', '-w', '-S', '-G', '--map-user', '--map-group', '--map-users', '--map-groups', '--propagation', '--setgroups', '--root', '--wd', '--setuid', '--setgid', '--monotonic', '--boottime'], {
    optional: ['-m', '-u', '-i', '-n', '-p', '-U', '-C', '-T', '--mount', '--uts', '--ipc', '--net', '--pid', '--user', '--cgroup', '--time', '--kill-child', '--mount-proc', '--load-interp'],
    flags: ['--fork', '--map-root-user', '--map-current-user', '--map-auto', '--keep-caps', '--help', '--version'],
    form: 'shell-when-empty',
  })],
  // (`-r`/`--root` and `-w`/`--wd` take a value only attached to them: `-r/dir`, `--wd=dir`.)
  ['nsenter', wrap(['-t', '-S', '-G', '-W', '--target', '--setuid', '--setgid', '--wdns'])],
  // strace's options that require a value (getopt_long's required_argument), short and long.
  ['strace', wrap(['-e', '-o', '-p', '-u', '-s', '-E', '-a', '-b', '-I', '-O', '-P', '-S', '-U', '-X',
    '--columns', '--detach-on', '--env', '--interruptible', '--kvm', '--output', '--summary-syscall-overhead', '--attach', '--trace-path', '--string-limit',
    '--summary-sort-by', '--user', '--summary-columns', '--argv0', '--const-print-style', '--trace', '--trace-fds', '--signal', '--status', '--abbrev',
    '--verbose', '--raw', '--read', '--write', '--fault', '--inject'])],
  ['ltrace', wrap(['-e', '-o', '-p', '-u', '-s', '-a', '-n', '-l'])],
  ['flock', wrap(['-w', '-E', '--timeout', '--wait', '--conflict-exit-code'], {
    code: ['-c', '--command'],
    flags: ['--shared', '--exclusive', '--unlock', '--nonblock', '--nb', '--close', '--no-fork', '--verbose', '--help', '--version'],
    form: 'flock',
  })],
  ['script', wrap(['-E', '-I', '-O', '-B', '-T', '-m', '-o', '--echo', '--log-in', '--log-out', '--log-io', '--log-timing', '--logging-format', '--output-limit'], {
    code: ['-c', '--command'],
    optional: ['-t', '--timing'],
    flags: ['--append', '--return', '--flush', '--force', '--quiet', '--help', '--version'],
    permute: true,
    form: 'script',
  })],
  ['watch', wrap(['-n', '-q', '--interval', '--equexit'], {
    optional: ['-d', '--differences'],
    flags: ['--beep', '--color', '--no-color', '--errexit', '--chgexit', '--precise', '--no-title', '--no-wrap', '--exec', '--help', '--version'],
    form: 'watch',
  })],
  ['ssh', wrap(['-B', '-b', '-c', '-D', '-E', '-e', '-F', '-I', '-i', '-J', '-L', '-l', '-m', '-O', '-o', '-P', '-p', '-Q', '-R', '-S', '-W', '-w'], { all: 'remote', form: 'ssh' })],
  ...['eval', 'trap', 'let', 'declare', 'typeset', 'local', 'export', 'readonly', 'read', 'unset', 'mapfile', 'readarray', 'printf', 'getopts', 'wait', 'test', '[', 'complete', 'compgen', 'compopt', 'bind', 'alias', 'hash', 'history', 'set', 'fc', 'shopt', 'enable', 'source', '.'].map((name): [string, Kind] => [name, { kind: 'builtin' }]),
]);

/** Python modules run with `-m` that read statements from their input (consoles and debuggers). */
const INTERACTIVE_MODULES = new Set(['code', 'asyncio', 'pdb', 'idlelib', 'idlelib.idle', 'IPython', 'ptpython', 'bpython']);
/** Python modules run with `-m` that run a script they are given by path (`-m cProfile /dev/stdin`). */
const SCRIPT_MODULES = new Set(['cProfile', 'profile', 'trace', 'runpy', 'pdb', 'timeit', 'tracemalloc', 'pickle', 'doctest', 'unittest', 'pydoc']);
/**
 * Options of programs that hand their value to a shell (`tar --to-command=`, socat's `SYSTEM:`,
 * `git -c alias.x=!...`): a reference in such a word is run as code.
 */

/** Shell variables whose value bash runs as code or expands as a prompt. */
export const CODE_VARIABLES = /^(?:PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|MAILPATH|BASH_FUNC_.*|HISTTIMEFORMAT|TIMEFORMAT|GIT_SSH_COMMAND|GIT_SSH|GIT_EDITOR|GIT_SEQUENCE_EDITOR|GIT_PAGER|GIT_EXTERNAL_DIFF|GIT_ASKPASS|GIT_PROXY_COMMAND|GIT_CONFIG_VALUE_[0-9]+|GIT_CONFIG_PARAMETERS|[A-Z_]*EDITOR|VISUAL|[A-Z_]*PAGER|[A-Z_]*ASKPASS|LESSOPEN|LESSCLOSE|LESS|LESSKEYIN|BROWSER|RSYNC_RSH|CVS_RSH|FCEDIT|MAKEFLAGS|GNUMAKEFLAGS|MFLAGS|TAR_OPTIONS|ZIPOPT|MANOPT|NODE_OPTIONS|PERL5OPT|PERL5DB|RUBYOPT|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|[Nn][Pp][Mm]_[Cc][Oo][Nn][Ff][Ii][Gg]_.*|GIT_ALLOW_PROTOCOL|VIMINIT|GVIMINIT|EXINIT|ZIP|SHELL|CC|CXX|CPP|LD|AR|AS|MAKE|PKG_CONFIG|CFLAGS|CXXFLAGS|CPPFLAGS|LDFLAGS|LDLIBS|LOADLIBES|FC|FFLAGS|YACC|LEX|RM|CARGO_[A-Z0-9_]*|RUSTFLAGS|RUSTDOCFLAGS|RUSTC|RUSTC_WRAPPER|RUSTC_WORKSPACE_WRAPPER|RUSTDOC|CMAKE_[A-Z_]*LAUNCHER|CMAKE_[A-Z_]*COMPILER|CMAKE_[A-Z_]*FLAGS|CMAKE_MAKE_PROGRAM)$/;
/** Variables that name a file a program reads as code or as configuration that can run code. */
const CODE_FILE_VARIABLES = /^(?:LESSKEYIN|LESSKEYIN_SYSTEM|LESSKEY|LESSKEY_SYSTEM|[Nn][Pp][Mm]_[Cc][Oo][Nn][Ff][Ii][Gg]_(?:[Uu][Ss][Ee][Rr]|[Gg][Ll][Oo][Bb][Aa][Ll])[Cc][Oo][Nn][Ff][Ii][Gg]|GIT_CONFIG|GIT_CONFIG_GLOBAL|GIT_CONFIG_SYSTEM|INPUTRC|PYTHONSTARTUP|WGETRC|MYVIMRC|MAKEFILES|KUBECONFIG)$/;
/** Shell variables whose assignment bash evaluates as arithmetic. */
export const ARITHMETIC_VARIABLES = new Set(['RANDOM', 'SRANDOM', 'OPTIND', 'HISTCMD', 'LINENO', 'SECONDS', 'BASH_ARGV0', 'COLUMNS', 'LINES', 'HISTSIZE', 'HISTFILESIZE', 'TMOUT']);
const SHELL_VALUED = ['-o', '+o', '-O', '+O', '--rcfile', '--init-file'];
const FIND_EXEC = ['-exec', '-execdir', '-ok', '-okdir'];
const MAX_HOPS = 32;

const baseName = (text: string): string => text.slice(text.lastIndexOf('/') + 1);

/** `a[V]`, `a[$i]`: a name whose subscript (of an indexed array) bash evaluates as arithmetic. */
const evaluatesSubscript = (text: string): boolean => {
  const open = text.indexOf('[');
  return open >= 0 && /[A-Za-z_$`]/.test(text.slice(open + 1));
};

/** A word that is (or holds) a process substitution: the file it names is written at run time. */
const isProcessSubstitution = (word: CommandWord): boolean => word.text === null && /[<>]\(/.test(word.raw);

/**
 * The script or program file `name` runs is `word`: its standard input (`-`, `/dev/stdin`,
 * `/dev/fd/N`), or code a process substitution writes at run time (a sink). True when the
 * command reads code from its input.
 */
function readsScriptFrom(word: CommandWord, name: string, report: CommandReport, evaluation: Evaluation): boolean {
  if (isProcessSubstitution(word)) {
    report.sink(`\`${name}\` runs code that a process substitution writes at run time`, word);
    return false;
  }
  // `sh /proc/self/environ`: every value of the run is in its environment.
  if (word.text !== null && isEnvironPath(word.text)) {
    report.sink(`\`${name}\` runs a process's environment, which holds every value of the run`, word);
    return false;
  }
  if (word.text !== null && !isStdinPath(word.text)) return false;
  report.input(evaluation);
  return true;
}

/** Read one simple command (its words in order, assignments and redirections' targets left out of nothing). */
export function readCommand(words: readonly CommandWord[], report: CommandReport): void {
  let index = 0;
  for (; index < words.length && words[index].assignment !== null; index += 1) readAssignment(words, index, report, false, 'assignment');
  readFrom(words, index, words.length, report, undefined, 0);
}

function readAssignment(words: readonly CommandWord[], index: number, report: CommandReport, declaration: boolean, how: string): void {
  const word = words[index];
  const name = word.assignment as string;
  report.variable(name, word, how);
  // `y[0]=1` makes y an array: a later `declare y=...` parses its value as a compound assignment.
  if (/^[A-Za-z_][A-Za-z0-9_]*\[/.test(word.raw)) report.attribute(name, 'array');
  // Variables that name a file a program reads as code or configuration: a descriptor path (or a
  // value known only at run time) makes the text's own input that code (`LESSKEYIN=/dev/stdin less`).
  if (CODE_FILE_VARIABLES.test(name)) {
    const value = word.text === null ? null : word.text.slice(word.text.indexOf('=') + 1);
    if (value === null || isStdinPath(value) || isEnvironPath(value)) report.sink(`\`${name}\` names a file of code or configuration that may be an input of the text`, word);
  }
  // `GIT_ALLOW_PROTOCOL=ext`: a git URL (`ext::sh -c ...`) becomes a command.
  if (name === 'GIT_ALLOW_PROTOCOL') report.sink('`GIT_ALLOW_PROTOCOL` may let git run a URL as a command (`ext::`)', word);
  if (CODE_VARIABLES.test(name)) {
    report.refuse(index, index + 1, { context: 'evaluated', reason: `bash runs or expands the value of \`${name}\` as code` });
    // A file a shell runs at start: it may be the text's own input (`BASH_ENV=/dev/stdin bash -c :`).
    if (name === 'BASH_ENV' || name === 'ENV') report.sink(`\`${name}\` names a file a shell runs at start, which may be an input the text writes`, word);
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
  const first = words[from];
  if (first.text === null) {
    report.uncertain('the command name is known only at run time', first);
    report.sink('a command whose name is known only at run time could be `eval` or a shell', first);
    report.refuse(from, to, { context: 'uncertain', reason: 'the command name is known only at run time' });
  }
  report.command(words.slice(from, to), via);
  if (first.text === null) return;
  if (hops >= MAX_HOPS) return tooManyHops(words, from, to, report);
  // `/proc/self/exe` (and `/proc/PID/exe`) run by bash is bash itself.
  const name = /^\/proc\/[^/]+\/exe$/.test(first.text) ? 'bash' : baseName(first.text);
  if (name === 'busybox' || name === 'toybox') return readFrom(words, from + 1, to, report, name, hops + 1);
  if (name === 'find') return readFind(words, from, to, report, hops);
  const interpreter = INTERPRETERS.find(([pattern]) => pattern.test(name));
  if (interpreter) return readInterpreter(words, from, to, report, name, interpreter[1]);
  // `/usr/lib/git-core/git-clone`: git with its subcommand.
  const gitProgram = /^git-([a-z][a-z0-9-]*)$/.exec(name);
  const hazard = hazardOf(gitProgram ? 'git' : name);
  if (hazard) readOptionHazards(words, from, to, report, name, hazard, gitProgram?.[1]);
  const started = startedCommand(words, from, to, name);
  if (started !== null) return started < 0 ? unsureFrom(words, -started - 1, to, report, name) : readFrom(words, started, to, report, name, hops + 1);
  const program = inputProgram(words, from, to, name);
  if (program && 'command' in program) return readFrom(words, program.command, to, report, name, hops + 1);
  if (program && 'shellAt' in program) return readShellCommand(words, program.shellAt, to, report, `${name} --`);
  if (program && 'unsure' in program) return unsureFrom(words, program.unsure, to, report, name);
  if (program) report.input({ context: 'evaluated', reason: program.reason });
  if (name === 'jobs') return readJobs(words, from, to, report, hops);
  const entry = TABLE.get(name);
  if (!entry) return;
  if (entry.kind === 'shell') return readShellCommand(words, from, to, report, name);
  if (entry.kind === 'builtin') return readBuiltin(words, from, to, report, name);
  return readWrapper(words, from, to, report, name, entry, hops);
}

/**
 * The characters a word begins with that are known before it runs (quotes left out), up to its
 * first expansion or reference: `--message=` of `--message=<<secret:x>>`, `` of `"$x"`.
 */
function staticPrefix(raw: string): string {
  let prefix = '';
  for (let i = 0; i < raw.length; i += 1) {
    const c = raw[i];
    if (c === '$' || c === '`' || (c === '<' && raw[i + 1] === '<')) break;
    if (c === '"' || c === "'") continue;
    if (c === '\\') i += 1;
    prefix += raw[i] ?? '';
  }
  return prefix;
}

/** A word that is `-o`/`-c` with its setting attached (`-oP<<secret:x>>`). */
function settingAttached(option: RegExp, prefix: string): boolean {
  const flag = /^-[A-Za-z0-9]*[oc]/.exec(prefix);
  return flag !== null && option.test(flag[0]) && prefix.length >= flag[0].length;
}

/**
 * A program whose options run code (option-hazards.ts): a word that hands a value to a shell is
 * refused (and read again when static), a file of code named by a descriptor path is an input
 * that program runs, and a word known only at run time that may be an option (its known start
 * empty, or `-`, `+`, a brace or a pattern) refuses the rest of the command, unless it is the
 * value of an option that takes data or follows a git subcommand none of whose options runs
 * anything.
 */
function readOptionHazards(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string, spec: OptionHazard, subcommand?: string): void {
  const codeWord = (i: number, value: string | null): void => {
    report.refuse(i, i + 1, { context: 'evaluated', reason: `\`${name}\` hands this word to a shell or runs it as a program` });
    if (value === null) report.sink(`\`${name}\` hands a word known only at run time to a shell`, words[i]);
    else report.code(value, words[i], 'script', name);
  };
  const codeFile = (i: number, value: string | null): void => {
    const word = words[i];
    if (value === null || isProcessSubstitution(word) || isEnvironPath(value)) report.sink(`\`${name}\` runs a file of code named at run time, or a process's environment`, word);
    else if (isStdinPath(value)) report.input({ context: 'evaluated', reason: `\`${name}\` runs this input as a file of code` });
  };
  const data = spec.data ?? [];
  let operands = subcommand === undefined ? 0 : 1;
  let dataAfter = subcommand !== undefined && spec.dataAfter?.test(subcommand) === true;
  let taking: 'code' | 'data' | 'file' | 'setting' | null = null;
  let restAfterValue = false;
  for (let i = from + 1; i < to; i += 1) {
    const word = words[i];
    const text = word.text;
    // As the program gets it, as far as known: quotes and backslashes gone (`--to\-command=`).
    const plain = (text ?? word.raw).replace(/["'\\]/g, '');
    const took = taking;
    taking = null;
    if (spec.sink?.test(plain)) report.sink(`\`${name}\` takes a value from the environment or runs a URL as a command (\`${plain.slice(0, 40)}\`)`, word);
    if (took === 'code') {
      codeWord(i, text);
      continue;
    }
    if (took === 'file') {
      codeFile(i, text);
      continue;
    }
    if (spec.code.test(plain)) {
      const equals = plain.indexOf('=');
      codeWord(i, text === null ? null : equals >= 0 ? text.slice(text.indexOf('=') + 1) : text);
      continue;
    }
    const attachedFile = /^([^=]+)=(.*)$/.exec(plain);
    if (attachedFile && ((attachedFile[1].startsWith('-') && spec.fileNext?.test(attachedFile[1])) || spec.fileSetting?.test(attachedFile[1]))) {
      codeFile(i, text === null ? null : text.slice(text.indexOf('=') + 1));
      continue;
    }
    // `host:path` of scp: the path may reach a shell on the remote host (the legacy protocol's
    // `scp -t PATH`), as ssh's command does.
    if (spec.remotePaths && text === null && /^[^/.][^/]*:/.test(staticPrefix(word.raw))) {
      report.refuse(i, i + 1, { context: 'remote-command', reason: `\`${name}\` may hand a remote path to the remote host's shell` });
      continue;
    }
    // The value of `-o`/`-c` (apart, or attached): a `KEY=VALUE` setting. One whose key is not
    // known in full before it runs (`-o P<<secret:x>>`) may be any setting, a command among them.
    const attached = spec.settingNext !== undefined && took === null && settingAttached(spec.settingNext, staticPrefix(word.raw));
    if (took === 'setting' || attached) {
      const key = attached ? staticPrefix(word.raw).replace(/^-[A-Za-z0-9]*[oc]/, '') : staticPrefix(word.raw);
      if (text === null && !/^\s*[A-Za-z0-9_.:-]+\s*[=\s]/.test(key)) codeWord(i, null);
      else if (spec.code.test(attached ? plain.replace(/^-[A-Za-z0-9]*[oc]/, '') : plain)) codeWord(i, text === null ? null : text.slice(text.indexOf('=') + 1));
      else if (spec.fileSetting?.test(key.split('=')[0])) codeFile(i, text === null ? null : text.slice(text.indexOf('=') + 1));
      if (took === 'setting' || text === null) continue;
    }
    if (took === 'data') {
      if (isProcessSubstitution(word)) report.sink(`\`${name}\` gets a file that a process substitution writes at run time`, word);
      if (took === 'data' && restAfterValue) dataAfter = true;
      continue;
    }
    if (text === null && spec.codeStarts?.some((start) => { const prefix = staticPrefix(word.raw).toLowerCase(); return prefix !== '' && (start.startsWith(prefix) || prefix.startsWith(start)); })) {
      codeWord(i, null);
      continue;
    }
    if (spec.responseFiles && plain.startsWith('@')) {
      codeFile(i, text === null ? null : text.slice(1));
      continue;
    }
    if (text === null) {
      const prefix = staticPrefix(word.raw);
      // Known text that no option begins with, and no expansion can turn into one.
      const plainStart = /^[A-Za-z0-9_./:%,=@]/.test(prefix);
      // `-mVALUE`, `--message=VALUE`: the value of a data option, attached.
      const attachedData = (spec.attachedLongData === true && /^--[^=]+=/.test(prefix)) || (!spec.dataBefore || operands === 0) && data.some((option) => (option.startsWith('--') ? prefix.startsWith(`${option}=`) : !spec.longOnly && prefix.startsWith(option) && prefix.length > option.length - 1));
      if (!dataAfter && !plainStart && !attachedData) {
        const reason = `\`${name}\` may read this word, known only at run time, as one of its options, some of which run code`;
        report.refuse(i, to, { context: 'uncertain', reason });
        report.uncertain(reason, word);
        return;
      }
      if (spec.operandsAreCode && plainStart && !dataAfter) report.refuse(i, i + 1, { context: 'evaluated', reason: `\`${name}\` reads this operand as code (a \`${name}\` definition, target, address or command)` });
      continue;
    }
    if (text.startsWith('-') || (spec.plus === true && text.startsWith('+'))) {
      restAfterValue = spec.restAfter?.includes(text) === true;
      if (spec.codeNext?.test(text)) taking = 'code';
      else if (spec.fileNext?.test(text)) taking = 'file';
      else if (spec.settingNext?.test(text)) taking = 'setting';
      else if ((data.includes(text) && (!spec.dataBefore || operands === 0)) || restAfterValue) taking = 'data';
      continue;
    }
    if (spec.codeOperands && (isStdinPath(text) || isEnvironPath(text))) codeFile(i, text);
    if (operands === 0 && (spec.dataAfter?.test(text) === true || spec.restAfter !== undefined)) dataAfter = true;
    operands += 1;
  }
}

/** `jobs -x COMMAND ARGS` runs COMMAND (its jobspecs replaced by process group ids). */
function readJobs(words: readonly CommandWord[], from: number, to: number, report: CommandReport, hops: number): void {
  for (let i = from + 1; i < to; i += 1) {
    const text = words[i].text;
    if (text === null) return unsureFrom(words, i, to, report, 'jobs');
    if (text === '--' || !text.startsWith('-')) return;
    if (/^-[A-Za-z]*x/.test(text)) return readFrom(words, i + 1, to, report, 'jobs -x', hops + 1);
  }
}

/**
 * Programs that start a command of their own words: `npx CMD ...`, `npm exec -- CMD ...`,
 * `cmake -E time|env|chdir ... CMD ...`. Where that command starts, null when it starts none,
 * or -(index + 1) when a word known only at run time stands where it could start.
 */
function startedCommand(words: readonly CommandWord[], from: number, to: number, name: string): number | null {
  const at = (i: number): string | null | undefined => (i < to ? words[i].text : undefined);
  if (name === 'npx' || (name === 'npm' && /^(?:exec|x)$/.test(at(from + 1) ?? ''))) {
    for (let i = from + (name === 'npm' ? 2 : 1); i < to; i += 1) {
      const text = words[i].text;
      if (text === null) return -(i + 1);
      if (text === '--') return i + 1 < to ? i + 1 : null;
      if (!text.startsWith('-')) return i;
      // `--package X`, `-p X`: the package is the next word; its command then follows.
      if (/^(?:-p|--package|-w|--workspace|--prefix|--registry|--cache|--userconfig)$/.test(text)) i += 1;
    }
    return null;
  }
  if (name === 'cmake' && at(from + 1) === '-E') {
    const tool = at(from + 2);
    if (tool === null) return -(from + 3);
    if (tool === 'time') return from + 3 < to ? from + 3 : null;
    if (tool === 'chdir') return from + 4 < to ? from + 4 : null;
    if (tool === 'env') {
      let i = from + 3;
      for (; i < to; i += 1) {
        const text = words[i].text;
        if (text === null) return -(i + 1);
        if (!/^(?:--unset=|--modify$|--$|[A-Za-z_][A-Za-z0-9_]*=)/.test(text)) break;
        if (text === '--modify') i += 1;
        if (text === '--') {
          i += 1;
          break;
        }
      }
      return i < to ? i : null;
    }
  }
  return null;
}

type OnOption = (option: string, value: CommandWord | string | null, at: number) => void;

/** Options from `index` (`-iu X` clusters, `--name=value`, `--name value`): where the operands start; `onOption` hears each option with its value. */
function skipOptions(words: readonly CommandWord[], index: number, to: number, valued: readonly string[], onOption: OnOption = () => {}, plus = false): number {
  let i = index;
  for (; i < to; i += 1) {
    const text = words[i].text;
    // A dynamic word ends the options: the caller decides what an operand known only at run
    // time means (a builtin's operand, a wrapper's command: uncertain). A shell also takes
    // `+o name`, `+O name`, `+ex` (`plus`).
    if (text === null || text === '-' || text === '+') return i;
    if (plus && text.startsWith('+')) {
      for (let k = 1; k < text.length; k += 1) {
        const option = `+${text[k]}`;
        if (!valued.includes(option)) onOption(option, null, i);
        else {
          if (k + 1 < text.length) onOption(option, text.slice(k + 1), i);
          else onOption(option, words[i + 1] ?? null, (i += 1));
          break;
        }
      }
      continue;
    }
    if (!text.startsWith('-')) return i;
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
  const word = words[Math.min(at, words.length - 1)];
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
  } else if (operands.length > 0 && via !== null) report.code(operands.map((word) => word.text).join(' '), operands[0], 'script', via);
}

function readShellCommand(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string): void {
  let script = false;
  let stdin = false;
  // `-oc posix`: bash and dash give `o` the next word and read `c` as an option too, where the
  // reader's getopt would take `c` for o's value: such a cluster is not read.
  for (let i = from + 1; i < to; i += 1) {
    const text = words[i].text;
    if (text === null || !/^[-+]/.test(text) || text === '--' || text.startsWith('--')) break;
    if (/^[-+][A-Za-z]*[oO][A-Za-z]+$/.test(text)) return unsureFrom(words, i, to, report, name);
  }
  const operands = skipOptions(words, from + 1, to, SHELL_VALUED, (option, value) => {
    script ||= option === '-c' || option === '+c' || option === '--command';
    stdin ||= option === '-s' || option === '-i';
    // A startup file runs as code, and it may be the text's own input (`--rcfile <(echo ...)`,
    // `--init-file /dev/fd/3`): the reader does not follow files.
    if ((option === '-O' || option === '+O') && (value === null || (typeof value === 'string' ? value : value.text) === 'extglob' || (typeof value === 'object' && value.text === null))) {
      report.sink(`\`${name} -O extglob\` makes words such as \`@(sh)\` patterns, which may name any program`, words[from]);
    }
    if (option === '--rcfile' || option === '--init-file') report.sink(`\`${name} ${option}\` runs a file as code, which may be an input the text writes`, typeof value === 'object' && value !== null ? value : words[from]);
  }, true);
  const input: Evaluation = { context: 'shell-script', reason: `\`${name}\` reads its script from this input` };
  if (operands < to && words[operands].text === null && !script) {
    // `bash "$x" ...`: the word could be `-c`, which would make the next word a script.
    report.refuse(operands, to, { context: 'uncertain', reason: `\`${name}\` gets an option or script file known only at run time` });
    report.uncertain(`\`${name}\` gets an option or script file known only at run time`, words[operands]);
    // `bash <(...)`: the script is what a process writes; `bash "$f"` may name /dev/stdin.
    readsScriptFrom(words[operands], name, report, input);
  } else if (script) {
    // `sh` is often dash, which reads some of bash's syntax otherwise (`&>`, `$'...'`, `<<<`, `|&`):
    // the reader reads scripts as bash does, so such a script is not read for a shell that may be dash.
    const text = operands < to ? words[operands].text : null;
    if (text !== null && /^(?:sh|dash|ash|posh)$/.test(name) && /&>|\$'|<<<|\|&|\[\[|\$\{[^}]*@/.test(text)) {
      report.sink(`\`${name} -c\` may be dash, which reads this script's \`&>\`, \`$'...'\`, \`<<<\` or \`[[\` otherwise than bash`, words[operands]);
    }
    if (operands < to) codeValue(words[operands], operands, words, report, `${name} -c`);
  } else if (stdin || operands >= to || (words[operands].text === '-' && operands + 1 >= to)) {
    // (A lone `-` ends the options: `sh -` reads its input.)
    report.input(input);
    report.uncertain(`\`${name}\` reads its script from its input`, words[from]);
  } else {
    // `bash /dev/stdin`, `sh /dev/fd/3`: a script file that is an input of the command.
    readsScriptFrom(words[operands].text === '-' ? words[operands + 1] : words[operands], name, report, input);
  }
}

/**
 * An interpreter (python, node, perl, ruby, php, lua, tclsh): without a program in its
 * arguments, or with `-` or `/dev/stdin` for one, it runs its standard input as a program.
 */
function readInterpreter(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string, spec: Interpreter): void {
  const evaluation: Evaluation = { context: 'evaluated', reason: `\`${name}\` runs this input as a program` };
  let given = false;
  let interactive = false;
  let i = from + 1;
  const take = (option: string, value?: string | null): void => {
    // `python3 -m code`, `-m asyncio`, `-m pdb`: a module that reads statements from the input.
    const consoleModule = spec.name === 'python' && option === '-m' && value !== undefined && (value === null || INTERACTIVE_MODULES.has(value)
      || (SCRIPT_MODULES.has(value) && words.slice(i + 1, to).some((word) => word.text === null || isStdinPath(word.text))));
    given ||= spec.code.includes(option) && !consoleModule;
    interactive ||= spec.interactive?.includes(option) === true || consoleModule;
  };
  for (; i < to; i += 1) {
    const text = words[i].text;
    if (text === null) {
      // An option known only at run time could be anything: `-` (the input is the program), or
      // `-c...`, `--eval=...` (the word is): `python3 <<secret:x>>` with a value `-cimport os...`.
      report.input(evaluation);
      const reason = `\`${name}\` may read this word, known only at run time, as an option that gives it a program`;
      report.refuse(i, to, { context: 'uncertain', reason });
      report.uncertain(reason, words[i]);
      return;
    }
    if (!text.startsWith('-') || text === '-') break;
    if (text === '--') {
      i += 1;
      break;
    }
    if (text.startsWith('--') || (spec.name === 'node' && text.length > 2) || spec.name === 'tclsh') {
      const equals = text.indexOf('=');
      const option = equals < 0 ? text : text.slice(0, equals);
      take(option);
      if (equals < 0 && spec.valued.includes(option)) {
        i += 1;
        // `node --import data:text/javascript,...`: a module given by URL may be code itself.
        if (spec.codeValued?.includes(option) && i < to && words[i].text === null) {
          report.refuse(i, i + 1, { context: 'evaluated', reason: `\`${name} ${option}\` takes a module URL, which may be code itself (\`data:\`)` });
        }
      }
      continue;
    }
    let ended = false;
    for (let k = 1; k < text.length; k += 1) {
      const option = `-${text[k]}`;
      take(option, option === '-m' ? (k + 1 < text.length ? text.slice(k + 1) : (words[i + 1]?.text ?? null)) : undefined);
      if (spec.rest?.includes(option)) break;
      if (spec.code.includes(option) || spec.valued.includes(option)) {
        if (k + 1 >= text.length) i += 1;
        ended = spec.ends?.includes(option) === true;
        break;
      }
    }
    if (ended) {
      i += 1;
      break;
    }
  }
  // `perl -n`/`-p` (and `-i`) open each argument with the two-argument open, which runs `cmd|`.
  if (spec.name === 'perl' && words.slice(from + 1, i).some((word) => word.text !== null && /^-[A-Za-z0-9]*[npi]/.test(word.text) && !/^-[A-Za-z0-9]*[eEMmIx]/.test(word.text.slice(0, word.text.search(/[npi]/) + 1)))) {
    report.refuse(i, to, { context: 'evaluated', reason: '`perl -n`/`-p` opens each argument with its two-argument open, which runs a name ending in `|` as a command' });
  }
  if (given && !interactive) return;
  if (i >= to || interactive) {
    report.input(evaluation);
    return;
  }
  readsScriptFrom(words[i], name, report, evaluation);
}

interface ParsedOption {
  readonly option: string;
  readonly value: CommandWord | string | null;
  /** The word that holds the value (the option's own word when attached). */
  readonly at: number;
}

interface Parsed {
  readonly options: readonly ParsedOption[];
  /** Indices of the operands, in order (after `--`, every word is one). */
  readonly operands: readonly number[];
  /** The first word known only at run time where an option could stand, or -1. */
  readonly dynamic: number;
  /** An abbreviated long option that fits several (getopt_long refuses it), or null. */
  readonly ambiguous: string | null;
}

/** `--comm` is `--command` when no other long option starts so (getopt_long). */
function resolveLong(written: string, longs: readonly string[]): string | null {
  if (longs.includes(written)) return written;
  const candidates = longs.filter((option) => option.startsWith(written));
  if (candidates.length === 1) return candidates[0];
  return candidates.length === 0 ? written : null;
}

/** A wrapper's arguments as its option parser reads them (see Wrapper). */
function parseOptions(words: readonly CommandWord[], from: number, to: number, spec: Wrapper): Parsed {
  const valued = new Set([...spec.valued, ...(spec.code ?? [])]);
  const optional = new Set(spec.optional ?? []);
  const longs = [...valued, ...optional, ...(spec.shell ?? []), ...(spec.flags ?? [])].filter((option) => option.startsWith('--'));
  const options: ParsedOption[] = [];
  const operands: number[] = [];
  let dynamic = -1;
  let ambiguous: string | null = null;
  let i = from;
  for (; i < to; i += 1) {
    const text = words[i].text;
    if (text === null || !text.startsWith('-') || text === '-') {
      if (text === null && dynamic < 0) dynamic = i;
      if (!spec.permute) break;
      operands.push(i);
      continue;
    }
    if (text === '--') {
      i += 1;
      break;
    }
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const option = resolveLong(equals < 0 ? text : text.slice(0, equals), longs);
      if (option === null) ambiguous ??= text;
      else if (equals >= 0) options.push({ option, value: text.slice(equals + 1), at: i });
      else if (valued.has(option)) options.push({ option, value: words[i + 1] ?? null, at: (i += 1) });
      else options.push({ option, value: null, at: i });
      continue;
    }
    // A short cluster: letters up to the first that takes a value (the rest of the word, or the
    // next word; an optional value only the rest of the word).
    for (let k = 1; k < text.length; k += 1) {
      const option = `-${text[k]}`;
      if (valued.has(option)) {
        if (k + 1 < text.length) options.push({ option, value: text.slice(k + 1), at: i });
        else options.push({ option, value: words[i + 1] ?? null, at: (i += 1) });
        break;
      }
      if (optional.has(option) && k + 1 < text.length) {
        options.push({ option, value: text.slice(k + 1), at: i });
        break;
      }
      options.push({ option, value: null, at: i });
    }
  }
  for (; i < to; i += 1) operands.push(i);
  return { options, operands, dynamic, ambiguous };
}

/** A report for a list of words built in place of a command's own: refusals go to the words they came from (`map`, -1: none). */
function mapReport(report: CommandReport, map: readonly number[]): CommandReport {
  return {
    ...report,
    refuse: (from, to, evaluation) => {
      for (let i = from; i < to; i += 1) {
        const target = map[i] ?? -1;
        if (target >= 0) report.refuse(target, target + 1, evaluation);
      }
    },
    assigned: (name, word, declaration) => {
      const target = map[word] ?? -1;
      if (target >= 0) report.assigned(name, target, declaration);
    },
  };
}

/** Words read in place of a command's own, with where each came from. */
interface View {
  readonly words: CommandWord[];
  readonly map: number[];
}

const viewOf = (words: readonly CommandWord[], indices: readonly number[]): View => ({ words: indices.map((index) => words[index]), map: [...indices] });

/** A word that a program fills in when it runs (an input item, a file name). */
const runTimeWord = (at: CommandWord, raw: string): CommandWord => ({ text: null, start: at.start, end: at.end, assignment: null, raw });

function readView(view: View, report: CommandReport, via: string, hops: number): void {
  readFrom(view.words, 0, view.words.length, mapReport(report, view.map), via, hops + 1);
}

/** Refuse everything from `index` on: an option known only at run time may change how the rest is read. */
/*
 * Past MAX_HOPS wrappers the rest is not read: whatever it is, it is taken for a program that
 * runs its words and its input as code (a reference there, in its arguments or fed to it, is
 * refused), as a command whose name is known only at run time is.
 */
function tooManyHops(words: readonly CommandWord[], index: number, to: number, report: CommandReport): void {
  const reason = `more than ${MAX_HOPS} wrappers in one command: execgate does not read what the last of them runs`;
  report.uncertain(reason, words[index]);
  report.sink(reason, words[index]);
  report.refuse(index, to, { context: 'uncertain', reason });
  report.input({ context: 'uncertain', reason }, true);
}

function unsureFrom(words: readonly CommandWord[], index: number, to: number, report: CommandReport, name: string): void {
  const reason = `\`${name}\` gets an option or operand known only at run time, which may change what the rest of its arguments are`;
  report.uncertain(reason, words[index]);
  report.sink(reason, words[index]);
  report.refuse(index, to, { context: 'uncertain', reason });
}

function readWrapper(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string, spec: Wrapper, hops: number): void {
  const first = words[from];
  const parsed = parseOptions(words, from + 1, to, spec);
  if (parsed.ambiguous !== null) report.uncertain(`\`${name}\` gets \`${parsed.ambiguous}\`, an abbreviation of several of its options`, first);
  const { operands } = parsed;
  const positional = spec.positional ?? 0;
  // A word known only at run time could be an option (`-c`, `-v`) that moves the command or
  // makes the next word code; only a command name in its place is read as such (readFrom).
  if (parsed.dynamic >= 0 && (spec.permute || operands.indexOf(parsed.dynamic) < positional || spec.form === 'flock' || spec.form === 'ssh')) {
    return unsureFrom(words, parsed.dynamic, to, report, name);
  }
  let code = false;
  let shellFlag = false;
  for (const { option, value, at } of parsed.options) {
    if (spec.shell?.includes(option)) shellFlag = true;
    if (!spec.code?.includes(option) || spec.form === 'env') continue;
    code = true;
    codeValue(value, at, words, report, `${name} ${option}`);
  }
  // `strace -o '|CMD'`, `-o '!CMD'`: the trace is piped to a command a shell runs.
  if (name === 'strace' || name === 'ltrace') {
    for (const { option, value, at } of parsed.options) {
      if ((option !== '-o' && option !== '--output') || value === null) continue;
      const text = typeof value === 'string' ? value : value.text;
      if (text === null) codeValue(value, at, words, report, `${name} ${option}`);
      else if (/^[|!]/.test(text)) codeValue(text.slice(1), at, words, report, `${name} ${option}`);
    }
  }
  switch (spec.form) {
    case 'env':
      return readEnv(words, from, to, parsed, report, spec, hops);
    case 'xargs':
      return readXargs(words, parsed, report, hops);
    case 'su':
      return readSu(words, parsed, report, name, code, hops);
    case 'script':
      // Without -c: an interactive shell reading its input (the operand is the log file).
      if (!code) report.input({ context: 'shell-script', reason: '`script` starts a shell that reads this input' });
      return;
    case 'flock':
      return readFlock(words, to, operands, report, code, hops);
    case 'watch':
      if (parsed.options.some(({ option }) => option === '-x' || option === '--exec')) return readView(viewOf(words, operands), report, name, hops);
      if (operands.length > 0) codeWords(words, operands[0], to, report, { context: 'shell-script', reason: '`watch` runs its arguments through `sh -c`' }, name, '`watch` runs a command line known only at run time', first, true);
      return;
    case 'ssh':
      return readSsh(words, from, to, parsed, report, spec);
    case 'parallel':
      return readParallel(words, to, operands, report, first);
    default:
  }
  if (shellFlag) {
    // `sudo -s CMD` / `doas -s`: the words go to a shell as one command line; none, an interactive shell.
    if (operands.length === 0) report.input({ context: 'shell-script', reason: `\`${name}\` starts a shell that reads this input` });
    else codeWords(words, operands[0], to, report, { context: 'shell-script', reason: `\`${name} -s\` / \`-i\` hands its command to a shell` }, name, `\`${name} -s\` runs a command line known only at run time`, first, false);
    return;
  }
  if (code) return;
  if (spec.all === 'code') {
    let start = operands[0] ?? to;
    if (name === 'sg') {
      // `sg [-] GROUP [-c] COMMAND`: the group, and the optional `-` and `-c` around it, are not code.
      start += words[start]?.text === '-' ? 2 : 1;
      if (words[start]?.text === '-c') start += 1;
    }
    codeWords(words, start, to, report, { context: 'shell-script', reason: `\`${name}\` runs its arguments through a shell` }, name, `\`${name}\` runs a command line known only at run time`, first, true);
    return;
  }
  if (operands.length <= positional) {
    // `chroot DIR` and `unshare` without a command start `$SHELL`, which reads its input.
    if (spec.form === 'shell-when-empty') report.input({ context: 'shell-script', reason: `\`${name}\` without a command starts a shell that reads this input` });
    return;
  }
  let start = operands[positional];
  // `sudo NAME=value CMD` sets NAME for the command, as env does.
  if (spec.assignments) {
    for (let variable = envName(words[start]); start < to && variable !== null; variable = envName(words[start])) {
      readAssignment(words.map((word, at) => (at === start ? { ...word, assignment: variable } : word)), start, report, true, name);
      start += 1;
    }
  }
  readFrom(words, start, to, report, name, hops + 1);
}

/**
 * env: `NAME=value` words (quoted too, `BASH_FUNC_f%%` too) set variables for the command; `-S
 * STRING` is split into arguments that env then reads as if written in its place (more options,
 * assignments, the command); a lone `-` is `-i`.
 */
function readEnv(words: readonly CommandWord[], from: number, to: number, parsed: Parsed, report: CommandReport, spec: Wrapper, hops: number): void {
  const split = parsed.options.find(({ option }) => option === '-S' || option === '--split-string');
  if (split) {
    if (split.value === null) return;
    report.refuse(split.at, split.at + 1, { context: 'shell-script', reason: '`env -S` splits this word into a command line (and expands `${NAME}` in it)' });
    const text = typeof split.value === 'string' ? split.value : split.value.text;
    const parts = text === null ? null : splitEnvString(text);
    if (parts === null) return unsureFrom(words, split.at, to, report, 'env -S');
    const at = words[split.at];
    const view: View = {
      words: [words[from], ...parts.map((part): CommandWord => ({ text: part, start: at.start, end: at.end, assignment: null, raw: part })), ...words.slice(split.at + 1, to)],
      map: [from, ...parts.map(() => split.at), ...Array.from({ length: to - split.at - 1 }, (_, k) => split.at + 1 + k)],
    };
    if (hops >= MAX_HOPS) return tooManyHops(view.words, 0, view.words.length, mapReport(report, view.map));
    return readWrapper(view.words, 0, view.words.length, mapReport(report, view.map), 'env', spec, hops + 1);
  }
  for (const { option, value, at } of parsed.options) {
    if (option === '-u' || option === '--unset') report.variable(typeof value === 'string' ? value : value?.text ?? null, words[at], 'env -u');
  }
  let index = parsed.operands[0] ?? to;
  while (index < to && words[index].text === '-') index += 1;
  for (let variable = envName(words[index]); index < to && variable !== null; variable = envName(words[index])) {
    readAssignment(words.map((word, at) => (at === index ? { ...word, assignment: variable } : word)), index, report, true, 'env');
    index += 1;
  }
  readFrom(words, index, to, report, 'env', hops + 1);
}

function envName(word: CommandWord | undefined): string | null {
  const match = word && /^([^=]+)=/.exec(word.text ?? word.raw.replace(/['"\\]/g, ''));
  return match && !match[1].startsWith('-') ? match[1] : null;
}

/** ENV_SPLIT_ESCAPES: what a backslash pair means in `env -S` (coreutils), outside single quotes. */
const ENV_SPLIT_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', '"': '"', "'": "'", '_': ' ', '#': '#', '$': '$', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/**
 * The arguments `env -S` makes of a string: split at blanks, with `'...'`, `"..."` and
 * backslash escapes; `#` at a word's start ends it, `\c` ends it. `${NAME}` (env expands it) and
 * anything else this does not follow give null: read as known only at run time.
 */
export function splitEnvString(text: string): string[] | null {
  const parts: string[] = [];
  let word: string | null = null;
  let quote = '';
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") quote = '';
      else if (c === '\\' && (text[i + 1] === '\\' || text[i + 1] === "'")) word += text[(i += 1)];
      else word += c;
      continue;
    }
    if (c === '$') return null;
    if (c === '\\') {
      const next = text[i + 1] ?? '';
      if (next === 'c' && quote === '') break;
      const escaped = ENV_SPLIT_ESCAPES[next];
      if (escaped === undefined || (quote === '"' && next === '_')) return null;
      word = (word ?? '') + escaped;
      i += 1;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = '';
      else word += c;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r') {
      if (word !== null) parts.push(word);
      word = null;
    } else if (c === '#' && word === null) {
      break;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else word = (word ?? '') + c;
  }
  if (quote !== '') return null;
  if (word !== null) parts.push(word);
  return parts;
}

/**
 * xargs runs its command with input items: in place of each replace string (`-I R`, `-i`,
 * `--replace`), or appended at the end. An item is a word known only at run time, so
 * `xargs -I{} sh -c 'echo {}'` runs a script known only at run time (a sink), and `xargs sh -c`
 * runs the first item as the script.
 */
function readXargs(words: readonly CommandWord[], parsed: Parsed, report: CommandReport, hops: number): void {
  let replace: string | null = null;
  for (const { option, value, at } of parsed.options) {
    // Each child gets this variable, set to its slot number.
    if (option === '--process-slot-var') report.variable(typeof value === 'string' ? value : value?.text ?? null, words[at], 'xargs --process-slot-var');
    if (option !== '-I' && option !== '-i' && option !== '--replace') continue;
    const text = value === null ? '{}' : typeof value === 'string' ? value : value.text;
    if (text === null) return unsureFrom(words, parsed.operands[0] ?? words.length - 1, words.length, report, 'xargs');
    replace = text === '' ? '{}' : text;
  }
  const view = viewOf(words, parsed.operands);
  if (view.words.length === 0) return;
  if (replace !== null) {
    const marker = replace;
    view.words.forEach((word, index) => {
      if (word.text !== null && word.text.includes(marker)) view.words[index] = runTimeWord(word, word.raw);
    });
  } else {
    view.words.push(runTimeWord(view.words[view.words.length - 1], '(xargs input)'));
    view.map.push(-1);
  }
  // Items that reach a place where the command parses them (`xargs sh` gets `-c CODE` as
  // easily as a file name; `xargs python3`), or a command that reads code from its input: what
  // xargs reads is code.
  let code = false;
  const mapped = mapReport(report, view.map);
  const tracking: CommandReport = {
    ...mapped,
    refuse: (start, end, evaluation) => {
      for (let index = start; index < end; index += 1) code ||= view.words[index]?.text === null && view.map[index] !== undefined && (view.map[index] === -1 || replace !== null);
      mapped.refuse(start, end, evaluation);
    },
    input: (evaluation, piped) => {
      code = true;
      mapped.input(evaluation, piped);
    },
    sink: (reason, at) => {
      code = true;
      mapped.sink(reason, at);
    },
  };
  if (hops >= MAX_HOPS) return tooManyHops(view.words, 0, view.words.length, tracking);
  readFrom(view.words, 0, view.words.length, tracking, 'xargs', hops + 1);
  if (code) report.input({ context: 'shell-script', reason: '`xargs` hands what it reads to a command that runs it as code' });
}

/**
 * su and runuser (GNU getopt: options anywhere before `--`). `-c CMD` is a script; `runuser -u
 * USER CMD ARGS` runs a command; otherwise `[-] [USER [ARG...]]` starts the user's shell with the
 * arguments (`su root -- -c CMD` is a script too), or, without any, a shell reading its input.
 */
function readSu(words: readonly CommandWord[], parsed: Parsed, report: CommandReport, name: string, code: boolean, hops: number): void {
  if (parsed.options.some(({ option }) => option === '-u' || option === '--user')) return readView(viewOf(words, parsed.operands), report, name, hops);
  if (code) return;
  const operands = [...parsed.operands];
  if (operands.length > 0 && words[operands[0]].text === '-') operands.shift();
  const args = operands.slice(1);
  if (args.length === 0) {
    report.input({ context: 'shell-script', reason: `\`${name}\` starts a shell that reads this input` });
    return;
  }
  const at = words[args[0]];
  const view: View = { words: [{ text: 'sh', start: at.start, end: at.start, assignment: null, raw: 'sh' }, ...args.map((index) => words[index])], map: [-1, ...args] };
  readShellCommand(view.words, 0, view.words.length, mapReport(report, view.map), `${name} USER`);
}

/** `flock [options] FILE COMMAND...`, `flock FILE -c SCRIPT`, `flock -c SCRIPT FILE`. */
function readFlock(words: readonly CommandWord[], to: number, operands: readonly number[], report: CommandReport, code: boolean, hops: number): void {
  if (code || operands.length < 2) return;
  const second = operands[1];
  const text = words[second].text;
  if (text === '-c' || text === '--command') {
    if (operands.length > 2) codeValue(words[operands[2]], operands[2], words, report, `flock ${text}`);
    return;
  }
  readFrom(words, second, to, report, 'flock', hops + 1);
}

const SSH_LOCAL_COMMANDS = new Set(['proxycommand', 'localcommand', 'knownhostscommand']);

/**
 * ssh: options, the host, options again (ssh reads them after the host too), then the command
 * line the remote shell parses. `-o ProxyCommand=...` (and LocalCommand, KnownHostsCommand) is
 * a script the local shell runs; `-o RemoteCommand=...` one the remote shell runs.
 */
function readSsh(words: readonly CommandWord[], from: number, to: number, parsed: Parsed, report: CommandReport, spec: Wrapper): void {
  const options = [...parsed.options];
  let rest = (parsed.operands[0] ?? to) + 1;
  while (rest < to && words[rest].text !== null && words[rest].text!.startsWith('-') && words[rest].text !== '-') {
    const again = parseOptions(words, rest, to, spec);
    options.push(...again.options);
    if (words[rest].text === '--' || again.operands.length === 0) {
      rest = again.operands[0] ?? to;
      break;
    }
    rest = again.operands[0]!;
  }
  for (const { option, value, at } of options) {
    if (option !== '-o' || value === null) continue;
    const written = typeof value === 'string' ? value : value.text;
    // A keyword not known in full before it runs (`-o P<<secret:x>>`) may be any: ProxyCommand too.
    if (written === null && typeof value !== 'string' && !/^\s*[A-Za-z]+\s*[=\s]/.test(staticPrefix(value.raw))) {
      codeValue({ ...words[at], text: null }, at, words, report, 'ssh -o');
      continue;
    }
    // ssh removes quotes anywhere in the keyword (`Proxy"Command"`).
    const key = /^\s*([A-Za-z]+)/.exec((written ?? (typeof value === 'string' ? value : value.raw)).replace(/["']/g, ''))?.[1]?.toLowerCase();
    if (key !== undefined && !SSH_LOCAL_COMMANDS.has(key) && key !== 'remotecommand') continue;
    const script = written === null ? null : written.replace(/^\s*[A-Za-z]+\s*=?\s*/, '');
    if (key === 'remotecommand') report.refuse(at, at + 1, { context: 'remote-command', reason: 'ssh hands `RemoteCommand` to the remote shell, which parses it' });
    else codeValue(script === null ? { ...words[at], text: null } : script, at, words, report, `ssh -o ${key ?? 'option'}`);
  }
  report.refuse(rest, to, { context: 'remote-command', reason: 'ssh hands its command line to the remote shell, which parses it' });
  // Without a command the remote login shell reads the input as code; with one, that command reads it.
  report.input({ context: 'remote-command', reason: 'ssh may hand its input to the remote shell, which parses it' }, rest >= to);
  if (rest < to) report.uncertain('ssh runs a command on another host, which the policy cannot see', words[from]);
}

/**
 * GNU parallel pastes its input items (standard input, or the words after `:::`) into its
 * command line and hands that to a shell: the script holds data known only at run time.
 */
function readParallel(words: readonly CommandWord[], to: number, operands: readonly number[], report: CommandReport, first: CommandWord): void {
  const start = operands[0] ?? to;
  let end = start;
  while (end < to && !/^:::[:+]*$/.test(words[end].text ?? '')) end += 1;
  report.refuse(start, to, { context: 'shell-script', reason: '`parallel` pastes input items into a command line that a shell runs' });
  report.input({ context: 'shell-script', reason: '`parallel` pastes its input into a command line that a shell runs' });
  report.uncertain('`parallel` runs a command line built at run time from its input', first);
  report.sink('`parallel` runs a command line built at run time from its input', first);
  const line = words.slice(start, end);
  if (line.length > 0 && line.every((word) => word.text !== null)) report.code(line.map((word) => word.text).join(' '), line[0], 'script', 'parallel');
}

/** `find ... -exec CMD ... ;` (or `+`): `{}` in a word is a file name, known only at run time. */
function readFind(words: readonly CommandWord[], from: number, to: number, report: CommandReport, hops: number): void {
  for (let i = from + 1; i < to; i += 1) {
    if (!FIND_EXEC.includes(words[i].text ?? '')) continue;
    let end = i + 1;
    while (end < to && words[end].text !== ';' && words[end].text !== '+') end += 1;
    const view = viewOf(words, Array.from({ length: end - i - 1 }, (_, k) => i + 1 + k));
    view.words.forEach((word, index) => {
      if (word.text !== null && word.text.includes('{}')) view.words[index] = runTimeWord(word, word.raw);
    });
    readView(view, report, 'find', hops);
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
  const at = words[from];
  /** Words that name variables; `sets`: the builtin assigns (or unsets) them. */
  const names = (start: number, end: number, sets = true): void => {
    report.refuse(start, end, { context: 'variable-name', reason: `\`${name}\` takes this word as a variable name` });
    for (let i = start; i < end; i += 1) {
      const text = words[i].text;
      if (sets) report.variable(text, words[i], name);
      if (text === null) report.sink(`\`${name}\` takes a variable name known only at run time`, words[i]);
      else {
        report.taint(text);
        if (evaluatesSubscript(text)) report.sink(`\`${name}\` takes \`${text}\`, whose subscript bash evaluates as arithmetic (variables included)`, words[i]);
      }
    }
  };
  /** A name attached to its option (`printf -vPS4`, `read -aPS4`): the same as a name word. */
  const nameText = (text: string, word: CommandWord): void => {
    report.variable(text, word, name);
    report.taint(text);
    if (evaluatesSubscript(text)) report.sink(`\`${name}\` takes \`${text}\`, whose subscript bash evaluates as arithmetic (variables included)`, word);
  };
  const spec = NAME_OPTIONS[name];
  if (spec) {
    const start = skipOptions(words, from + 1, to, spec.valued, (option, value, index) => {
      if (option !== spec.option) return;
      // `printf -v"$y"`, `wait -p<<secret:x>>`: a name (or a callback) known only at run time.
      if (value === null || (typeof value !== 'string' && value.text === null) || words[index]?.text === null) {
        report.refuse(index, index + 1, { context: option === '-C' ? 'evaluated' : 'variable-name', reason: `\`${name} ${option}\` takes this word as ${option === '-C' ? 'code' : 'a variable name'}` });
        report.sink(`\`${name} ${option}\` gets a ${option === '-C' ? 'callback' : 'variable name'} known only at run time`, words[index] ?? at);
        return;
      }
      if (option === '-C') {
        codeValue(value, index, words, report, `${name} -C`, 'evaluated');
        report.sink(`\`${name} -C\` calls its callback with each line it reads as an argument (\`eval\`, \`declare\` or \`let\` would run it)`, at);
      } else if (typeof value === 'string') nameText(value, words[index]);
      else names(index, index + 1);
    });
    if (spec.names) names(start, to);
    // A word known only at run time that begins as an option (`printf -v"$y"`, `wait -p<<secret:x>>`):
    // it may be the name option with its value attached.
    // (Options end at the first such word: only that one can be an option.)
    // A word that begins with its value (`printf <<secret:x>> x`, `wait "$v"`) may be the option
    // too: a value `-va[$(...)]`. (`$!`, the last background process, is a number.)
    const first = words[start];
    const prefix = start < to ? staticPrefix(first.raw) : '';
    if (start < to && first.text === null && ((prefix === '' && !/^"?\$!"?$/.test(first.raw)) || new RegExp(`^-[A-Za-z]*${spec.option.slice(1)}`).test(prefix))) {
      report.refuse(start, start + 1, { context: spec.option === '-C' ? 'evaluated' : 'variable-name', reason: `\`${name}\` may take this word as \`${spec.option}\` with a ${spec.option === '-C' ? 'callback' : 'variable name'} attached` });
      report.sink(`\`${name}\` gets \`${spec.option}\` with a value known only at run time`, first);
    }
    return;
  }
  switch (name) {
    case 'eval':
      return codeWords(words, from + 1, to, report, { context: 'evaluated', reason: '`eval` runs its arguments as shell code' }, 'eval', '`eval` runs code known only at run time', at, true);
    case 'trap': {
      const start = skipOptions(words, from + 1, to, []);
      report.refuse(start, to, { context: 'evaluated', reason: '`trap` runs its action as shell code' });
      if (start < to) codeValue(words[start], start, words, report, 'trap', 'evaluated');
      return;
    }
    case 'let':
      report.refuse(from + 1, to, { context: 'arithmetic', reason: '`let` evaluates its arguments as arithmetic' });
      // Any name in an expression may be assigned (`let PATH=0`, `let n++`).
      for (const word of words.slice(from + 1, to)) {
        if (word.text === null) report.variable(null, word, 'let');
        else for (const variable of word.text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) report.variable(variable, word, 'let');
      }
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
      for (let i = from + 1; i + 1 < to; i += 1) if (words[i].text === '-v' || words[i].text === '-R') names(i + 1, i + 2, false);
      return;
    case 'alias':
      report.refuse(from + 1, to, { context: 'evaluated', reason: 'an alias is shell code that bash parses where it is used' });
      for (const word of words.slice(from + 1, to)) {
        if (word.text === null) report.sink('`alias` defines code known only at run time', word);
        else if (word.text.includes('=')) {
          report.code(word.text.slice(word.text.indexOf('=') + 1), word, 'script', 'alias');
          // Where it is used, the alias stands for that code: `s <<secret:x>>` after `alias s="sh -c"`
          // (with `shopt -s expand_aliases` or `set -o posix`) is `sh -c VALUE`, which the reader
          // does not see when it reads `s`.
          report.sink('the text defines an alias, which bash expands where the word stands (with `shopt -s expand_aliases` or `set -o posix`): any later word may stand for any code', word);
        }
      }
      return;
    case 'fc':
      // `fc -s` runs a command of the history (`history -s` puts any text there); `fc` runs
      // $FCEDIT or $EDITOR as a command line.
      report.refuse(from + 1, to, { context: 'evaluated', reason: '`fc` runs commands from the history' });
      report.sink('`fc` runs a command from the history, or $FCEDIT as a command line', at);
      return;
    case 'history':
      if (words.slice(from + 1, to).some((word) => word.text === null || /^-[A-Za-z]*[sr]/.test(word.text))) {
        report.sink('`history -s` (or `-r`) puts text in the history, which `fc` runs', at);
      }
      return;
    case 'set':
      // `set -k`: a NAME=value word anywhere on a later command line is an assignment (PS4=...).
      for (let i = from + 1; i < to; i += 1) {
        const text = words[i].text;
        if (text === null || /^-[A-Za-z]*k/.test(text) || (text === 'keyword' && /^[-+][A-Za-z]*o[A-Za-z]*$/.test(words[i - 1]?.text ?? ''))) {
          report.sink('`set -k` makes a NAME=value word anywhere on a command line an assignment', at);
          break;
        }
        if (text === '--') break;
      }
      return;
    case 'hash':
      // `hash -p /bin/sh s`: the command name `s` then runs a shell, which the reader does not see.
      if (words.slice(from + 1, to).some((word) => word.text === null || /^-[A-Za-z]*p/.test(word.text))) {
        report.sink('`hash -p` makes a command name run another program (a shell among them)', at);
      }
      return;
    case 'source':
    case '.': {
      // `source FILE`: the file is shell code; `/dev/stdin` or `<(...)` make it the text's own input.
      const start = skipOptions(words, from + 1, to, ['-p']);
      if (start < to) readsScriptFrom(words[start], name, report, { context: 'shell-script', reason: `\`${name}\` runs this input as shell code` });
      return;
    }
    case 'shopt':
    case 'enable':
      if (words.slice(from + 1, to).some((word) => word.text === null)) report.uncertain(`\`${name}\` changes the shell with arguments known only at run time`, at);
      // extglob: `/bin/@(sh)` is a pattern bash expands to a command name the reader does not read.
      if (name === 'shopt' && words.slice(from + 1, to).some((word) => word.text === null || word.text === 'extglob')) report.sink('`shopt -s extglob` makes words such as `@(sh)` patterns, which may name any program', at);
      return;
    default: // complete, compgen, compopt, bind, fc
      codeWords(words, from + 1, to, report, { context: 'evaluated', reason: `\`${name}\` can run its arguments (word lists, commands) as shell code` }, null, `\`${name}\` with arguments known only at run time`, at, false);
  }
}

/** `declare`, `typeset`, `local`, `export`, `readonly`: attributes, and values bash evaluates because of them. */
function readDeclaration(words: readonly CommandWord[], from: number, to: number, report: CommandReport, name: string): void {
  const flags = new Set<string>();
  const start = skipOptions(words, from + 1, to, [], (option) => flags.add(option), true);
  const attribute = flags.has('-i') ? 'integer' : flags.has('-n') ? 'reference' : flags.has('-a') || flags.has('-A') ? 'array' : null;
  if (flags.has('-f') || flags.has('-F')) return;
  for (let i = start; i < to; i += 1) {
    const word = words[i];
    const assigned = word.assignment;
    const varName = assigned ?? (word.text !== null && /^[A-Za-z_][A-Za-z0-9_]*$/.test(word.text) ? word.text : null);
    report.variable(varName, word, name);
    // An integer's value is arithmetic that can assign any variable (`n=PATH=0`); a name
    // reference assigns the variable its value names.
    if (attribute === 'integer' || attribute === 'reference') report.variable(null, word, `${name} ${attribute === 'integer' ? '-i' : '-n'}`);
    if (varName === null) {
      // `declare "$x"` or `declare "a[$i]=v"`: a name bash evaluates (its subscript too).
      report.refuse(i, i + 1, { context: 'variable-name', reason: `\`${name}\` takes this word as a variable name` });
      if (word.text === null) report.sink(`\`${name}\` takes a variable name known only at run time`, word);
      else if (evaluatesSubscript(word.text)) report.sink(`\`${name}\` takes \`${word.text}\`, whose subscript bash evaluates as arithmetic (variables included)`, word);
      // `declare -i 'y[0]'`: the attribute is y's.
      const base = word.text === null ? null : /^([A-Za-z_][A-Za-z0-9_]*)\[/.exec(word.text)?.[1];
      if (base && attribute) report.attribute(base, attribute);
      if (base) report.attribute(base, 'array');
      continue;
    }
    if (attribute) report.attribute(varName, attribute);
    if (assigned === null) continue;
    if (attribute) {
      const as = attribute === 'integer' ? 'arithmetic' : attribute === 'array' ? 'a compound array assignment' : 'a variable name';
      report.refuse(i, i + 1, { context: 'evaluated', reason: `\`${name} ${[...flags].join(' ')}\` evaluates the value as ${as}` });
      if (word.text === null) report.sink(`\`${name}\` gives a value known only at run time to a variable it evaluates`, word);
      // `declare -i y=V`: arithmetic reads the variable V, whose value it evaluates in turn.
      else if (/[A-Za-z_$`]/.test(word.text.slice(word.text.indexOf('=') + 1))) report.sink(`\`${name} ${[...flags].join(' ')}\` evaluates a value that names variables, whose values it evaluates in turn`, word);
      continue;
    }
    readAssignment(words, i, report, true, name);
    // `declare a=$v` where `a` is an array in this text parses $v as a compound assignment.
    report.assigned(varName, i, name === 'declare' || name === 'typeset' || name === 'local');
  }
}
