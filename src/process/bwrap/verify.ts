/*
 * The mount check: what bubblewrap set up, compared with the plan, before the run's program
 * starts. Every sandboxed run begins with a gate (gate.ts) that holds it once the sandbox exists;
 * the gateway reads the sandbox's mount table through /proc while nothing of the run has started,
 * and lets it go on only when the table is what the plan says. bubblewrap mounts some paths by
 * name; the plan makes sure no run can move those names (sandbox/paths.ts), and this check turns
 * any way around that, today's or a future one, into a refusal instead of a leak.
 *
 * What must hold (mount points as the sandbox sees them):
 *   - every mount of a host file system shows, at its mount point, the host path of that same
 *     name (bubblewrap binds P on P; a copy of a host submount sits where the host has it), except
 *     /dev/null over a hidden file, the egress proxy's files at their fixed place, and the run's
 *     terminal as /dev/console;
 *   - every file system of the sandbox's own is one the plan makes: a tmpfs where the plan puts
 *     one (hidden directories, the private /tmp, /dev, masked /proc directories), its proc, devpts;
 *   - each hidden directory is that tmpfs, and empty; each hidden file is /dev/null;
 *   - every path the plan binds is a mount point (a host path deleted since goes with its mount);
 *   - each writable root is the directory (device and inode) the plan was made for;
 *   - a run that joins the gateway's shared network namespace is in that namespace.
 * A mismatch is described in words (for the error and the audit record) and nothing runs.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isInside } from '../../fs/paths';

export interface SandboxCheck {
  /** Directories the sandbox hides: an empty tmpfs of its own at each. */
  readonly hiddenDirs: readonly string[];
  /** Files covered by /dev/null (hidden files and masked kernel files). */
  readonly nullCovers: readonly string[];
  /** Every place the plan mounts a tmpfs of the sandbox's own. */
  readonly tmpfs: readonly string[];
  /** Every path the plan binds onto itself (writable roots, pinned and read-only paths): each is a mount point. */
  readonly mounted: readonly string[];
  /** Writable roots and their identity (`dev:ino`) when the plan was made. */
  readonly writable: ReadonlyArray<{ readonly path: string; readonly id: string }>;
  /** Binds whose mount point is not their source path (the egress proxy's files). */
  readonly binds: ReadonlyArray<{ readonly source: string; readonly dest: string }>;
  /**
   * Directories replaced by a tmpfs of the sandbox's own (paths.ts, CoveredDir): each must be
   * that tmpfs, read-only, and hold exactly `names`; the hidden files in `absent` do not exist.
   */
  readonly covers?: ReadonlyArray<{ readonly path: string; readonly names: readonly string[]; readonly absent: readonly string[] }>;
  /**
   * The gateway's shared network namespace (`net:[N]`) the run joins by the holder's /proc path:
   * the sandbox must be in it (a holder that died and whose pid went to another process would
   * otherwise let nsenter put the run in that process's network, the host's among them).
   */
  readonly network?: string;
}

export interface MountEntry {
  readonly dev: string;
  readonly root: string;
  readonly mountpoint: string;
  readonly fstype: string;
  /** The mount's own options say `ro`. */
  readonly readOnly?: boolean;
}

/** Paths in mountinfo escape space, tab, newline and backslash as octal (`\040`). */
function unescape(field: string): string {
  if (!field.includes('\\')) return field;
  return field.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * `id parent major:minor root mountpoint options [optional...] - fstype source superoptions`.
 * Read by index rather than split into every field: the check runs twice per warm run (once the
 * sandbox is set up, and when a run takes it), on some 60 lines of the sandbox's and the host's.
 * Fields never hold a space (the kernel escapes it), so a field is what lies between two.
 */
export function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const entry = parseMountLine(text.slice(start, end));
    if (entry !== undefined) entries.push(entry);
    start = end + 1;
  }
  return entries;
}

function parseMountLine(line: string): MountEntry | undefined {
  // The ends of the first six fields (id, parent, dev, root, mount point, options).
  const ends: number[] = [];
  let at = -1;
  for (let field = 0; field < 6; field += 1) {
    at = line.indexOf(' ', at + 1);
    if (at < 0) return undefined;
    ends.push(at);
  }
  // The separator is a field of its own, the seventh or later (after the optional fields).
  const dash = line.indexOf(' - ', at);
  if (dash < 0) return undefined;
  const typeStart = dash + 3;
  const typeEnd = line.indexOf(' ', typeStart);
  const options = line.slice(ends[4] + 1, ends[5]);
  return {
    dev: line.slice(ends[1] + 1, ends[2]),
    root: unescape(line.slice(ends[2] + 1, ends[3])),
    mountpoint: unescape(line.slice(ends[3] + 1, ends[4])),
    fstype: line.slice(typeStart, typeEnd < 0 ? line.length : typeEnd),
    readOnly: options === 'ro' || options.startsWith('ro,') || options.endsWith(',ro') || options.includes(',ro,'),
  };
}

