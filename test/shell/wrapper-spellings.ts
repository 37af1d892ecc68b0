/*
 * Programs that run another command, each with the option spellings its own parser accepts:
 * short clusters, attached and separate values, long options with `=` and with a separate value,
 * unambiguous abbreviations of long options, options after operands where GNU getopt permutes
 * them, and `--`. su, runuser and script permute their arguments (GNU getopt), so a word of the
 * wrapped command that starts with `-` is theirs unless `--` comes first. `CMD` stands for the wrapped command's words, `SCRIPT` for a (quoted) script the
 * program hands to a shell. `runs: false` marks programs that are not installed here or do not
 * end on their own (watch); those are checked against the reader only.
 */
export interface Spelling {
  readonly program: string;
  readonly template: string;
  readonly runs: boolean;
}

const table: Array<[program: string, runs: boolean, templates: string[]]> = [
  ['env', true, [
    'env CMD', 'env -u X CMD', 'env -uX CMD', 'env --unset=X CMD', 'env --unset X CMD', 'env --uns=X CMD', 'env -C / CMD', 'env --chdir=/ CMD',
    'env -i PATH="$PATH" LOG="$LOG" CMD', 'env - PATH="$PATH" LOG="$LOG" CMD', 'env -- CMD', 'env X=1 Y=2 CMD', 'env --block-signal CMD', 'env --default-signal=INT CMD',
    'env -v CMD', 'env -S SCRIPT', 'env -SSCRIPT', 'env --split-string=SCRIPT', 'env --split-string SCRIPT', 'env --spl=SCRIPT', 'env -vS SCRIPT',
  ]],
  ['nice', true, ['nice CMD', 'nice -n 1 CMD', 'nice -n1 CMD', 'nice --adjustment=1 CMD', 'nice --adjustment 1 CMD', 'nice --adj=1 CMD', 'nice -1 CMD', 'nice -- CMD']],
  ['timeout', true, [
    'timeout 5 CMD', 'timeout -s KILL 5 CMD', 'timeout -sKILL 5 CMD', 'timeout --signal=KILL 5 CMD', 'timeout --signal KILL 5 CMD', 'timeout --sig=KILL 5 CMD',
    'timeout -k 1 5 CMD', 'timeout -k1 5 CMD', 'timeout --kill-after=1 5 CMD', 'timeout -v 5 CMD', 'timeout -vs KILL 5 CMD', 'timeout --preserve-status 5 CMD', 'timeout --foreground 5 CMD', 'timeout -- 5 CMD',
  ]],
  ['stdbuf', true, ['stdbuf -oL CMD', 'stdbuf -o L CMD', 'stdbuf --output=L CMD', 'stdbuf --output L CMD', 'stdbuf --out=L CMD', 'stdbuf -i0 -e0 CMD', 'stdbuf -oL -- CMD']],
  ['nohup', true, ['nohup CMD', 'nohup -- CMD']],
  ['setsid', true, ['setsid -w CMD', 'setsid --wait CMD', 'setsid --wa CMD', 'setsid -w -- CMD']],
  ['flock', true, [
    'flock .lock CMD', 'flock -w 5 .lock CMD', 'flock -w5 .lock CMD', 'flock --timeout=5 .lock CMD', 'flock --timeout 5 .lock CMD', 'flock --wait 5 .lock CMD',
    'flock -x .lock CMD', 'flock -s .lock CMD', 'flock -E 3 .lock CMD', 'flock -E3 .lock CMD', 'flock -o .lock CMD', 'flock -n .lock CMD', 'flock -- .lock CMD',
    // flock takes `-c` only after the file, as a word of its own.
    'flock .lock -c SCRIPT', 'flock .lock --command SCRIPT', 'flock -w 5 .lock -c SCRIPT', 'flock -x .lock -c SCRIPT', 'flock -xn .lock --command SCRIPT',
  ]],
  ['xargs', true, [
    'xargs CMD </dev/null', 'xargs -n1 CMD </dev/null', 'xargs -n 1 CMD </dev/null', 'xargs --max-args=1 CMD </dev/null', 'xargs --max-args 1 CMD </dev/null',
    'xargs -0 CMD </dev/null', 'xargs -d , CMD </dev/null', 'xargs -d, CMD </dev/null', 'xargs -P1 CMD </dev/null', 'xargs -a /dev/null CMD', 'xargs --arg-file=/dev/null CMD',
    'xargs -I{} CMD {} <<< x', 'xargs -I {} CMD {} <<< x', 'xargs -IXX CMD XX <<< x', 'xargs -i CMD {} <<< x', 'xargs --replace CMD {} <<< x', 'xargs --replace=XX CMD XX <<< x',
    'xargs --rep CMD {} <<< x', 'xargs -L1 CMD <<< x', 'xargs -l CMD <<< x', 'xargs -E END CMD </dev/null', 'xargs -e CMD </dev/null', 'xargs --eof=END CMD </dev/null', 'xargs -- CMD </dev/null',
    'xargs -I{} sh -c SCRIPT <<< x', 'xargs sh -c SCRIPT </dev/null',
  ]],
  ['find', true, [
    'find . -maxdepth 0 -exec CMD \\;', 'find . -maxdepth 0 -exec CMD {} \\;', 'find . -maxdepth 0 -exec CMD {} +', 'find . -maxdepth 0 -execdir CMD \\;',
    'find . -maxdepth 0 -exec sh -c SCRIPT \\;', 'find . -maxdepth 0 -exec sh -c SCRIPT sh {} \\;',
  ]],
  ['chroot', true, ['chroot / CMD', 'chroot --userspec=0:0 / CMD', 'chroot --userspec 0:0 / CMD', 'chroot --groups=0 / CMD', 'chroot --skip-chdir / CMD', 'chroot -- / CMD']],
  ['unshare', true, [
    'unshare CMD', 'unshare -f CMD', 'unshare --fork CMD', 'unshare -m CMD', 'unshare -m --propagation private CMD', 'unshare -m --propagation=private CMD',
    'unshare --mount --propagation unchanged CMD', 'unshare --prop=private -m CMD', 'unshare -U CMD', 'unshare -U --setgroups deny CMD', 'unshare -r CMD', 'unshare -- CMD',
  ]],
  ['runuser', true, [
    'runuser -u root CMD', 'runuser -uroot CMD', 'runuser -u root -- CMD', 'runuser --user=root CMD', 'runuser --user root CMD', 'runuser --us=root CMD',
    'runuser root -c SCRIPT', 'runuser -c SCRIPT root', 'runuser -cSCRIPT root', 'runuser --command=SCRIPT root', 'runuser root --command SCRIPT', 'runuser root --comm SCRIPT',
    'runuser -m root -c SCRIPT', 'runuser root -- -c SCRIPT', 'runuser --session-command=SCRIPT root',
  ]],
  ['su', true, [
    'su -c SCRIPT', 'su root -c SCRIPT', 'su -c SCRIPT root', 'su -cSCRIPT', 'su --command=SCRIPT', 'su --command SCRIPT root', 'su --comm SCRIPT', 'su root --command=SCRIPT',
    'su -m -c SCRIPT', 'su -mc SCRIPT', 'su -s /bin/sh -c SCRIPT', 'su -s/bin/sh root -c SCRIPT', 'su root -- -c SCRIPT', 'su --session-command SCRIPT root',
  ]],
  ['script', true, [
    'script -qc SCRIPT /dev/null', 'script -q -c SCRIPT /dev/null', 'script -c SCRIPT -q /dev/null', 'script /dev/null -qc SCRIPT', 'script -q /dev/null -c SCRIPT',
    'script --command=SCRIPT -q /dev/null', 'script --command SCRIPT -q /dev/null', 'script --comm SCRIPT -q /dev/null', 'script -eqc SCRIPT /dev/null',
    'script -q -E never -c SCRIPT /dev/null', 'script -qE never -c SCRIPT /dev/null', 'script -O /dev/null -qc SCRIPT',
  ]],
  ['watch', false, [
    'watch SCRIPT', 'watch -n 1 SCRIPT', 'watch -n1 SCRIPT', 'watch --interval=1 SCRIPT', 'watch --interval 1 SCRIPT', 'watch -d SCRIPT', 'watch --differences SCRIPT',
    'watch -d=permanent SCRIPT', 'watch -tn 1 SCRIPT', 'watch -q 3 SCRIPT', 'watch -x CMD', 'watch --exec CMD', 'watch -n 1 -x CMD', 'watch -xn 1 CMD',
  ]],
  ['sudo', false, [
    'sudo CMD', 'sudo -u root CMD', 'sudo -uroot CMD', 'sudo --user=root CMD', 'sudo --user root CMD', 'sudo -E CMD', 'sudo --preserve-env CMD', 'sudo --preserve-env=PATH CMD',
    'sudo -H -u root CMD', 'sudo -Hu root CMD', 'sudo -D / CMD', 'sudo --chdir=/ CMD', 'sudo -g root CMD', 'sudo -n CMD', 'sudo -- CMD', 'sudo -s SCRIPT', 'sudo -i SCRIPT',
    'sudo --shell SCRIPT', 'sudo --login SCRIPT', 'sudo -u root -s SCRIPT',
  ]],
  ['doas', false, ['doas CMD', 'doas -u root CMD', 'doas -uroot CMD', 'doas -n CMD', 'doas -a style CMD', 'doas -- CMD', 'doas -s SCRIPT']],
];

