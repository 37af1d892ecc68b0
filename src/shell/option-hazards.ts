/*
 * Programs whose options hand a value to a shell, run it as a program or read a file of code
 * (`tar --to-command=`, `make --eval=`, `git -c alias.x=!...`, `scp -o ProxyCommand=`,
 * `split --filter=`, `npx -c`, `rsync -e`, `less +!cmd`, `gdb -ex`, `cmake -P FILE`, ...), as
 * data for commands.ts, which reads each such command's words with them (readOptionHazards), and
 * for input-programs.ts, which follows a wrapper without an option table to one of these as it
 * does to a shell.
 *
 * Three ways a value reaches such an option: written in it (`--to-command=<<secret:x>>`), as the
 * word after it (`tar -I <<secret:x>>`), or as a word of its own that the program reads as an
 * option (`tar -cf x <<secret:x>> f` with a value `--to-command=...`, `python3 <<secret:x>>`
 * with `-c...`). A word whose first characters are known only at run time (or begin with `-`,
 * `+`, a brace or a pattern) may be any option, and where options end cannot be told from the
 * words (`--` may be an option's value, an option's value may look like an operand): so every
 * such word of the command is refused, with the rest of the command, unless it is the value of
 * an option listed in `data` (`git commit -m <<secret:x>>`, `zip -P <<secret:x>>`, written
 * apart, attached, or `--name=`, in that exact spelling) or follows a git subcommand none of
 * whose options runs anything (`dataAfter`). A word that begins with known text that is not an
 * option (`https://x:<<secret:x>>@host`) is data.
 */

export interface OptionHazard {
  /** A word (tested with quotes and backslashes removed) whose value a shell or `exec` runs. */
  readonly code: RegExp;
  /** An option whose next word a shell or `exec` runs (tested on the option's own word). */
  readonly codeNext?: RegExp;
  /** An option whose value (the next word, or `--name=FILE`) is a file the program runs as code. */
  readonly fileNext?: RegExp;
  /** Options, exactly as spelled, whose value is data: `-m V`, `-mV`, `--message V`, `--message=V`. */
  readonly data?: readonly string[];
  /** A word that makes every value of the text reachable as code (`git --config-env=KEY=VAR`). */
  readonly sink?: RegExp;
  /** Every operand is code: make's `NAME:=...` definitions and targets, socat's addresses, tmux's commands. */
  readonly operandsAreCode?: boolean;
  /** Options also start with `+` (less and vim `+cmd`). */
  readonly plus?: boolean;
  /** `data` options count only before the first operand (git's `-C` before its subcommand). */
  readonly dataBefore?: boolean;
  /** Settings (`-c KEY=FILE`) whose value is a file of code or configuration (git's `include.path`). */
  readonly fileSetting?: RegExp;
  /** `host:path` operands whose path may reach the remote host's shell (scp's legacy protocol). */
  readonly remotePaths?: boolean;
  /**
   * Options whose value is a `KEY=VALUE` setting (`-o`, git's `-c`), separate or attached: one
   * whose key is not known in full before it runs (`-o P<<secret:x>>`) may be any setting.
   */
  readonly settingNext?: RegExp;
  /** Text that begins a code word (git's `ext::`): a word that may complete it is refused. */
  readonly codeStarts?: readonly string[];
  /** Options read by getopt_long_only (gdb): `-e...` may be `-eval-command=`, so no attached short data. */
  readonly longOnly?: boolean;
  /** `@FILE` words are files of options (gcc, rustc). */
  readonly responseFiles?: boolean;
  /** After the value of one of these options, or the first operand, the rest is the program's (java `-jar`). */
  readonly restAfter?: readonly string[];
  /** An operand that is a descriptor path is a file of code the program runs (`java --source 17 /dev/stdin`). */
  readonly codeOperands?: boolean;
  /** `--name=VALUE` of any long option is data (kubectl's options run nothing but the file above). */
  readonly attachedLongData?: boolean;
  /**
   * A first operand after which a word known only at run time is data, not a possible option:
   * git's subcommands that have no option that runs code (`git status <<secret:x>>`).
   */
  readonly dataAfter?: RegExp;
}

