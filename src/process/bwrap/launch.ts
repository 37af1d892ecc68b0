/*
 * How bubblewrap is started for a run: its options travel on a descriptor (`--args FD`), so that
 * nothing of the plan (hidden paths, runtime directories, the working directory) is on an argv:
 * not bubblewrap's, which is `/proc/1/cmdline` inside the sandbox, nor any other.
 *
 * Bind sources by descriptor. The plan checks a path (its real path, against the hidden list)
 * and bubblewrap mounts it later; in between, a path could change. So the process that spawns
 * bubblewrap opens every `--bind P P` and `--ro-bind P P` source itself (O_PATH: no read access
 * needed, a FIFO does not block), checks that the descriptor's inode is the one now at P (the
 * kernel's own name for it, /proc/self/fd/N, must be P: a followed symlink or a moved directory
 * shows another name), and hands bubblewrap the descriptor (`--bind-fd` / `--ro-bind-fd`). The
 * writable roots are fixed for the gateway and cannot be moved by any run (sandbox/paths.ts);
 * whatever bubblewrap then does by name, the mount check before the program starts compares
 * the result with the plan (verify.ts). The seccomp filter is a file opened the same way.
 *
 * The child's descriptors: FIRST (3) carries the options, then the sources in order. bubblewrap
 * closes each once it has used it; the caller writes the options, ends that pipe, and closes
 * its own copies of the sources once the child is spawned.
 */
import * as fs from 'node:fs';
import { ExecgateError } from '../../errors';
import type { SandboxCheck } from './verify';
import { renderBwrapOptions, type BwrapSpec } from './spec';

export interface SandboxLaunch {
  /** What starts bubblewrap: `[bwrap]`, or `[nsenter, ...its options, '--', bwrap]` for the shared network. */
  readonly launcher: readonly string[];
  /** What bubblewrap is told (paths and flags, never a value), rendered and handed over with `--args`. */
  readonly spec: BwrapSpec;
  /** What the gateway checks once the sandbox is set up, before the program may start. */
  readonly check: SandboxCheck;
}

export interface RenderedLaunch {
  /** The program to execute (the launcher's first word). */
  readonly file: string;
  /** Its arguments: the launcher's, `--args FIRST --`, then the program. */
  readonly args: string[];
  /** bubblewrap's options with every source replaced by a descriptor number, NUL-terminated. */
  readonly data: Buffer;
  /** The opened sources, in child descriptor order (FIRST + 1, FIRST + 2, ...). */
  readonly fds: number[];
  /** What each was opened from, and how (`bind`: checked by name; `file`: read as is). */
  readonly sources: ReadonlyArray<{ readonly path: string; readonly kind: 'bind' | 'file' }>;
}

/** The child descriptor that carries bubblewrap's options. */
export const ARGS_FD = 3;

/**
 * The whole step, with nothing from outside but `fs` and the spec's renderer: the spawn helper
 * (a separate Node process, src/programs/spawn-helper.js) requires this compiled module and runs
 * it too, on the launch it was sent as JSON.
 * Throws an Error with `code` EXECGATE_ERR_SANDBOX_PATH and `path` when a path changed.
 */
export function renderSandboxLaunch(fs: typeof import('node:fs'), launch: { launcher: readonly string[]; spec: BwrapSpec }, program: readonly string[]): RenderedLaunch {
  // O_PATH (Linux; Node's constants do not list it), and the kernel's own file systems, which
  // no run can rename.
  const oPath = 0o10000000;
  const first = ARGS_FD;
  const fixed = /^\/(proc|sys|dev)(\/|$)/;
  const fds: number[] = [];
  const sources: Array<{ path: string; kind: 'bind' | 'file' }> = [];
  let options: string[];
  try {
    options = renderBwrapOptions(launch.spec, {
      seccomp(path) {
        fds.push(fs.openSync(path, 'r'));
        sources.push({ path, kind: 'file' });
        return first + fds.length;
      },
      bind({ source, dest }) {
        if (source !== dest || source === '/' || fixed.test(source)) return undefined;
        const moved = (): Error => Object.assign(new Error(`${source} changed while its sandbox was being set up`), { code: 'EXECGATE_ERR_SANDBOX_PATH', path: source });
        let fd: number;
        try {
          fd = fs.openSync(source, oPath);
        } catch (error) {
          // Gone, or a component is no longer a directory, since the plan saw it: it changed
          // (a run renaming things, a file of a covered home directory removed meanwhile).
          const code = (error as { code?: unknown }).code;
          if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') throw moved();
          throw error;
        }
        fds.push(fd);
        sources.push({ path: source, kind: 'bind' });
        let name;
        try {
          name = fs.readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          name = undefined;
        }
        if (name !== source) throw moved();
        return first + fds.length;
      },
    });
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
  const data = Buffer.from(options.map((arg) => `${arg}\0`).join(''), 'utf8');
  return { file: launch.launcher[0], args: [...launch.launcher.slice(1), '--args', String(first), '--', ...program], data, fds, sources };
}

/** renderSandboxLaunch in this process, with a coded error for a path that changed. */
export function renderLaunch(launch: SandboxLaunch, program: readonly string[]): RenderedLaunch {
  try {
    return renderSandboxLaunch(fs, launch, program);
  } catch (error) {
    const path = (error as { path?: unknown }).path;
    if ((error as { code?: unknown }).code === 'EXECGATE_ERR_SANDBOX_PATH' && typeof path === 'string') throw changed(path);
    throw error;
  }
}

export function closeFds(fds: readonly number[]): void {
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