/** `major:minor` as stat(2) encodes it (the kernel's new_encode_dev). */
function encodeDev(dev: string): number {
  const [major, minor] = dev.split(':').map(Number) as [number, number];
  return (minor & 0xff) + major * 256 + Math.floor(minor / 256) * 1048576;
}

/** The sandbox's first process (bubblewrap's init, PID 1 inside) as seen from here. */
export function findSandboxInit(launcherPid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${launcherPid}/task/${launcherPid}/children`, 'latin1').trim().split(' ')[0];
    const pid = Number(first);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A sandbox's first process as the gateway saw it at the gate: its pid, its PID namespace and
 * its start time. A pid alone is not an identity: once the sandbox has ended, the number can be
 * handed to any process (the gateway's own namespace included), and signalling "its namespace"
 * would then signal the host.
 */
export interface SandboxInit {
  readonly pid: number;
  /** `readlink /proc/PID/ns/pid` at the gate. */
  readonly namespace: string;
  /** Field 22 of `/proc/PID/stat` (clock ticks since boot) at the gate. */
  readonly start: string;
}

/** Start time of a live process (a zombie has ended: its namespace is going with it). */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

let ownNamespace: string | undefined;

/** Reads the identity of `pid` as a sandbox's init; undefined when it is not one (gone, or in this process's own PID namespace). */
export function identifySandboxInit(pid: number): SandboxInit | undefined {
  try {
    ownNamespace ??= readlinkSync('/proc/self/ns/pid');
    const namespace = readlinkSync(`/proc/${pid}/ns/pid`);
    const start = startTime(pid);
    if (namespace === ownNamespace || start === undefined) return undefined;
    return Object.freeze({ pid, namespace, start });
  } catch {
    return undefined;
  }
}

/** Whether `init` is still the process the gate saw (same pid, namespace and start time). */
export function isSameInit(init: SandboxInit): boolean {
  const now = identifySandboxInit(init.pid);
  return now !== undefined && now.namespace === init.namespace && now.start === init.start;
}

/** The host paths a mount of a host file system shows: one per host mount of that device it lies under. */
function exposedPaths(entry: MountEntry, host: ReadonlyMap<string, readonly MountEntry[]>): string[] | undefined {
  const mounts = host.get(entry.dev);
  if (mounts === undefined) return undefined;
  // `relative` of two canonical paths, one inside the other, is the tail after the outer one.
  const tail = (root: string): string => (entry.root === root ? '' : entry.root.slice(root.endsWith('/') ? root.length : root.length + 1));
  return mounts.filter((mount) => isInside(entry.root, mount.root)).map((mount) => {
    const rest = tail(mount.root);
    return rest === '' ? mount.mountpoint : join(mount.mountpoint, rest);
  });
}

/** The host's mounts by device, parsed from its mount table as read now (the last one's kept: the same text, the same map). */
let hostMounts: { readonly text: string; readonly byDev: ReadonlyMap<string, readonly MountEntry[]> } | undefined;

function getHostMounts(text: string): ReadonlyMap<string, readonly MountEntry[]> {
  if (hostMounts?.text === text) return hostMounts.byDev;
  const byDev = new Map<string, MountEntry[]>();
  for (const entry of parseMountinfo(text)) {
    const list = byDev.get(entry.dev);
    if (list) list.push(entry);
    else byDev.set(entry.dev, [entry]);
  }
  hostMounts = { text, byDev };
  return byDev;
}

/**
 * Compares the sandbox of `launcherPid` (the process that ran bubblewrap, or bubblewrap's
 * launcher that exec'ed it) with `check`. Returns undefined when it matches, else what differs.
 */
export function verifySandbox(launcherPid: number, check: SandboxCheck): string | undefined {
  const init = findSandboxInit(launcherPid);
  if (init === undefined) return 'the sandbox\'s first process could not be found';
  return verifySandboxInit(init, check);
}

/** verifySandbox for a sandbox whose first process (findSandboxInit) is already known. */
export function verifySandboxInit(init: number, check: SandboxCheck): string | undefined {
  if (check.network !== undefined) {
    let network: string;
    try {
      network = readlinkSync(`/proc/${init}/ns/net`);
    } catch (error) {
      return `the sandbox's network namespace could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
    }
    if (network !== check.network) return `the sandbox is in the network namespace ${network}, not the gateway's shared ${check.network}`;
  }
  let sandboxText: string;
  let hostText: string;
  try {
    sandboxText = readFileSync(`/proc/${init}/mountinfo`, 'utf8');
    hostText = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch (error) {
    return `the mount table could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  const host = getHostMounts(hostText);
  const mounts = parseMountinfo(sandboxText);
  if (mounts.length === 0) return 'the sandbox\'s mount table is empty';
  const ownTmpfs = new Map<string, number[]>();
  for (const entry of mounts) {
    const exposed = exposedPaths(entry, host);
    if (exposed !== undefined) {
      if (exposed.length === 0) return `${entry.mountpoint} shows a part of a host file system (${entry.dev}, ${entry.root}) that is mounted nowhere on the host`;
      if (exposed.includes(entry.mountpoint)) continue;
      if (check.nullCovers.includes(entry.mountpoint) && exposed.includes('/dev/null')) continue;
      if (check.binds.some((bind) => bind.dest === entry.mountpoint && exposed.includes(bind.source))) continue;
      // bubblewrap's --dev binds the terminal it was started on (a PTY run's) as /dev/console.
      if (entry.mountpoint === '/dev/console' && exposed.some((path) => /^\/dev\/pts\/[0-9]+$/.test(path))) continue;
      return `${entry.mountpoint} shows the host's ${exposed[0]}`;
    }
    // A file system of the sandbox's own.
    if (entry.fstype === 'tmpfs' && entry.root === '/' && check.tmpfs.includes(entry.mountpoint)) {
      const list = ownTmpfs.get(entry.mountpoint);
      if (list) list.push(encodeDev(entry.dev));
      else ownTmpfs.set(entry.mountpoint, [encodeDev(entry.dev)]);
      continue;
    }
    if (entry.fstype === 'proc' && (entry.root === '/' ? entry.mountpoint === '/proc' : entry.mountpoint === `/proc${entry.root}`)) continue;
    if (entry.fstype === 'devpts' && entry.mountpoint === '/dev/pts') continue;
    if (entry.fstype === 'mqueue' && entry.mountpoint === '/dev/mqueue') continue;
    return `a ${entry.fstype} the plan does not make is mounted at ${entry.mountpoint}`;
  }
  const points = new Set(mounts.map((entry) => entry.mountpoint));
  // The topmost mount at each place (mountinfo lists mounts in the order they were made).
  const readOnlyMounts = new Set<string>();
  for (const entry of mounts) {
    if (entry.readOnly) readOnlyMounts.add(entry.mountpoint);
    else readOnlyMounts.delete(entry.mountpoint);
  }
  for (const path of check.mounted) if (!points.has(path)) return `${path} is not mounted as the plan says`;
  const at = (path: string): string => `/proc/${init}/root${path}`;
  try {
    for (const dir of check.hiddenDirs) {
      const stats = lstatSync(at(dir));
      if (!stats.isDirectory() || !(ownTmpfs.get(dir) ?? []).includes(stats.dev)) return `the hidden directory ${dir} is not covered by the sandbox's own empty file system`;
      if (readdirSync(at(dir)).length > 0) return `the hidden directory ${dir} is not empty`;
    }
    const devNull = statSync('/dev/null');
    for (const file of check.nullCovers) {
      const stats = lstatSync(at(file));
      if (!stats.isCharacterDevice() || stats.rdev !== devNull.rdev) return `the hidden file ${file} is not covered by /dev/null`;
    }
    for (const cover of check.covers ?? []) {
      const stats = lstatSync(at(cover.path));
      if (!stats.isDirectory() || !(ownTmpfs.get(cover.path) ?? []).includes(stats.dev)) return `the directory ${cover.path} is not covered by the sandbox's own file system`;
      const names = readdirSync(at(cover.path)).sort();
      const expected = [...cover.names].sort();
      if (names.length !== expected.length || names.some((name, i) => name !== expected[i])) {
        const extra = names.find((name) => !expected.includes(name));
        return extra !== undefined ? `${join(cover.path, extra)} is inside the sandbox, which the plan does not make` : `${cover.path} does not hold what the plan makes`;
      }
      for (const file of cover.absent) {
        if (lstatSync(at(file), { throwIfNoEntry: false }) !== undefined) return `the hidden file ${file} exists inside the sandbox`;
      }
      if (!readOnlyMounts.has(cover.path)) return `the directory ${cover.path} is writable inside the sandbox`;
    }
    for (const root of check.writable) {
      const stats = lstatSync(at(root.path));
      if (`${stats.dev}:${stats.ino}` !== root.id) return `the writable root ${root.path} is not the directory the plan was made for`;
    }
  } catch (error) {
    return `a planned path could not be looked at inside the sandbox (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  return undefined;
}
