/*
 * Programs, other than the shells and the interpreters that commands.ts reads option by option,
 * that run what they read from their standard input as commands which can reach a shell: a
 * reference's value that flows into them through a pipe, a here-string or another input a process
 * of the run writes would be run, not read (read.ts refuses a token anywhere in such a text).
 *
 * - command languages with a shell escape, read from the input whenever no file or statement is
 *   given, and conservatively always: `ed` (`!cmd`), `ex`/`vi`/`vim`/`nvim`, `gdb`/`lldb`
 *   (`shell`), `expect`, `m4` (`esyscmd`), `dc` (`!`), `sqlite3` (`.shell`), `psql` (`\!`),
 *   `mysql`/`mariadb` (`system`), `R`, `jshell`, `irb`, `ghci`, `at`/`batch` (a shell script),
 *   `crontab` (a crontab of shell lines);
 * - language runtimes that run a program from their input unless told otherwise: `Rscript -`,
 *   `julia`, `deno`, `bun`, `pwsh`, `guile`, `racket`, `sbcl`, `clisp`, `ocaml`, `scala`,
 *   `groovy`, `octave`, `erl`/`iex`: without a code option (`-e`, `-c`, `--eval`, `-Command`
 *   with text), conservatively even with a file operand;
 * - `awk` whose program comes from the input (`-f -`, `-f /dev/stdin`), is known only at run time,
 *   or can run a shell command (`system(...)`, `print | "cmd"`, `"cmd" | getline`);
 * - `sed` whose script comes from the input or is known only at run time, or holds GNU sed's
 *   `e` command or the `e` flag of `s` (unless `--sandbox`);
 * - `make -f -` (recipes are shell lines);
 * - container and remote runners that start a shell or an interpreter with the input attached
 *   (`docker|podman|nerdctl exec -i c sh`, `kubectl exec -i p -- sh`, `lxc exec c -- sh`).
 *
 * And wrappers that commands.ts has no option table for (`gosu`, `su-exec`, `setpriv`,
 * `firejail`, `bwrap`, `systemd-run`, `numactl`, ...): the first later word that names a shell,
 * an interpreter or a known wrapper is read as the command they run.
 *
 * A program given explicitly that decides to run its input (`python3 -c 'exec(input())'`,
 * `perl -pe 'system $_'`) is that program's own meaning and is not read (SECURITY.md).
 */
import type { CommandWord } from './commands';
import { hazardOf } from './option-hazards';

/** `command`: the word that starts the command run; `shellAt`: a word that stands for bash, its arguments after it. */
export type InputProgram = { readonly reason: string } | { readonly command: number } | { readonly shellAt: number } | { readonly unsure: number } | null;

const baseName = (text: string): string => text.slice(text.lastIndexOf('/') + 1);
/** A file name that is the program's own standard input (or a descriptor the text opened), as written canonically. */
const STDIN_CANONICAL = /^(?:\/dev\/std(?:in|out|err)|\/dev\/fd\/[0-9]+|\/proc\/(?:self|thread-self|[0-9]+)(?:\/task\/[0-9]+)?\/fd\/[0-9]+)$/;
/** What a relative name may be in a directory the text entered (`cd /dev; bash stdin`, `cd /dev/fd; sh 0`). */
const STDIN_RELATIVE_TAIL = /(?:^|\/)(?:std(?:in|out|err)|fd\/[0-9]+|[0-9]+)$/;

/**
 * Whether a file name may be the program's own standard input (or a descriptor the text opened),
 * in any spelling of its path: `-`, `/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N` and the same
 * with doubled slashes, `.` and `..` (`//dev/stdin`, `/dev/./stdin`, `/dev/../dev/stdin`),
 * through `/proc/PID/root` (the root again), and a relative name whose directory the reader
 * cannot know (`../../dev/stdin`, `stdin`, `fd/0`, `0`: the text may have entered /dev). A
 * link the text makes to its input (`ln -s /dev/stdin x`) is the file system, which the reader
 * does not follow (SECURITY.md).
 */
