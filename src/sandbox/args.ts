/*
 * What bubblewrap is told for one run (a BwrapSpec, process/bwrap/spec.ts), and the mount check
 * made from the same lists. Mount order is the security argument: later mounts
 * cover earlier ones, so the file system goes in read-only first, then what is writable (with
 * the private temp directories), then what is read-only again inside it, then the kernel's own
 * file systems, and the hidden paths last, so that nothing a policy or a request's cwd makes
 * writable can uncover a hidden path, the host's /proc or its temp directory.
 *
 * Nothing secret is ever in the spec: paths and flags only. Resolved values travel in the
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
import type { BwrapMount, BwrapNamespace, BwrapSpec } from '../process/bwrap/spec';
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

export interface SandboxSpec {
  /** What bubblewrap is told. */
  readonly spec: BwrapSpec;
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

interface KernelMounts { readonly mounts: readonly BwrapMount[]; readonly tmpfs: readonly string[]; readonly nullCovers: readonly string[] }
let kernelMounts: KernelMounts | undefined;

const roBind = (source: string, dest = source): BwrapMount => ({ kind: 'bind', source, dest, readOnly: true });
const bind = (path: string): BwrapMount => ({ kind: 'bind', source: path, dest: path, readOnly: false });

/**
 * The /proc and /sys mounts for this kernel. Only what exists can be a mount point (bubblewrap
 * cannot create a file in proc), and the kernel is the same for every run: computed once.
 */
export function getKernelMounts(): KernelMounts {
  if (kernelMounts) return kernelMounts;
  const mounts: BwrapMount[] = [];
  const tmpfs: string[] = [];
  const nullCovers: string[] = [];
  for (const path of PROC_READ_ONLY) if (existsSync(path)) mounts.push(roBind(path));
  for (const path of PROC_MASKED) {
    let directory: boolean;
    try {
      directory = statSync(path).isDirectory();
    } catch {
      continue;
    }
    if (directory) {
      mounts.push({ kind: 'tmpfs', path }, { kind: 'remount-ro', path });
      tmpfs.push(path);
    } else {
      mounts.push(roBind('/dev/null', path));
      nullCovers.push(path);
    }
  }
  kernelMounts = Object.freeze({ mounts: Object.freeze(mounts), tmpfs: Object.freeze(tmpfs), nullCovers: Object.freeze(nullCovers) });
  return kernelMounts;
}

export function getSandboxSpec(input: BwrapInput): SandboxSpec {
  const { view } = input;
  const mounts: BwrapMount[] = [roBind('/')];
  const kernel = getKernelMounts();
  const tmpfs: string[] = ['/dev', ...kernel.tmpfs];
  const hiddenDirs: string[] = [];
  const nullCovers: string[] = [...kernel.nullCovers];
  // Directories holding hidden files that no run may write (paths.ts, CoveredDir): a tmpfs of
  // the sandbox's own right after the root, each other entry at its own name, the hidden names
  // absent. Every other mount of the plan lies deeper or elsewhere and comes after; the tmpfs
  // is made read-only once every mount point in it exists (at the end).
  const covered = view.covered ?? [];
  const coveredBinds: string[] = [];
  const absent = new Set(covered.flatMap((c) => c.absent));
  for (const cover of covered) {
    mounts.push({ kind: 'tmpfs', path: cover.path, mode: cover.mode });
    tmpfs.push(cover.path);
    for (const path of cover.binds) {
      mounts.push(roBind(path));
      coveredBinds.push(path);
    }
    for (const { path, target } of cover.symlinks) mounts.push({ kind: 'symlink', target, path });
  }
  // The writable roots, parents first; a temp directory gets its private tmpfs right after the
  // roots that hold it (`cwd: /`) and before the roots inside it (a project under /tmp), so
  // that no run sees the host's temp directory: every gateway's runtime sockets live there, and
  // a run could swap one for its own listener.
  const roots = [
    ...view.writable.map((path) => ({ path, tmpfs: false })),
    ...view.privateTmp.map((path) => ({ path, tmpfs: true })),
  ];
  const depth = (path: string): number => (path === '/' ? 0 : path.split('/').length - 1);
  roots.sort((a, b) => depth(a.path) - depth(b.path) || Number(a.tmpfs) - Number(b.tmpfs));
  for (const { path, tmpfs: own } of roots) {
    if (own) {
      mounts.push({ kind: 'tmpfs', path });
      tmpfs.push(path);
    } else mounts.push(bind(path));
  }
  // Ancestors of hidden and read-only paths inside a writable root: a mount point cannot be
  // renamed, so the names the later mounts cover stay the names of the real directories.
  for (const path of view.pinned) mounts.push(bind(path));
  for (const path of view.readOnly) mounts.push(roBind(path));
  // The kernel's file systems after every bind: a writable root that holds them (`cwd: /`) or
  // lies inside them (`cwd: /proc/sys/kernel`) would otherwise bring the host's /proc, /sys
  // or /dev back, writable.
  if (view.writable.some((w) => isInside('/sys', w) || isInside(w, '/sys'))) mounts.push(roBind('/sys'));
  mounts.push({ kind: 'dev', path: '/dev' }, { kind: 'proc', path: '/proc' }, ...kernel.mounts);
  for (const { path, directory } of view.hidden) {
    if (absent.has(path)) continue;
    // In a private temp directory and outside every writable root inside it: already out of sight.
    if (view.privateTmp.some((t) => isInside(path, t) && !view.writable.some((w) => w !== t && isInside(w, t) && isInside(path, w)))) continue;
    if (directory) {
      mounts.push({ kind: 'tmpfs', path });
      tmpfs.push(path);
      hiddenDirs.push(path);
    } else {
      mounts.push(roBind('/dev/null', path));
      nullCovers.push(path);
    }
  }
  for (const cover of covered) mounts.push({ kind: 'remount-ro', path: cover.path });
  const unshare: BwrapNamespace[] = ['pid', 'ipc', 'uts', 'cgroup-try', 'user'];
  if (input.unshareNet) unshare.push('net');
  const spec: BwrapSpec = {
    mounts: Object.freeze(mounts.map((mount) => Object.freeze(mount))),
    unshare: Object.freeze(unshare),
    disableUserns: true,
    chdir: input.cwd,
    dieWithParent: true,
    dropCapabilities: true,
    newSession: !input.pty,
    ...(input.seccomp !== undefined ? { seccomp: input.seccomp } : {}),
  };
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
    spec: Object.freeze(spec),
    check: Object.freeze({
      hiddenDirs: Object.freeze(hiddenDirs),
      nullCovers: Object.freeze(nullCovers),
      tmpfs: Object.freeze(tmpfs),
      mounted: Object.freeze([...new Set([...view.writable, ...view.pinned, ...view.readOnly, ...coveredBinds])]),
      writable: Object.freeze(writable),
      binds: Object.freeze([]),
      covers: Object.freeze(covered.map((c) => Object.freeze({ path: c.path, names: c.names, absent: c.absent }))),
    }),
  });
}
