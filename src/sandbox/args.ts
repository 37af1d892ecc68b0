/*
 * The bubblewrap command line of one run. Mount order is the security argument: later mounts
 * cover earlier ones, so the file system goes in read-only first, then what is writable (with
 * the private temp directories), then what is read-only again inside it, then the kernel's own
 * file systems, and the hidden paths last, so that nothing a policy or a request's cwd makes
 * writable can uncover a hidden path, the host's /proc or its temp directory.
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
 *  - `--unshare-user --disable-userns`: the run gets a user namespace of its own in which no
 *    further user namespace can be made (the limit is 0). A nested user namespace hands its
 *    creator a full capability set over everything it then creates (`unshare -Urm`, a nested
 *    bubblewrap), which is what the other restrictions assume a run cannot have. The seccomp
 *    filter (`--seccomp`, scripts/generate-seccomp.py) refuses unshare(2), setns(2) and clone(2)
 *    with namespace flags as well, among the rest of its list.
 *  - /proc: bubblewrap's `--proc` mounts a fresh proc read-write, and uid 0 needs no capability
 *    to write most sysctls (the kernel compares the writer's uid with the global root uid):
 *    `kernel.core_pattern` set to `|/some/script` makes the host kernel run that script as root
 *    outside every namespace at the next crash. So the kernel-wide knobs are bound read-only
 *    (a bind mount cannot be undone without CAP_SYS_ADMIN) and the files that leak kernel state
 *    are covered, as OCI runtimes (runc, Docker) do. /sys stays read-only with the root bind.
 */
import { existsSync, statSync } from 'node:fs';
import type { FilesystemView } from './paths';
import type { SandboxCheck } from '../process/bwrap/verify';
import { isInside } from '../fs/paths';

export interface BwrapInput {
  readonly view: FilesystemView;
  readonly cwd: string;
  /** A private network namespace for this run alone (no shared one to join). */
  readonly unshareNet: boolean;
  /** A PTY run keeps its session (see above). */
  readonly pty: boolean;
  /** The system call filter to load (a file of BPF instructions), if there is one. */
  readonly seccomp?: string;
}

export interface BwrapSpec {
  /** bubblewrap's options, in order (no `--` and no program). */
  readonly options: readonly string[];
  /** What the sandbox must look like once set up (verify.ts), made from the same lists. */
  readonly check: SandboxCheck;
}

export const NAMESPACES: readonly string[] = Object.freeze(['mount', 'pid', 'ipc', 'uts', 'user']);

/** Kernel-wide knobs under /proc: read-only inside (runc's readonlyPaths). */
export const PROC_READ_ONLY: readonly string[] = Object.freeze(['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs']);
/** Kernel state under /proc and /sys: covered (runc's maskedPaths, plus the kernel log and symbols). */
export const PROC_MASKED: readonly string[] = Object.freeze([
  '/proc/acpi', '/proc/asound', '/proc/kcore', '/proc/keys', '/proc/key-users', '/proc/latency_stats',
  '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/proc/kmsg', '/proc/kallsyms',
  '/proc/config.gz', '/sys/firmware', '/sys/devices/virtual/powercap',
]);

let procMounts: { args: string[]; tmpfs: string[]; nullCovers: string[] } | undefined;

/**
 * The /proc and /sys mounts for this kernel. Only what exists can be a mount point (bubblewrap
 * cannot create a file in proc), and the kernel is the same for every run: computed once.
 */
function getKernelMounts(): { args: string[]; tmpfs: string[]; nullCovers: string[] } {
  if (procMounts) return procMounts;
  const args: string[] = [];
  const tmpfs: string[] = [];
  const nullCovers: string[] = [];
  for (const path of PROC_READ_ONLY) if (existsSync(path)) args.push('--ro-bind', path, path);
  for (const path of PROC_MASKED) {
    let directory: boolean;
    try {
      directory = statSync(path).isDirectory();
    } catch {
      continue;
    }
    if (directory) {
      args.push('--tmpfs', path, '--remount-ro', path);
      tmpfs.push(path);
    } else {
      args.push('--ro-bind', '/dev/null', path);
      nullCovers.push(path);
    }
  }
  procMounts = { args, tmpfs, nullCovers };
  return procMounts;
}

