/*
 * The bubblewrap command line of one run. Mount order is the security argument: later mounts
 * cover earlier ones, so the file system goes in read-only first, then the private /tmp, then
 * what is writable, then what is read-only again inside it, and the hidden paths last, so that
 * nothing a policy makes writable can uncover a hidden path.
 *
 * Nothing secret is ever on this argv: paths and flags only. Resolved values travel in the
 * child's environment, which bubblewrap passes through to the shell unchanged.
 *
 *  - `--die-with-parent`: bubblewrap's init (PID 1 of the run's PID namespace) gets SIGKILL when
 *    the process that spawned the sandbox exits, and with PID 1 gone the kernel kills every
 *    process in the namespace: `setsid`, `nohup`, `env -i` daemons and SIGTERM-ignoring
 *    processes included. Without it bubblewrap's init outlives the run while children remain.
 *  - `--new-session` (pipes only): no way back to a terminal (TIOCSTI). A PTY run keeps its
 *    session so that the terminal stays its controlling terminal (job control, `read -s`, ^C).
 *  - `--cap-drop ALL`: a gateway running as root would otherwise hand the run root's
 *    capabilities, enough to unmount a hidden path.
 */
import type { FilesystemView } from './paths';
import { isInside } from './paths';

export interface BwrapInput {
  readonly view: FilesystemView;
  readonly cwd: string;
  /** A private network namespace for this run alone (no shared one to join). */
  readonly unshareNet: boolean;
  /** A PTY run keeps its session (see above). */
  readonly pty: boolean;
}

export const NAMESPACES: readonly string[] = Object.freeze(['mount', 'pid', 'ipc', 'uts']);

export function getBwrapArgs(input: BwrapInput): string[] {
  const { view } = input;
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  for (const path of view.writable) args.push('--bind', path, path);
  for (const path of view.readOnly) args.push('--ro-bind', path, path);
  for (const { path, directory } of view.hidden) {
    // Under the private /tmp and outside every writable bind, it is already out of sight.
    if (isInside(path, '/tmp') && !view.writable.some((w) => isInside(path, w))) continue;
    if (directory) args.push('--tmpfs', path);
    else args.push('--ro-bind', '/dev/null', path);
  }
  args.push('--chdir', input.cwd);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (input.unshareNet) args.push('--unshare-net');
  args.push('--die-with-parent', '--cap-drop', 'ALL');
  if (!input.pty) args.push('--new-session');
  return args;
}
