/*
 * Does this process hold a descriptor above 2 that a child would inherit (no close-on-exec)?
 * Node opens every descriptor of its own close-on-exec, so such a descriptor came from outside
 * (`execgate run ... 200<secret`, a host that forked the gateway holding files open, a native
 * addon): only then must a run's shell be started by a bash that closes them first
 * (exec/prepare.ts), an exec that costs as much as the shell itself. Asked per run: the answer
 * can change while the process lives. Where /proc cannot say, the answer is yes.
 */
import { readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

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
    let info: string;
    try {
      info = readFileSync(`/proc/self/fdinfo/${name}`, 'latin1');
    } catch {
      continue; // closed since the listing (the listing's own descriptor, among others)
    }
    const flags = /^flags:\s*([0-7]+)/m.exec(info);
    if (!flags || (parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) return true;
  }
  return false;
}