export function isStdinPath(text: string): boolean {
  if (text === '-') return true;
  // `..` after a link of /proc (`/proc/self/cwd/../../dev/stdin`): the kernel follows the link first.
  if (/\/proc\/[^/]+\/(?:cwd|root|fd|task|exe)\b/.test(text) && /(?:^|\/)\.\.(?:\/|$)/.test(text)) return true;
  const absolute = text.startsWith('/');
  const parts: string[] = [];
  for (const part of text.split('/')) {
    if (part === '' || part === '.') continue;
    // `..` past the start of a relative name leads where the reader cannot know: dropped.
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  let path = parts.join('/');
  if (absolute) {
    // `/proc/self/root/...`, `/proc/1/root/...`: the root (in a run's PID namespace, its own).
    for (let root = /^proc\/[^/]+\/root(?:\/|$)/.exec(path); root !== null; root = /^proc\/[^/]+\/root(?:\/|$)/.exec(path)) path = path.slice(root[0].length);
    // `/proc/self/cwd/...`: relative to a directory the text may have entered.
    const cwd = /^proc\/[^/]+\/cwd(?:\/|$)/.exec(path);
    // A descriptor used as a directory (`/dev/fd/4/stdin` with `4</dev`): anything.
    if (/^(?:dev\/fd|proc\/[^/]+\/fd)\/[0-9]+\/./.test(path)) return true;
    if (cwd === null) return STDIN_CANONICAL.test(`/${path}`);
    path = path.slice(cwd[0].length);
  }
  return path !== '' && (STDIN_RELATIVE_TAIL.test(path) || STDIN_CANONICAL.test(`/${path}`));
}

const SHELLS = /^(?:sh|bash|rbash|dash|zsh|ksh|ksh93|mksh|pdksh|ash|hush|yash|posh|lksh|oksh|loksh|fish|csh|tcsh|busybox|toybox)$/;
const INTERPRETER_NAMES = /^(?:(?:python|pypy|perl|ruby|php|lua|tclsh|wish)[0-9.]*|node|nodejs|luajit|jimsh|Rscript|R|julia|deno|bun|pwsh|powershell|irb|jshell)$/;

/** Always read their input as commands with a shell escape. */
const COMMAND_LANGUAGES = new Set(['ed', 'red', 'ex', 'vi', 'vim', 'nvim', 'view', 'vimdiff', 'gdb', 'lldb', 'expect', 'm4', 'gm4', 'dc', 'sqlite3', 'sqlite', 'psql', 'mysql', 'mariadb', 'R', 'jshell', 'irb', 'ghci', 'at', 'batch', 'crontab',
  // `!command` lines (sftp in batch mode `-b -` too)
  'sftp', 'ftp', 'lftp', 'gnuplot', 'smbclient']);

/** Run a program from their input unless a code option gives one. */
const RUNTIMES: ReadonlyMap<string, readonly string[]> = new Map([
  ['Rscript', ['-e', '--version', '--help']],
  ['julia', ['-e', '-E', '--eval', '--print', '-v', '--version', '-h', '--help']],
  ['deno', ['eval', '--version', '-V', '--help', '-h', 'fmt', 'lint', 'test', 'check', 'info', 'doc', 'cache', 'compile', 'install', 'upgrade', 'task']],
  ['bun', ['-e', '--eval', '-p', '--print', 'install', 'add', 'remove', 'test', 'build', 'init', 'create', 'pm', 'upgrade', '--version', '-v', '--help', '-h']],
  ['pwsh', ['-v', '-Version', '-h', '-Help', '-?']],
  ['powershell', ['-Help', '-?']],
  ['guile', ['-c', '-v', '--version', '-h', '--help']],
  ['racket', ['-e', '--eval', '-v', '--version', '-h', '--help']],
  ['sbcl', ['--eval', '--version', '--help']],
  ['clisp', ['-x', '--version', '--help']],
  ['ocaml', ['-version', '-vnum', '-help', '--help']],
  ['scala', ['-e', '-version', '-help']],
  ['groovy', ['-e', '-v', '--version', '-h', '--help']],
  ['octave', ['--eval', '-v', '--version', '-h', '--help']],
  ['erl', ['-eval', '-version']],
  ['iex', ['-e', '--eval', '-v', '--version', '-h', '--help']],
]);

const AWKS = /^(?:awk|gawk|mawk|nawk|original-awk|bwk-awk|goawk)$/;
const AWK_VALUED = ['-F', '-v', '-f', '-e', '-i', '-l', '-E', '-W', '--field-separator', '--assign', '--file', '--source', '--include', '--load', '--exec'];
const SEDS = /^(?:sed|gsed)$/;
const SED_VALUED = ['-e', '-f', '-l', '--expression', '--file', '--line-length'];
const CONTAINERS = /^(?:docker|podman|nerdctl|kubectl|oc|lxc|incus|machinectl|toolbox|distrobox|distrobox-enter|vagrant)$/;

/** Wrappers without an option table: the command they run is the first word that names one. */
/** The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 /bin/sh`): it runs the program it is given. */
const LOADER = /^ld(?:-linux[^/]*|-musl[^/]*)?\.so(?:\.[0-9]+)*$/;
const LOOSE_WRAPPERS = new Set(['run0', 'cgexec', 'flatpak-spawn', 'tsocks', 'ifne', 'systemd-nspawn', 'ip', 'perf', 'start-stop-daemon', 'uclampset', 'runcon', 'systemd-cat', 'setarch', 'linux32', 'linux64', 'i386', 'x86_64', 'uname26', 'choom', 'dbus-launch', 'ltrace', 'gosu', 'su-exec', 'setpriv', 'capsh', 'prlimit', 'systemd-run', 'firejail', 'bwrap', 'proot', 'valgrind', 'faketime', 'torsocks', 'torify',
  'proxychains', 'proxychains4', 'dbus-run-session', 'xvfb-run', 'tini', 'dumb-init', 'catchsegv', 'numactl', 'cpulimit', 'chpst', 's6-setuidgid', 'sandbox-exec',
  'ssh-agent', 'nocache', 'eatmydata', 'trickle', 'rlwrap', 'caffeinate', 'systemd-inhibit', 'with-contenv', 'pv-run', 'doppler', 'op', 'aws-vault', 'direnv', 'nix-shell']);
const KNOWN_COMMANDS = /^(?:env|nice|nohup|timeout|stdbuf|setsid|sudo|doas|su|runuser|chroot|unshare|nsenter|flock|xargs|exec|command|builtin|time|script|watch|ionice|chrt|taskset|find|parallel|eval|source|\.)$/;

/** Options from `from`, as getopt reads them; `onOption` hears each with its value; returns the first operand. */
function options(words: readonly CommandWord[], from: number, to: number, valued: readonly string[], onOption: (option: string, value: string | null) => void): number | null {
  let i = from;
  for (; i < to; i += 1) {
    const text = words[i].text;
    if (text === null) return null;
    if (!text.startsWith('-') || text === '-') return i;
    if (text === '--') return i + 1;
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const written = equals < 0 ? text : text.slice(0, equals);
      // getopt_long takes an unambiguous abbreviation (`--fi=` for `--file=`): read as the option it stands for.
      const option = valued.includes(written) ? written : valued.find((each) => each.startsWith('--') && each.startsWith(written) && written.length > 2) ?? written;
      if (equals >= 0) onOption(option, text.slice(equals + 1));
      else if (valued.includes(option)) {
        i += 1;
        onOption(option, i < to ? words[i].text : null);
      } else onOption(option, '');
      continue;
    }
    for (let k = 1; k < text.length; k += 1) {
      const option = `-${text[k]}`;
      if (!valued.includes(option)) {
        onOption(option, '');
        continue;
      }
      if (k + 1 < text.length) onOption(option, text.slice(k + 1));
      else {
        i += 1;
        onOption(option, i < to ? words[i].text : null);
      }
      break;
    }
  }
  return i;
}

