/*
 * Does this process hold a descriptor above 2 that a child would inherit (no close-on-exec)?
 * Node opens every descriptor of its own close-on-exec, so such a descriptor came from outside
 * (`execgate run ... 200<secret`, a host that forked the gateway holding files open, a native
 * addon): only then must a run's shell be started by a bash that closes them first
 * (plan/prepare.ts), an exec that costs as much as the shell itself. Asked per run, of every
 * descriptor, never cached: the answer changes while the process lives (node-pty's terminal
 * masters are not close-on-exec, so while a PTY run is going every other run must close them).
 * Where /proc cannot say, the answer is yes.
 */
import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';

/*
 * What closes them: a bash loop over /proc/self/fd. (No redirection on the loop: `exec` inside a
 * redirected compound command would make that redirection permanent.)
 */
export const CLOSE_FDS = 'for __execgate_fd in /proc/self/fd/*; do __execgate_fd=${__execgate_fd##*/}; [ "$__execgate_fd" -gt 2 ] && exec {__execgate_fd}>&-; done; unset __execgate_fd';

const HAS_BASH = existsSync('/bin/bash');

/**
 * The argv prefix that closes inherited descriptors and then execs the rest of the argv: a bash
 * when this process holds such a descriptor, nothing otherwise (or where there is no /bin/bash:
 * SECURITY.md says they pass there).
 */
export function getDescriptorCloser(): string[] {
  return HAS_BASH && hasInheritedDescriptors() ? ['/bin/bash', '--norc', '--noprofile', '-c', `${CLOSE_FDS}; exec "$@"`, 'execgate'] : [];
}

const O_CLOEXEC = 0o2000000;
// `pos:\t0\nflags:\t02100002\n...`: the flags are on the second line, well inside this.
const buffer = Buffer.alloc(128);

export function hasInheritedDescriptors(): boolean {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return true;
  }
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    let length: number;
    try {
      const info = openSync(`/proc/self/fdinfo/${name}`, 'r');
      try {
        length = readSync(info, buffer, 0, buffer.length, null);
      } finally {
        closeSync(info);
      }
    } catch {
      continue; // closed since the listing (the listing's own descriptor, among others)
    }
    const flags = /^flags:\s*([0-7]+)/m.exec(buffer.toString('latin1', 0, length));
    if (!flags || (parseInt(flags[1], 8) & O_CLOEXEC) === 0) return true;
  }
  return false;
}