export function getProcMounts(): readonly string[] {
  return getKernelMounts().args;
}

export function getBwrapArgs(input: BwrapInput): string[] {
  return [...getBwrapSpec(input).options];
}

export function getBwrapSpec(input: BwrapInput): BwrapSpec {
  const { view } = input;
  const args = ['--ro-bind', '/', '/'];
  const kernel = getKernelMounts();
  const tmpfs: string[] = ['/dev', ...kernel.tmpfs];
  const hiddenDirs: string[] = [];
  const nullCovers: string[] = [...kernel.nullCovers];
  // The writable roots, parents first; a temp directory gets its private tmpfs right after the
  // roots that hold it (`cwd: /`) and before the roots inside it (a project under /tmp), so
  // that no run sees the host's temp directory: every gateway's runtime sockets live there, and
  // a run could swap one for its own listener.
  const mounts = [
    ...view.writable.map((path) => ({ path, tmpfs: false })),
    ...view.privateTmp.map((path) => ({ path, tmpfs: true })),
  ];
  const depth = (path: string): number => (path === '/' ? 0 : path.split('/').length - 1);
  mounts.sort((a, b) => depth(a.path) - depth(b.path) || Number(a.tmpfs) - Number(b.tmpfs));
  for (const { path, tmpfs: own } of mounts) {
    if (own) {
      args.push('--tmpfs', path);
      tmpfs.push(path);
    } else args.push('--bind', path, path);
  }
  // Ancestors of hidden and read-only paths inside a writable root: a mount point cannot be
  // renamed, so the names the later mounts cover stay the names of the real directories.
  for (const path of view.pinned) args.push('--bind', path, path);
  for (const path of view.readOnly) args.push('--ro-bind', path, path);
  // The kernel's file systems after every bind: a writable root that holds them (`cwd: /`) or
  // lies inside them (`cwd: /proc/sys/kernel`) would otherwise bring the host's /proc, /sys
  // or /dev back, writable.
  if (view.writable.some((w) => isInside('/sys', w) || isInside(w, '/sys'))) args.push('--ro-bind', '/sys', '/sys');
  args.push('--dev', '/dev', '--proc', '/proc', ...kernel.args);
  for (const { path, directory } of view.hidden) {
    // In a private temp directory and outside every writable root inside it: already out of sight.
    if (view.privateTmp.some((t) => isInside(path, t) && !view.writable.some((w) => w !== t && isInside(w, t) && isInside(path, w)))) continue;
    if (directory) {
      args.push('--tmpfs', path);
      tmpfs.push(path);
      hiddenDirs.push(path);
    } else {
      args.push('--ro-bind', '/dev/null', path);
      nullCovers.push(path);
    }
  }
  args.push('--chdir', input.cwd);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-user', '--disable-userns');
  if (input.unshareNet) args.push('--unshare-net');
  args.push('--die-with-parent', '--cap-drop', 'ALL');
  if (!input.pty) args.push('--new-session');
  if (input.seccomp !== undefined) args.push('--seccomp', input.seccomp);
  let writable: Array<{ path: string; id: string }> = [];
  try {
    writable = view.writable.map((path) => {
      const stats = statSync(path);
      return { path, id: `${stats.dev}:${stats.ino}` };
    });
  } catch {
    // Gone since the view was made: bubblewrap fails to bind it, and says so.
  }
  return Object.freeze({
    options: Object.freeze(args),
    check: Object.freeze({
      hiddenDirs: Object.freeze(hiddenDirs),
      nullCovers: Object.freeze(nullCovers),
      tmpfs: Object.freeze(tmpfs),
      mounted: Object.freeze([...new Set([...view.writable, ...view.pinned, ...view.readOnly])]),
      writable: Object.freeze(writable),
      binds: Object.freeze([]),
    }),
  });
}