/**
 * An awk program that can run a shell command with what it reads: `system(...)`, `print | cmd`,
 * `cmd | getline`, `|&`. Regular expression literals (`/a|b/`) and `||` are left out first, so
 * that an alternation is not read as a pipe (a division that looks like one only errs towards
 * refusing).
 */
function awkRuns(program: string): boolean {
  if (/\bsystem\s*\(/.test(program)) return true;
  const text = program.replace(/(^|[~({};,!&|\n])(\s*)\/(?:\\.|[^/\\\n])*\//g, '$1$2R').replace(/\|\|/g, ' OR ');
  return /\|/.test(text);
}

function readAwk(words: readonly CommandWord[], from: number, to: number, name: string): InputProgram {
  let program = false;
  let runs: string | null = null;
  const first = options(words, from + 1, to, AWK_VALUED, (option, value) => {
    if (option === '-f' || option === '--file' || option === '-i' || option === '--include') {
      program = true;
      if (value === null || isStdinPath(value)) runs ??= `\`${name}\` reads its program from this input`;
    } else if (option === '-e' || option === '--source') {
      program = true;
      if (value === null || awkRuns(value)) runs ??= `\`${name}\` runs a program that hands what it reads to a shell`;
    } else if (option === '-W' && value !== null && /^(?:e|ex|exe|exec)(?:=|$)/.test(value)) {
      // mawk's `-W exec FILE` (the file is the next word unless attached with `=`).
      program = true;
      runs ??= `\`${name} -W exec\` reads its program from a file, which may be this input`;
    } else if (option === '-E' || option === '--exec') {
      program = true;
      if (value === null || isStdinPath(value)) runs ??= `\`${name}\` reads its program from this input`;
    }
  });
  if (first === null) return { reason: `\`${name}\` gets an option or program known only at run time` };
  if (runs !== null) return { reason: runs };
  if (program || first >= to) return null;
  const text = words[first].text;
  if (text === null || awkRuns(text)) return { reason: `\`${name}\` runs a program that may hand what it reads to a shell` };
  return null;
}

/** GNU sed's `e` command (with an address or none) or the `e` flag of `s`. */
function sedRuns(script: string): boolean {
  // `s` commands with any delimiter: their flags.
  const substitutions = /s([^\s\\\n;{}a-zA-Z0-9])((?:\\.|(?!\1)[^\\])*)\1((?:\\.|(?!\1)[^\\])*)\1([a-zA-Z0-9]*)/gs;
  let rest = script;
  for (const match of script.matchAll(substitutions)) {
    if (match[4].includes('e')) return true;
    rest = rest.replace(match[0], ';');
  }
  // Addresses (`/re/`, `\%re%`) removed; then an `e` where a command starts.
  rest = rest.replace(/\\(.)(?:\\.|(?!\1)[^\\])*\1|\/(?:\\.|[^\\/])*\//gs, '0');
  return /(?:^|[;\n{}!])\s*(?:[0-9$]+(?:\s*,\s*[~+]?[0-9$]+)?)?\s*!?\s*e(?:[\s;}]|$)/.test(rest);
}

function readSed(words: readonly CommandWord[], from: number, to: number, name: string): InputProgram {
  let script = false;
  let sandbox = false;
  let runs: string | null = null;
  const first = options(words, from + 1, to, SED_VALUED, (option, value) => {
    if (option === '--sandbox') sandbox = true;
    if (option === '-f' || option === '--file') {
      script = true;
      if (value === null || isStdinPath(value)) runs ??= `\`${name}\` reads its script from this input`;
    } else if (option === '-e' || option === '--expression') {
      script = true;
      if (value === null || sedRuns(value)) runs ??= `\`${name}\` runs a script that hands what it reads to a shell`;
    }
  });
  if (first === null) return { reason: `\`${name}\` gets an option or script known only at run time` };
  // `--sandbox` refuses `e`, `r` and `w`, in a script from the input too.
  if (sandbox) return null;
  if (runs !== null) return { reason: runs };
  if (script || first >= to) return null;
  const text = words[first].text;
  if (text === null || sedRuns(text)) return { reason: `\`${name}\` runs a script that may hand what it reads to a shell` };
  return null;
}

function readRuntime(words: readonly CommandWord[], from: number, to: number, name: string, code: readonly string[]): InputProgram {
  for (let i = from + 1; i < to; i += 1) {
    const text = words[i].text;
    if (text === null) break;
    const option = text.includes('=') && text.startsWith('-') ? text.slice(0, text.indexOf('=')) : text;
    if (code.includes(option)) return null;
    if (/^-(?:c|command|encodedcommand|ec|e)$/i.test(option) && (name === 'pwsh' || name === 'powershell')) {
      const value = words[i + 1]?.text;
      return value === '-' || value === undefined || value === null ? { reason: `\`${name}\` runs this input as a program` } : null;
    }
  }
  return { reason: `\`${name}\` runs this input as a program` };
}

function readContainer(words: readonly CommandWord[], from: number, to: number, name: string): InputProgram {
  for (let i = from + 1; i < to; i += 1) {
    const text = words[i].text;
    if (text === null) continue;
    const base = baseName(text);
    if (SHELLS.test(base) || INTERPRETER_NAMES.test(base)) return { reason: `\`${name}\` starts \`${base}\` with this input attached, which may read it as code` };
  }
  if (words.slice(from + 1, to).some((word) => word.text === 'attach')) return { reason: `\`${name} attach\` hands this input to a running program` };
  return null;
}

/** What `name` (the base name of words[from]) does with its standard input. */
export function inputProgram(words: readonly CommandWord[], from: number, to: number, name: string): InputProgram {
  // `gdb --args PROGRAM ARGS`, `lldb -- PROGRAM ARGS`: the debugger runs PROGRAM (its `run`, in a batch), which is read as the command.
  if (name === 'gdb' || name === 'lldb') {
    const at = words.findIndex((word, index) => index > from && index < to && (word.text === '--args' || (name === 'lldb' && word.text === '--')));
    if (at >= 0 && at + 1 < to) return { command: at + 1 };
  }
 if (name === 'newgrp' || name === 'sg') {
    // Without a command they start the user's shell, which reads this input.
    const operands = words.slice(from + 1, to).filter((word) => word.text === null || !word.text.startsWith('-'));
    if (name === 'newgrp' || operands.length <= 1) return { reason: `\`${name}\` starts a shell that reads this input` };
  }
  if (COMMAND_LANGUAGES.has(name) || /^(?:vim?|nvim|ex|view|ed|gdb|sqlite3?|psql|mysql|mariadb)\.[A-Za-z0-9_.-]+$/.test(name)) return { reason: `\`${name}\` reads commands from this input, and its commands can run a shell` };
  const code = RUNTIMES.get(name);
  if (code) return readRuntime(words, from, to, name, code);
  if (AWKS.test(name)) return readAwk(words, from, to, name);
  if (SEDS.test(name)) return readSed(words, from, to, name);
  if (name === 'make' || name === 'gmake' || name === 'bmake') {
    let stdin = false;
    options(words, from + 1, to, ['-f', '--file', '--makefile', '-C', '--directory', '-I', '--include-dir', '-j', '--jobs', '-l', '-o', '-W'], (option, value) => {
      if (['-f', '--file', '--makefile'].includes(option) && (value === null || isStdinPath(value))) stdin = true;
    });
    return stdin ? { reason: `\`${name}\` reads a makefile, whose recipes a shell runs, from this input` } : null;
  }
  if (CONTAINERS.test(name)) return readContainer(words, from, to, name);
  // capsh runs /bin/bash itself with the words after `--` (`capsh -- -c CMD`): those are a shell's.
  if (name === 'capsh') {
    const dashes = words.findIndex((word, at) => at > from && at < to && word.text === '--');
    if (dashes >= 0) return { shellAt: dashes };
  }
  if (LOOSE_WRAPPERS.has(name) || LOADER.test(name)) {
    const named: number[] = [];
    for (let i = from + 1; i < to; i += 1) {
      const text = words[i].text;
      if (text === null) continue;
      const base = baseName(text);
      if (SHELLS.test(base) || INTERPRETER_NAMES.test(base) || KNOWN_COMMANDS.test(base) || COMMAND_LANGUAGES.has(base) || AWKS.test(base) || SEDS.test(base)
        || hazardOf(base) !== undefined || /^git-[a-z]/.test(base) || base === 'jobs' || CONTAINERS.test(base) || RUNTIMES.has(base)) named.push(i);
    }
    // Without an option table the reader cannot tell an option's value (`ssh-agent -a sh`,
    // `bwrap --chdir .`) from the command: only a first such word right after the wrapper's
    // name, and no other, is taken for the command; otherwise the rest is not read.
    if (named.length === 1 && named[0] === from + 1) return { command: named[0] };
    if (named.length > 0) return { unsure: named[0] };
  }
  return null;
}
