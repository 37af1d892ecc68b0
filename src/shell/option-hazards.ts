/*
 * Programs whose options hand a value to a shell or run it as a program (`tar --to-command=`,
 * `make --eval=`, `git -c alias.x=!...`, `scp -o ProxyCommand=`, `split --filter=`, `npx -c`,
 * `rsync -e`, `less +!cmd`, ...), as data for commands.ts, which reads each such command's words
 * with them (readOptionHazards), and for input-programs.ts, which follows a wrapper without an
 * option table to one of these as it does to a shell.
 *
 * Three ways a value reaches such an option: written in it (`--to-command=<<secret:x>>`, the
 * option's value), as the word after it (`tar -I <<secret:x>>`), or as a word of its own that
 * the program reads as an option (`tar -cf x <<secret:x>> f` with a value `--to-command=...`,
 * `python3 <<secret:x>>` with `-c...`): a word whose first characters are known only at run time
 * may begin with `-` (or `+` for less). So a word known only at run time where the program still
 * reads options refuses the rest of the command, unless it is the value of an option listed as
 * taking data (`git commit -m <<secret:x>>`, `zip -P <<secret:x>>`). Where options end: after
 * `--`, and for a program that does not permute (`permute: false`), at its first operand.
 */

export interface OptionHazard {
  /** A word (an option with its value attached, or a `-c` setting) whose value a shell or `exec` runs. */
  readonly code: RegExp;
  /** An option whose next word a shell or `exec` runs (tested on the option's own word). */
  readonly codeNext?: RegExp;
  /** An option whose next word is data: a word known only at run time there is not an option. */
  readonly dataNext?: RegExp;
  /** A word that makes every value of the text reachable as code (`git --config-env=KEY=VAR`). */
  readonly sink?: RegExp;
  /** Every operand is code: make's `NAME:=...` definitions and targets, socat's addresses. */
  readonly operandsAreCode?: boolean;
  /** Options may follow operands (GNU getopt's default); false: they end at the first operand. */
  readonly permute?: boolean;
  /** Options also start with `+` (less `+cmd`). */
  readonly plus?: boolean;
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

// git configuration whose value is a command: `alias.x=!...`, and every key git runs
// (`core.sshCommand`, `core.pager`, `pager.log`, `credential.helper`, `diff.x.command`,
// `filter.x.smudge`, `remote.origin.uploadpack`, `gpg.program`, `sendemail.smtpServer`, ...).
const GIT_CONFIG_CODE = String.raw`alias\.[^=]*=!|pager\.[^=]*=|(?:[^=]*\.)?(?:[a-z]*command|cmd|program|helper|driver|pager|editor|[a-z]*proxy|askpass|hookspath|[a-z]*hook|uploadpack|receivepack|clean|smudge|process|external|textconv|browser|fsmonitor|smtpserver|variant|tool)=`;

const MAKE: OptionHazard = {
  code: /^--ev[a-z]*=|^-E./,
  codeNext: /^-E$|^--ev[a-z]*$/,
  dataNext: /^-[A-Za-z]*[fCIoWjl]$|^--(?:file|makefile|directory|include-dir|old-file|assume-old|what-if|new-file|assume-new|jobs|load-average)$/,
  operandsAreCode: true,
  permute: true,
};
const SSH_COPY: OptionHazard = {
  code: /^(?:-o)?\s*(?:ProxyCommand|LocalCommand|KnownHostsCommand|RemoteCommand|PermitLocalCommand)/i,
  // `-o` is read with its value (the code pattern above): `-o IdentityFile=<<secret:x>>` is data.
  codeNext: /^-[A-Za-z0-9]*[SD]$/,
  dataNext: /^-[A-Za-z0-9]*[cFiJlPBRsX]$/,
  permute: false,
};
const NPM: OptionHazard = { code: new RegExp(`^${long('call')}=|^-c.`), codeNext: new RegExp(`^-c$|^${long('call')}$`), dataNext: /^--(?:prefix|registry|cache|userconfig|workspace|package|otp|tag|scope|loglevel)$|^-[pw]$/, permute: true };
// awk and sed run their program (the first operand, or `-e`/`-f`): a value given there is code
// by the text's own choice, as with `python -c` (SECURITY.md, not read); a value that lands where
// an option can stand (`awk <<secret:x>> f`, a value `--source=...`) is what is read here.
const NONE = /(?!)/;
const AWK: OptionHazard = { code: NONE, dataNext: /^-[A-Za-z]*[FvilWef]$|^--(?:field-separator|assign|include|load|source|exec|file)$/, permute: false };
const SED: OptionHazard = { code: NONE, dataNext: /^-[A-Za-z]*[lef]$|^--(?:line-length|expression|file)$/, permute: true };

export const OPTION_HAZARDS: ReadonlyMap<string, OptionHazard> = new Map<string, OptionHazard>([
  ['tar', {
    code: /^--(?:checkpoint-a[a-z-]*=exec|to-c[a-z-]*|use-c[a-z-]*|info-s[a-z-]*|new-v[a-z-]*|rsh-c[a-z-]*|rmt-c[a-z-]*)=|^-[A-Za-z]*[IF]./,
    codeNext: /^-[A-Za-z]*[IF]$|^--(?:to-c|use-c|info-s|new-v|rsh-c|rmt-c|checkpoint-a)[a-z-]*$/,
    dataNext: /^-[A-Za-z]*[fCTXbNgKLVH]$|^[A-Za-z]*f$|^--(?:file|directory|files-from|exclude-from|exclude|transform|xform|owner|group|mode|mtime|newer|after-date|label|format|blocking-factor|starting-file)$/,
    permute: true,
  }],
  ['make', MAKE], ['gmake', MAKE], ['bmake', MAKE],
  ['scp', SSH_COPY], ['sftp', SSH_COPY],
  ['zip', { code: new RegExp(`^${long('unzip-command')}=|^-TT.`), codeNext: new RegExp(`^-TT$|^${long('unzip-command')}$`), dataNext: /^-[A-Za-z]*[PbntOZ]$|^-tt$|^--(?:password|temp-path|suffixes|output-file|compression-method)$/, permute: true }],
  ['dpkg', { code: new RegExp(`^${long('pre-invoke', 'post-invoke')}=`), codeNext: new RegExp(`^${long('pre-invoke', 'post-invoke')}$`), dataNext: /^--(?:root|admindir|instdir|log|status-fd)$/, permute: true }],
  ['apt-get', { code: /Invoke|::Command|Pre-Install-Pkgs/i, dataNext: /^-[tc]$|^--(?:target-release|config-file)$/, permute: true }],
  ['apt', { code: /Invoke|::Command|Pre-Install-Pkgs/i, dataNext: /^-[tc]$|^--(?:target-release|config-file)$/, permute: true }],
  ['socat', { code: /(?:^|[,!])(?:SYSTEM|EXEC):/i, operandsAreCode: true, permute: false }],
  ['git', {
    code: new RegExp(`^(?:${GIT_CONFIG_CODE})|^${long('upload-pack', 'receive-pack', 'exec', 'extcmd', 'open-files-in-pager')}=|^-[xO].|^ext::`, 'i'),
    // `-c KEY=VALUE` is read with its value (the code pattern): `-c http.extraHeader=...<<secret:x>>`
    // is data, `-c <<secret:x>>` (the key known only at run time) may be anything.
    codeNext: new RegExp(`^(?:-u|-x|-O|${long('upload-pack', 'receive-pack', 'exec', 'extcmd', 'open-files-in-pager')})$`),
    dataNext: /^(?:-m|--message|-F|--file|-b|-B|--branch|-C|--author|--date|-t|--template|--reference|--depth|--since|--until|-n|--max-count|--format|--pretty|--grep|-e|--origin|--shallow-since|--separate-git-dir|--git-dir|--work-tree|--namespace|--push-option|-o)$/,
    // `--config-env=KEY=VAR` takes KEY's value from the variable VAR, which the text may set to
    // a value; `protocol.*.allow` (`ext::` runs a command named in the URL) makes a URL code.
    sink: new RegExp(`^${long('config-env')}(?:=|$)|^protocol\\.(?:[^=]*\\.)?allow=`, 'i'),
    // Subcommands none of whose options run a command or name a program: a value is data there.
    // Others (clone, fetch, pull, push, ls-remote, archive, rebase, grep, difftool, bisect,
    // submodule, filter-branch, send-email, merge -s, help -b, ...) read it as a possible option.
    dataAfter: /^(?:status|log|show|diff|add|commit|checkout|switch|branch|tag|rev-parse|rev-list|describe|blame|stash|reset|restore|rm|mv|shortlog|ls-files|ls-tree|cat-file|hash-object|notes|reflog|merge-base|name-rev|for-each-ref|show-ref|symbolic-ref|update-ref|version|var|check-ignore|check-attr|count-objects|whatchanged|range-diff|cherry|stripspace|interpret-trailers)$/,
    permute: true,
  }],
  ['split', { code: new RegExp(`^${long('filter')}=`), codeNext: new RegExp(`^${long('filter')}$`), dataNext: /^-[A-Za-z]*[abCln]$|^-t$|^--(?:bytes|line-bytes|lines|number|additional-suffix|suffix-length|separator)$/, permute: true }],
  ['npm', NPM], ['npx', NPM],
  ['rsync', { code: new RegExp(`^${long('rsh', 'rsync-path')}=|^-[A-Za-z]*e.`), codeNext: new RegExp(`^-[A-Za-z]*e$|^${long('rsh', 'rsync-path')}$`), dataNext: /^-[A-Za-z]*[fTBM]$|^--(?:password-file|exclude|include|exclude-from|include-from|files-from|filter|chmod|chown|log-file|temp-dir|partial-dir|backup-dir|suffix|bwlimit|port|timeout|contimeout|compare-dest|copy-dest|link-dest)$/, permute: true }],
  ['sort', { code: new RegExp(`^${long('compress-program')}=`), codeNext: new RegExp(`^${long('compress-program')}$`), dataNext: /^-[A-Za-z]*[kotST]$|^--(?:key|output|field-separator|buffer-size|temporary-directory|files0-from|parallel)$/, permute: true }],
  ['less', { code: new RegExp(`^\\+.*!|^${long('lesskey-src', 'lesskey-file')}=`), codeNext: new RegExp(`^${long('lesskey-src', 'lesskey-file')}$`), dataNext: /^-[A-Za-z]*[bhjkKoOpPTxyz#]$|^--(?:log-file|tag|pattern|prompt|tabs|window)$/, permute: true, plus: true }],
  ['man', { code: new RegExp(`^${long('pager', 'html')}=|^-[PH].`), codeNext: new RegExp(`^-[PH]$|^${long('pager', 'html')}$`), dataNext: /^-[A-Za-z]*[CMSLmpeER]$|^--(?:config-file|manpath|sections|locale|systems|extension|encoding)$/, permute: true }],
  ['wget', { code: new RegExp(`^${long('use-askpass', 'execute')}=|^-e.`), codeNext: new RegExp(`^-e$|^${long('use-askpass', 'execute')}$`), dataNext: /^-[A-Za-z]*[OoaPUiBT]$|^--(?:header|user|password|http-user|http-password|ftp-user|ftp-password|proxy-user|proxy-password|post-data|body-data|user-agent|output-document|output-file|directory-prefix|input-file|base|referer|load-cookies|save-cookies|method|timeout)$/, permute: true }],
  ['awk', AWK], ['gawk', AWK], ['mawk', AWK], ['nawk', AWK],
  ['sed', SED], ['gsed', SED],
]);