/**
 * A long option as getopt_long (and git's parse-options, npm's nopt) take it: any prefix of two
 * letters or more (`--upl=` is `--upload-pack=`). An abbreviation that fits another option too
 * is refused by the program; matching it here only refuses more.
 */
function long(...names: string[]): string {
  return `--(?:${names.map((name) => name.slice(0, 2) + [...name.slice(2)].map((c) => `(?:${c.replace(/[-.]/g, '\\$&')}`).join('') + ')?'.repeat(name.length - 2)).join('|')})`;
}

// git configuration whose value is a command: an alias (a value may begin with `!`), and every key
// git runs (`core.sshCommand`, `core.pager`, `pager.log`, `credential.helper`, `diff.x.command`,
// `filter.x.smudge`, `remote.origin.uploadpack`, `gpg.program`, `imap.tunnel`, ...).
const GIT_CONFIG_CODE = String.raw`alias\.[^=]*=|pager\.[^=]*=|(?:[^=]*\.)?(?:[a-z]*command|[a-z]*cmd|program|helper|driver|pager|editor|[a-z]*proxy|askpass|hookspath|[a-z]*hook|uploadpack|receivepack|clean|smudge|process|external|textconv|browser|fsmonitor|smtpserver|variant|tool|tunnel|[a-z]*filter|update)=`;

const NONE = /(?!)/;
const MAKE: OptionHazard = {
  code: new RegExp(`^${long('eval')}=|^-E.`),
  codeNext: new RegExp(`^-E$|^${long('eval')}$`),
  fileNext: new RegExp(`^-f$|^${long('file', 'makefile')}$`),
  data: ['-C', '--directory', '-I', '--include-dir', '-o', '--old-file', '--assume-old', '-W', '--what-if', '--new-file', '--assume-new'],
  operandsAreCode: true,
};
const SSH_OPTIONS = /^(?:-o)?\s*(?:ProxyCommand|LocalCommand|KnownHostsCommand|RemoteCommand|PermitLocalCommand|ProxyUseFdpass|Match)/i;
const NPM: OptionHazard = {
  code: new RegExp(`^${long('call')}=|^-c.`),
  codeNext: new RegExp(`^-c$|^${long('call')}$`),
  fileNext: new RegExp(`^${long('userconfig', 'globalconfig')}$`),
  data: ['--prefix', '--registry', '--cache', '--workspace', '-w', '--otp', '--tag', '--loglevel'],
};
// awk and sed run their program (the first operand, or `-e`/`-f`): a value given there is code
// by the text's own choice, as with `python -c` (SECURITY.md, not read); a value that lands where
// an option can stand (`awk <<secret:x>> f`, a value `--source=...`) is what is read here.
const AWK: OptionHazard = { code: NONE, data: ['-F', '--field-separator', '-v', '--assign', '-f', '--file', '-e', '--source', '-i', '--include'] };
const SED: OptionHazard = { code: NONE, data: ['-e', '--expression', '-f', '--file', '-l', '--line-length'] };
const COMPILER: OptionHazard = { code: /^-wrapper./, codeNext: /^-wrapper$/, data: ['-o', '-I', '-L', '-D', '-U', '-l', '-x', '-MF', '-MT', '-MQ', '-isystem', '-include', '-iquote'], responseFiles: true };
const VIM: OptionHazard = {
  code: new RegExp(`^\\+|^-c.|^${long('cmd')}=`),
  codeNext: new RegExp(`^-c$|^${long('cmd')}$`),
  fileNext: /^-[uSsU]$/,
  data: ['-T', '-i', '-w', '-W', '-t', '-q'],
  plus: true,
};
// gdb reads its options with getopt_long_only: one dash or two, and any abbreviation.
const gdbLong = (...names: string[]): string => long(...names).replace(/^--/, '--?');
const GDB: OptionHazard = {
  code: new RegExp(`^(?:${gdbLong('eval-command', 'init-eval-command')}|--?i?ex)=`),
  codeNext: new RegExp(`^(?:${gdbLong('eval-command', 'init-eval-command')}|--?i?ex)$`),
  fileNext: new RegExp(`^(?:--?i?x|${gdbLong('command', 'init-command')})$`),
  data: ['-p', '--pid', '-c', '--core', '-cd', '-d', '--directory', '-s', '--symbols', '-e', '--exec', '-se', '-tty'],
  longOnly: true,
};

export const OPTION_HAZARDS: ReadonlyMap<string, OptionHazard> = new Map<string, OptionHazard>([
  ['tar', {
    code: new RegExp(`^--checkpoint-a[a-z-]*=exec|^${long('to-command', 'use-compress-program', 'info-script', 'new-volume-script', 'rsh-command', 'rmt-command', 'checkpoint-action')}=|^-[A-Za-z]*[IF].`),
    codeNext: new RegExp(`^-[A-Za-z]*[IF]$|^${long('to-command', 'use-compress-program', 'info-script', 'new-volume-script', 'rsh-command', 'rmt-command', 'checkpoint-action')}$`),
    data: ['-f', '--file', '-C', '--directory', '-T', '--files-from', '-X', '--exclude-from', '--exclude', '--transform', '--xform', '--owner', '--group', '--mode', '--mtime', '-N', '--newer', '--after-date', '-V', '--label', '-H', '--format', '-b', '--blocking-factor', '-K', '--starting-file', '--suffix'],
  }],
  ['make', MAKE], ['gmake', MAKE], ['bmake', MAKE],
  ['scp', { code: SSH_OPTIONS, codeNext: /^-[A-Za-z0-9]*[SD]$/, fileNext: /^-F$/, data: ['-c', '-i', '-J', '-l', '-P'], remotePaths: true, settingNext: /^-[A-Za-z0-9]*o$/ }],
  ['sftp', { code: SSH_OPTIONS, codeNext: /^-[A-Za-z0-9]*[SDs]$/, fileNext: /^-[Fb]$/, data: ['-B', '-c', '-i', '-J', '-l', '-P', '-R'], settingNext: /^-[A-Za-z0-9]*o$/ }],
  ['zip', { code: new RegExp(`^${long('unzip-command')}=|^-TT.`), codeNext: new RegExp(`^-TT$|^${long('unzip-command')}$`), data: ['-P', '--password', '-b', '--temp-path', '-n', '--suffixes', '-t', '-tt', '-O', '--output-file', '-Z', '--compression-method'] }],
  ['dpkg', { code: new RegExp(`^${long('pre-invoke', 'post-invoke')}=`), codeNext: new RegExp(`^${long('pre-invoke', 'post-invoke')}$`), data: ['--root', '--admindir', '--instdir', '--log', '--status-fd'] }],
  ['apt-get', { code: /Invoke|::Command|Pre-Install-Pkgs/i, fileNext: /^-c$|^--config-file$/, data: ['-t', '--target-release'], settingNext: /^-o$|^--option$/ }],
  ['apt', { code: /Invoke|::Command|Pre-Install-Pkgs/i, fileNext: /^-c$|^--config-file$/, data: ['-t', '--target-release'], settingNext: /^-o$|^--option$/ }],
  ['socat', { code: /(?:^|[,!])(?:SYSTEM|EXEC):/i, operandsAreCode: true }],
  ['git', {
    code: new RegExp(`^(?:${GIT_CONFIG_CODE})|^${long('upload-pack', 'receive-pack', 'exec', 'extcmd', 'open-files-in-pager')}=|^-[xO].|^ext::`, 'i'),
    codeNext: new RegExp(`^(?:-u|-x|-O|${long('upload-pack', 'receive-pack', 'exec', 'extcmd', 'open-files-in-pager')})$`),
    data: ['-C', '--git-dir', '--work-tree', '--namespace'],
    dataBefore: true,
    settingNext: /^-c$/,
    codeStarts: ['ext::'],
    fileSetting: /^(?:-c\s*)?include(?:if\.[^=]*)?\.path$/i,
    // `--config-env=KEY=VAR` takes KEY's value from the variable VAR, which the text may set to
    // a value; `protocol.*.allow` (`ext::` runs a command named in the URL) makes a URL code.
    // `trailer.*.command` pastes a `--trailer` value into a shell command line.
    sink: new RegExp(`^${long('config-env')}(?:=|$)|^protocol\\.(?:[^=]*\\.)?allow=|^trailer\\.[^=]*\\.(?:command|cmd)(?:=|$)`, 'i'),
    // Subcommands none of whose options run a command or name a program: a value is data there.
    // Others (clone, fetch, pull, push, ls-remote, archive, rebase, grep, difftool, bisect,
    // submodule, filter-branch, send-email, merge -s, help -b, ...) read it as a possible option.
    dataAfter: /^(?:status|log|show|diff|add|commit|checkout|switch|branch|tag|rev-parse|rev-list|describe|blame|stash|reset|restore|rm|mv|shortlog|ls-files|ls-tree|cat-file|hash-object|notes|reflog|merge-base|name-rev|for-each-ref|show-ref|symbolic-ref|update-ref|version|var|check-ignore|check-attr|count-objects|whatchanged|range-diff|cherry|stripspace)$/,
  }],
  ['split', { code: new RegExp(`^${long('filter')}=`), codeNext: new RegExp(`^${long('filter')}$`), data: ['-a', '--suffix-length', '-b', '--bytes', '-C', '--line-bytes', '-l', '--lines', '-n', '--number', '-t', '--separator', '--additional-suffix'] }],
  ['npm', NPM], ['npx', NPM],
  ['rsync', {
    code: new RegExp(`^${long('rsh', 'rsync-path')}=|^-[A-Za-z]*e.`),
    codeNext: new RegExp(`^-[A-Za-z]*e$|^${long('rsh', 'rsync-path')}$`),
    data: ['--password-file', '--exclude', '--include', '--exclude-from', '--include-from', '--files-from', '-f', '--filter', '--chmod', '--chown', '--log-file', '-T', '--temp-dir', '--partial-dir', '--backup-dir', '--suffix', '--bwlimit', '--port', '--timeout', '--contimeout', '--compare-dest', '--copy-dest', '--link-dest'],
  }],
  ['sort', { code: new RegExp(`^${long('compress-program')}=`), codeNext: new RegExp(`^${long('compress-program')}$`), data: ['-k', '--key', '-o', '--output', '-t', '--field-separator', '-S', '--buffer-size', '-T', '--temporary-directory', '--files0-from', '--parallel'] }],
  ['less', {
    code: /^\+.*!/,
    fileNext: new RegExp(`^-k$|^${long('lesskey-file', 'lesskey-src')}$`),
    data: ['-b', '--buffers', '-h', '-j', '-o', '--log-file', '-O', '-p', '--pattern', '-P', '--prompt', '-t', '--tag', '-T', '-x', '--tabs', '-y', '-z', '--window'],
    plus: true,
  }],
  ['man', { code: new RegExp(`^${long('pager', 'html')}=|^-[PH].`), codeNext: new RegExp(`^-[PH]$|^${long('pager', 'html')}$`), data: ['-C', '--config-file', '-M', '--manpath', '-S', '--sections', '-L', '--locale', '-m', '--systems', '-e', '--extension', '-E', '--encoding', '-R', '--recode'] }],
  ['wget', {
    code: new RegExp(`^${long('use-askpass', 'execute')}=|^-e.`),
    codeNext: new RegExp(`^-e$|^${long('use-askpass', 'execute')}$`),
    data: ['--header', '--user', '--password', '--http-user', '--http-password', '--ftp-user', '--ftp-password', '--proxy-user', '--proxy-password', '--post-data', '--body-data', '-U', '--user-agent', '-O', '--output-document', '-o', '--output-file', '-a', '--append-output', '-P', '--directory-prefix', '--referer', '--method', '-T', '--timeout', '--load-cookies', '--save-cookies', '-i', '--input-file', '-B', '--base'],
  }],
  ['awk', AWK], ['gawk', AWK], ['mawk', AWK], ['nawk', AWK],
  ['sed', SED], ['gsed', SED],
  ['gcc', COMPILER], ['g++', COMPILER], ['cc', COMPILER], ['c++', COMPILER], ['clang', COMPILER], ['clang++', COMPILER],
  ['ninja', { code: NONE, fileNext: /^-f$/, data: ['-C', '-j', '-k', '-l', '-d', '-w'] }],
  ['cmake', { code: NONE, fileNext: /^-[PC]$/, data: ['-S', '-B', '-G', '-T', '-A'] }],
  ['tmux', { code: /^-c./, codeNext: /^-c$/, fileNext: /^-f$/, data: ['-L', '-S'], operandsAreCode: true }],
  ['vim', VIM], ['vi', VIM], ['nvim', VIM], ['view', VIM], ['vimdiff', VIM], ['ex', VIM], ['gvim', VIM],
  ['gdb', GDB],
  // The JVM runs `-XX:OnOutOfMemoryError=CMD` and `-XX:OnError=CMD` with /bin/sh, and loads agents.
  ['java', {
    code: /^-XX:\+?On(?:OutOfMemory)?Error=|^-(?:javaagent|agentpath|agentlib):/,
    data: ['-cp', '-classpath', '--class-path', '-p', '--module-path', '--add-modules', '--source', '-d', '-Xss', '-Xmx', '-Xms'],
    restAfter: ['-jar', '-m', '--module'],
    codeOperands: true,
  }],
  // kubectl runs a kubeconfig's `exec:` credential plugin: a kubeconfig is a file of code.
  ['kubectl', { code: NONE, fileNext: new RegExp(`^${long('kubeconfig')}$`), data: ['--token', '--server', '-s', '--namespace', '-n', '--context', '--user', '--cluster', '--username', '--password', '-o', '--output', '-f', '--filename', '-l', '--selector', '--from-literal', '--from-file', '--type', '--docker-password', '--docker-username', '--docker-server', '-c', '--container'], attachedLongData: true }],
  ['cargo', { code: new RegExp(`^${long('config')}=`), codeNext: new RegExp(`^${long('config')}$`), data: ['-p', '--package', '--bin', '--example', '--test', '--bench', '--features', '-F', '--target', '--target-dir', '--manifest-path', '-j', '--jobs', '--profile', '--message-format', '--color', '-Z'] }],
  ['rustc', { code: /^-C.|^--codegen=/, codeNext: /^-C$|^--codegen$/, data: ['-o', '--out-dir', '--crate-name', '--edition', '-L', '--target', '--crate-type', '--emit', '-l', '--cfg'], responseFiles: true }],
  // GNU ed runs a file name that begins with `!` as a shell command.
  ['ed', { code: /^!/, data: ['-p', '--prompt'] }], ['red', { code: /^!/, data: ['-p', '--prompt'] }],
  ['perf', { code: new RegExp(`^${long('pre', 'post')}=`), codeNext: new RegExp(`^${long('pre', 'post')}$`), data: ['-o', '--output', '-e', '--event', '-p', '--pid', '-t', '--tid', '-C', '--cpu', '-r', '--repeat', '-I', '--interval-print'] }],
]);

/** Other names of the programs above (Debian's alternatives, distributions' builds). */
const OTHER_NAMES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(?:vim\.[a-z]+|rvim|rview|evim|eview|gview|editor|sensible-editor|vimx)$/, 'vim'],
  [/^(?:gdb-multiarch|gdb\.[a-z]+)$/, 'gdb'],
  [/^(?:gtar|bsdtar|tar\.[a-z]+)$/, 'tar'],
  [/^(?:pager|sensible-pager|more)$/, 'less'],
  [/^(?:make-first-existing-target|remake)$/, 'make'],
  [/^(?:gcc|g\+\+|cc|c\+\+|cpp|clang|clang\+\+)-[0-9.]+$|^x86_64-linux-gnu-(?:gcc|g\+\+)(?:-[0-9.]+)?$/, 'gcc'],
];

/** The option table for a program's base name, under any of its names. */
export function hazardOf(name: string): OptionHazard | undefined {
  const own = OPTION_HAZARDS.get(name);
  if (own !== undefined) return own;
  const other = OTHER_NAMES.find(([pattern]) => pattern.test(name));
  return other === undefined ? undefined : OPTION_HAZARDS.get(other[1]);
}

/** `/proc/self/environ`, `/proc/PID/task/TID/environ`: a process's environment, every value of a run among it. */
export function isEnvironPath(text: string): boolean {
  return /^\/proc\/[^/]+(?:\/task\/[^/]+)?\/environ$/.test(text.replace(/\/+/g, '/').replace(/\/\.(?=\/|$)/g, ''));
}
