/*
 * What bubblewrap is told for one run, as data: the mounts in order, the namespaces, the working
 * directory, the session and the system call filter. sandbox/args.ts decides it from the policy,
 * the egress step appends its mounts, and this module alone turns it into bubblewrap's options
 * (`renderBwrapOptions`); launch.ts renders it the same way with bind sources replaced by the
 * descriptors it opened. Nothing else reads or writes bubblewrap's option syntax, so there is
 * no argv to parse back: the warm pool and the file tools key their sandboxes by the spec.
 *
 * Order is meaning for mounts only (a later mount covers an earlier one, sandbox/args.ts says
 * why the order is what it is); the other options are global and are rendered after them in a
 * fixed order, so that one spec has one rendering.
 */
import { createHash } from 'node:crypto';

export type BwrapMount =
  /** `--bind SRC DEST` / `--ro-bind SRC DEST`. */
  | { readonly kind: 'bind'; readonly source: string; readonly dest: string; readonly readOnly: boolean }
  /** `[--perms MODE] --tmpfs PATH`. */
  | { readonly kind: 'tmpfs'; readonly path: string; readonly mode?: number }
  /** `--dev PATH`: a minimal /dev of the sandbox's own. */
  | { readonly kind: 'dev'; readonly path: string }
  /** `--proc PATH`: the run's own proc. */
  | { readonly kind: 'proc'; readonly path: string }
  /** `--symlink TARGET PATH`. */
  | { readonly kind: 'symlink'; readonly target: string; readonly path: string }
  /** `--remount-ro PATH`: once every mount point in it exists. */
  | { readonly kind: 'remount-ro'; readonly path: string };

/** The namespaces bubblewrap can unshare, in the order they are rendered. */
export type BwrapNamespace = 'pid' | 'ipc' | 'uts' | 'cgroup-try' | 'user' | 'net';
const NAMESPACE_ORDER: readonly BwrapNamespace[] = ['pid', 'ipc', 'uts', 'cgroup-try', 'user', 'net'];

export interface BwrapSpec {
  readonly mounts: readonly BwrapMount[];
  /** Namespaces of the run's own (`--unshare-*`). */
  readonly unshare: readonly BwrapNamespace[];
  /** No further user namespace inside (`--disable-userns`; needs `user` in `unshare`). */
  readonly disableUserns: boolean;
  /** The working directory inside. */
  readonly chdir: string;
  /** The sandbox dies with the process that spawned it (`--die-with-parent`). */
  readonly dieWithParent: boolean;
  /** Every capability dropped (`--cap-drop ALL`). */
  readonly dropCapabilities: boolean;
  /** A session of its own, with no way back to a terminal (`--new-session`). */
  readonly newSession: boolean;
  /** A file of BPF instructions to load as the system call filter (`--seccomp`). */
  readonly seccomp?: string;
}

/**
 * How a bind's or the filter's source is named on the rendered command line: by path (the
 * default), or by a descriptor number that launch.ts opened (`--bind-fd` / `--ro-bind-fd`, a
 * seccomp descriptor).
 */
export interface SourceNaming {
  bind?(mount: Extract<BwrapMount, { kind: 'bind' }>): number | undefined;
  seccomp?(path: string): number;
}

function renderMount(mount: BwrapMount, naming: SourceNaming, out: string[]): void {
  switch (mount.kind) {
    case 'bind': {
      const fd = naming.bind?.(mount);
      if (fd === undefined) out.push(mount.readOnly ? '--ro-bind' : '--bind', mount.source, mount.dest);
      else out.push(mount.readOnly ? '--ro-bind-fd' : '--bind-fd', String(fd), mount.dest);
      return;
    }
    case 'tmpfs':
      if (mount.mode !== undefined) out.push('--perms', mount.mode.toString(8).padStart(4, '0'));
      out.push('--tmpfs', mount.path);
      return;
    case 'dev':
      out.push('--dev', mount.path);
      return;
    case 'proc':
      out.push('--proc', mount.path);
      return;
    case 'symlink':
      out.push('--symlink', mount.target, mount.path);
      return;
    case 'remount-ro':
      out.push('--remount-ro', mount.path);
      return;
  }
}

/** Mounts alone, as bubblewrap options (tests that start a bare bubblewrap use it for the egress files). */
export function renderMounts(mounts: readonly BwrapMount[]): string[] {
  const out: string[] = [];
  for (const mount of mounts) renderMount(mount, {}, out);
  return out;
}

/** The spec as bubblewrap's options, in order (no `--` and no program). */
export function renderBwrapOptions(spec: BwrapSpec, naming: SourceNaming = {}): string[] {
  const out: string[] = [];
  for (const mount of spec.mounts) renderMount(mount, naming, out);
  out.push('--chdir', spec.chdir);
  for (const namespace of NAMESPACE_ORDER) if (spec.unshare.includes(namespace)) out.push(`--unshare-${namespace}`);
  if (spec.disableUserns) out.push('--disable-userns');
  if (spec.dieWithParent) out.push('--die-with-parent');
  if (spec.dropCapabilities) out.push('--cap-drop', 'ALL');
  if (spec.newSession) out.push('--new-session');
  if (spec.seccomp !== undefined) out.push('--seccomp', naming.seccomp ? String(naming.seccomp(spec.seccomp)) : spec.seccomp);
  return out;
}

/**
 * A digest of the launcher and the spec: two runs with the same key get the same sandbox.
 * `withoutChdir`: the warm pool's key, whose waiting shell enters the run's directory itself.
 */
export function getSpecKey(launcher: readonly string[], spec: BwrapSpec, options: { withoutChdir?: boolean } = {}): string {
  const keyed = options.withoutChdir ? { ...spec, chdir: '' } : spec;
  return createHash('sha256').update(JSON.stringify([launcher, renderBwrapOptions(keyed)])).digest('hex');
}