export const SPELLINGS: readonly Spelling[] = table.flatMap(([program, runs, templates]) => templates.map((template) => ({ program, template, runs })));

/** The ssh spellings: the command line after the host is the remote shell's; `-o ProxyCommand` is a local script. */
export const SSH_REMOTE = ['ssh host CMD', 'ssh -p 22 host CMD', 'ssh -p22 host CMD', 'ssh host -p 22 CMD', 'ssh -l me host CMD', 'ssh -t host CMD', 'ssh -- host CMD', 'ssh -o BatchMode=yes host CMD'];
export const SSH_LOCAL = ['ssh -o ProxyCommand=SCRIPT host', 'ssh -oProxyCommand=SCRIPT host', 'ssh -o LocalCommand=SCRIPT -o PermitLocalCommand=yes host', 'ssh host -o ProxyCommand=SCRIPT'];

const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** The template with `command` in the place of CMD or SCRIPT (quoted as one word for SCRIPT). */
export function fill(template: string, command: string): string {
  return template.replace('CMD', command).replace('SCRIPT', quote(command));
}

/** The template with a word that holds a reference in the place of CMD's argument or SCRIPT. */
export function fillToken(template: string, token: string): string {
  return template.replace('CMD', `t1 ${token}`).replace('SCRIPT', `"${token}"`);
}
