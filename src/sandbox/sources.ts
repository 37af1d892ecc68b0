/*
 * Bind sources by descriptor. The plan checks a path (its real path, against the hidden list)
 * and bubblewrap mounts it later; in between, a concurrent run that can write an ancestor of
 * the path (a background run in a parent directory of the next run's cwd) can swap a component
 * for a symlink to the state directory, and bubblewrap, mounting by name, would follow it. So
 * the process that spawns bubblewrap opens every `--bind P P` and `--ro-bind P P` source itself
 * (O_PATH: no read access needed, a FIFO does not block), checks that the descriptor's
 * inode is the one now at P (the kernel's own name for it, /proc/self/fd/N, must be P: a
 * followed symlink or a moved directory shows another name), and hands bubblewrap the
 * descriptor (`--bind-fd` / `--ro-bind-fd`): what is mounted is what was checked.
 *
 * The descriptors go to the child as its fds 3, 4, ... (after stdio); bubblewrap closes each
 * once it has mounted it, so the command never holds one. The caller closes its own copies
 * once the child is spawned.
 */
import * as fs from 'node:fs';
import { ExecgateError } from '../errors';

export interface BindSources {
  /** The argv with every path source replaced by a descriptor number. */
  readonly args: string[];
  /** The descriptors, in child fd order (3, 4, ...: right after stdio). */
  readonly fds: number[];
  /** The paths they were opened from, in the same order. */
  readonly paths: string[];
}

/**
 * The whole step, with nothing from outside but `fs`: the spawn helper (a separate Node process
 * fed its program as text) runs this very function's source (see exec/spawner/program.ts).
 * Throws an Error with `code` EXECGATE_ERR_SANDBOX_PATH and `path` when a path changed.
 */
export function openSources(fs: typeof import('node:fs'), args: readonly string[], end: number): BindSources {
  // O_PATH (Linux; Node's constants do not list it), the first fd after stdio, and the kernel's
  // own file systems, which no run can rename.
  const oPath = 0o10000000;
  const first = 3;
  const fixed = /^\/(proc|sys|dev)(\/|$)/;
  const out = [...args];
  const fds: number[] = [];
  const paths: string[] = [];
  try {
    for (let i = 0; i < end; i++) {
      const option = out[i];
      const source = out[i + 1];
      if ((option !== '--bind' && option !== '--ro-bind') || source === undefined || source !== out[i + 2] || source === '/' || fixed.test(source)) continue;
      const fd = fs.openSync(source, oPath);
      fds.push(fd);
      paths.push(source);
      let name;
      try {
        name = fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        name = undefined;
      }
      if (name !== source) throw Object.assign(new Error(`${source} changed while its sandbox was being set up`), { code: 'EXECGATE_ERR_SANDBOX_PATH', path: source });
      out[i] = option === '--bind' ? '--bind-fd' : '--ro-bind-fd';
      out[i + 1] = String(first + fds.length - 1);
      i += 2;
    }
  } catch (error) {
    for (const fd of fds) {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
    }
    throw error;
  }
  return { args: out, fds, paths };
}

/** Where in `args` bubblewrap's own options end: `end` (its `--`). */
export function openBindSources(args: readonly string[], end = args.length): BindSources {
  try {
    return openSources(fs, args, end);
  } catch (error) {
    const path = (error as { path?: unknown }).path;
    if ((error as { code?: unknown }).code === 'EXECGATE_ERR_SANDBOX_PATH' && typeof path === 'string') throw changed(path);
    throw error;
  }
}

export function closeBindSources(fds: readonly number[]): void {
  for (const fd of fds) {
    try {
      fs.closeSync(fd);
    } catch {
      // already closed
    }
  }
}

export function changed(path: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_SANDBOX_PATH',
    `The path ${path} changed while its sandbox was being set up (a component was renamed or replaced, perhaps by another run). Nothing was run; run the command again, and look for what renames it.`,
    { path },
  );
}
