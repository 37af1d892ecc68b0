/*
 * What a run sees of the file system, as three lists of real (symlink-resolved) host paths:
 * hidden, writable and read-only-inside-writable. Everything else is read-only.
 *
 * Always hidden, whatever the policy says: the state directory (vault, vault key, audit key,
 * background records), the audit log's directory, every session-bus and agent socket the
 * gateway's environment names, and /run/user (each user's runtime directory: the bus, the
 * keyring's control socket, gpg and ssh agents). Then the built-in credential list and the
 * policy's `sandbox.filesystem.hidden`.
 *
 * The writable roots are fixed for the gateway (`cwd.roots`, else the gateway's own working
 * directory), never chosen by a request: a run's working directory is entered inside the sandbox,
 * and one outside every writable root is read-only there (one in the host's temp directory, which
 * runs do not see, is refused: nothing of the host's /tmp is ever mounted in). So no path that bubblewrap mounts by name has
 * an ancestor inside a writable root of any run of the gateway, except the hidden and read-only
 * paths inside a root, whose ancestors are pinned (below). A writable path inside another is
 * dropped: the outer bind carries it.
 *
 * A path that does not exist is skipped (there is nothing to hide, or to make writable) and
 * reported as such. The state directory is the exception: it is created (0700) when missing,
 * and never again once a gateway has seen it (state-dir.ts says why).
 *
 * Hidden and read-only paths are mounted by name, so a run that could rename one of their
 * ancestors (one that lies inside a writable root) would carry the real directory to a name
 * the next run does not hide. Every such ancestor is pinned with a bind mount onto itself:
 * a mount point cannot be renamed (EBUSY), and without CAP_SYS_ADMIN it cannot be unmounted.
 * The policy files in force (and their `extends` chain) are read-only inside for the same
 * reason: a run must not rewrite the policy a watching gateway reloads.
 *
 * This file assembles the view. Beside it: how policy names become host paths (host-paths.ts),
 * the writable roots refused outright (placement.ts), the code no run may write (own-code.ts),
 * the directories whose hidden files are absent (covered.ts) and the state directory's checks
 * (state-dir.ts).
 */
import { dirname, join, sep } from 'node:path';
import { ExecgateError } from '../errors';
import { DEFAULT_HIDDEN_PATHS, type SandboxSettings } from '../policy/effective';
import { isInside } from '../fs/paths';
import { getCoveredDirs } from './covered';
import { expand, getAccountHome, getHomes, getPrivateTmp, getUserHome, getWantedWritable, isDirectoryReal, isSymlinkName, real, trackResolutions, untracked, withOneResolution } from './host-paths';
import { getProtectedCode, OWN_FILES } from './own-code';
import { checkWorkspacePlacement } from './placement';
import { ensureStateDir } from './state-dir';
import { keep, reuse, viewKey } from './view-cache';

export interface FilesystemInput {
  readonly settings: SandboxSettings;
  /** The gateway's state directory ($EXECGATE_HOME). */
  readonly home: string;
  /** The audit log file, when there is one. */
  readonly auditPath?: string;
  /** The request's working directory (already checked against `cwd.roots`). */
  readonly cwd: string;
  /** `cwd.roots` of the policy: the writable roots. */
  readonly roots: readonly string[];
  /**
   * The gateway's working directory: the writable root when the policy names none. Where it is a
   * temp directory (the gateway started in /tmp) there is no workspace but each run's own
   * private /tmp.
   */
  readonly workspace: string;
  /** The gateway's own environment (HOME for `~`, bus and agent addresses). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The home directory `~` stands for when the environment has no HOME. */
  readonly userHome: string;
  /** The state directory's identity as this gateway first saw it (device:inode), kept here. */
  readonly stateIdentity?: { id?: string };
  /** Files that are read-only inside whatever the policy says (the policy files in force). */
  readonly protectedFiles?: readonly string[];
}

export interface HiddenPath {
  readonly path: string;
  /** Directories become an empty tmpfs; anything else is covered by /dev/null. */
  readonly directory: boolean;
}

/**
 * A directory that holds hidden files and that no run may write: a tmpfs of the sandbox's own
 * takes its place, in which each of its other entries is bound again at its own name (or made
 * again, for a symlink), so the hidden names do not exist there at all. A hidden file covered by
 * a mount on its own name is uncovered in every run already started when the host replaces the
 * file by rename(2) (the kernel detaches a mount whose mount point is unlinked); an entry that is
 * simply absent from a directory of the sandbox's own stays absent, whatever the host renames.
 */
export interface CoveredDir {
  readonly path: string;
  /** The host directory's permission bits, given to the tmpfs. */
  readonly mode: number;
  /** Entries bound read-only onto themselves. */
  readonly binds: readonly string[];
  /** Entries that are symlinks, made again with the same target. */
  readonly symlinks: ReadonlyArray<{ readonly path: string; readonly target: string }>;
  /** The hidden files of this directory: absent inside. */
  readonly absent: readonly string[];
  /** Every name the directory holds inside (binds, symlinks, and the places later mounts take). */
  readonly names: readonly string[];
}

export interface FilesystemView {
  readonly hidden: readonly HiddenPath[];
  /** Directories replaced by a tmpfs of the sandbox's own, their hidden files absent (see CoveredDir). */
  readonly covered?: readonly CoveredDir[];
  readonly writable: readonly string[];
  readonly readOnly: readonly string[];
  /** Directories inside a writable root that lead to a hidden or read-only path: bound onto themselves. */
  readonly pinned: readonly string[];
  /** Temp directories (/tmp, the gateway's own) that are a private tmpfs in the run. */
  readonly privateTmp: readonly string[];
  /** Listed paths that do not exist here (nothing to hide or bind). */
  readonly skipped: readonly string[];
  /** The session bus address names an abstract socket: only a network namespace hides it. */
  readonly abstractBus: boolean;
  /** The run's working directory (real path), entered inside the sandbox. */
  readonly cwd: string;
  /** Whether the working directory lies inside a writable path; outside, it is read-only. */
  readonly cwdWritable: boolean;
}

/** The per-gateway runtime directories execgate creates under the temp directory. */
const RUNTIME_DIR = /^execgate-(spawn|egress)-[A-Za-z0-9]{6}$/;

/** Socket paths in a D-Bus address (`unix:path=/x,guid=..;unix:abstract=...`). */
function getBusPaths(address: string | undefined): { paths: string[]; abstract: boolean } {
  const paths: string[] = [];
  let abstract = false;
  for (const entry of (address ?? '').split(';')) {
    for (const pair of entry.replace(/^unix:/, '').split(',')) {
      const [key, value] = pair.split('=');
      if (key === 'path' && value) paths.push(decodeURIComponent(value));
      if (key === 'abstract') abstract = true;
    }
  }
  return { paths, abstract };
}

/** The environment's names the view reads. */
const VIEW_ENV = ['HOME', 'DBUS_SESSION_BUS_ADDRESS', 'XDG_RUNTIME_DIR', 'SSH_AUTH_SOCK', 'GNOME_KEYRING_CONTROL', 'GPG_AGENT_INFO'] as const;

/**
 * The view of a run: the one made for the last run with the same inputs when nothing it
 * depends on has changed since (view-cache.ts says how that is known), else made now. The state
 * directory is checked (and created) for every run either way.
 */
export function getFilesystemView(input: FilesystemInput): FilesystemView {
  ensureStateDir(input.home, input.stateIdentity);
  // The protected code is found once per process, outside what a kept view depends on.
  untracked(() => getProtectedCode(input.home));
  return withOneResolution(() => {
    const { filesystem } = input.settings;
    const key = viewKey({
      hidden: filesystem.hidden, writable: filesystem.writable, readOnly: filesystem.readOnly,
      home: input.home, auditPath: input.auditPath, cwd: input.cwd, roots: input.roots, workspace: input.workspace,
      env: VIEW_ENV.map((name) => input.env[name]), userHome: input.userHome, account: getAccountHome(), protectedFiles: input.protectedFiles,
    });
    const known = reuse<FilesystemView>(key);
    if (known !== undefined) return known;
    const begun = Date.now();
    const { value, resolutions } = trackResolutions(() => makeFilesystemView(input));
    keep(key, value, resolutions, begun);
    return value;
  });
}

/** The view made now from the host as it is (realpath(3) of each name), never kept: what a kept view must equal. */
export function getFreshFilesystemView(input: FilesystemInput): FilesystemView {
  ensureStateDir(input.home, input.stateIdentity);
  return withOneResolution(() => makeFilesystemView(input));
}

function makeFilesystemView(input: FilesystemInput): FilesystemView {
  const { settings, env } = input;
  const userHome = getUserHome(env, input.userHome);
  const skipped: string[] = [];

  // The default state directory too, when it is not this gateway's: another gateway or the CLI
  // keeps its vault there, and a nested `execgate` in a run (no EXECGATE_HOME reaches a run)
  // looks for it there.
  // Resolved once for the whole view: every hidden path below is expanded in each of them.
  const homes = getHomes(env, input.userHome);
  const hiddenWanted = new Set<string>([input.home, ...homes.map((home) => join(home, '.execgate'))]);
  // The log's directory (its rotated files, chain state and lock) is hidden whole, wherever it
  // lies: a tmpfs over the directory, as for the state directory. (A cover on each file's name
  // would be undone for every run already started when the log rotates, by rename, and the lock
  // file, which exists only while a record is written, would not be covered at all.) A log whose
  // directory is a writable root is refused when the gateway starts (checkAuditPlacement).
  if (input.auditPath) hiddenWanted.add(dirname(input.auditPath));
  const bus = getBusPaths(env.DBUS_SESSION_BUS_ADDRESS);
  for (const path of bus.paths) hiddenWanted.add(path);
  for (const name of ['XDG_RUNTIME_DIR', 'SSH_AUTH_SOCK', 'GNOME_KEYRING_CONTROL', 'GPG_AGENT_INFO']) {
    const value = env[name];
    if (value && value.startsWith('/')) hiddenWanted.add(value.split(':')[0]);
  }
  // All of /run: the session buses and agents under /run/user, the system bus (which a gateway
  // running as root would let a run ask systemd to start anything on the host), container
  // engines' sockets, a terminal multiplexer's sockets (screen keeps them in /run/screen). A
  // read-only view does not stop connect(2) on a socket, so nothing of /run is shown at all.
  hiddenWanted.add('/run');
  // `~` is every home the run's programs may take for it: $HOME, and the account's home in the
  // password database (ssh and others read that one whatever $HOME says).
  for (const path of settings.filesystem.hidden) for (const home of homes) hiddenWanted.add(expand(path, home));

  const hidden: HiddenPath[] = [];
  const seen = new Set<string>();
  // Where a run can write (the workspace, often the home directory) it can replace a credential
  // path with a symlink: to /proc/self, which is a different directory for the gateway than for
  // anyone else, or to the workspace itself, which cannot be hidden from the run working in it.
  // Hiding the target would make every later run fail to set up (a denial of service one run
  // plants for all). A name that a symlink leads to such a place is skipped (and reported):
  // there is nothing of the user's there to hide. The gateway's own state and audit log are
  // never skipped.
  const kept = new Set([input.home, ...(input.auditPath ? [input.auditPath, dirname(input.auditPath)] : [])]);
  const workAreas = [...input.roots, ...(input.roots.length > 0 ? [] : [input.workspace]), ...settings.filesystem.writable.map((p) => expand(p, userHome))].map((w) => real(w) ?? w);
  const plantedTarget = (wanted: string, path: string): boolean => {
    if (kept.has(wanted) || (path !== '/' && !['/proc', '/sys', '/dev'].some((root) => isInside(path, root)) && !workAreas.some((w) => isInside(w, path)))) return false;
    // A symlink a run could have made: the name itself is one, in a directory a run can write.
    const parent = real(dirname(wanted));
    return isSymlinkName(wanted) && parent !== undefined && workAreas.some((w) => isInside(parent, w));
  };
  for (const wanted of hiddenWanted) {
    const path = real(wanted);
    if (path === undefined) {
      // Reported for what a policy listed; the built-in credential list mostly does not exist.
      const listed = settings.filesystem.hidden.filter((p) => !DEFAULT_HIDDEN_PATHS.includes(p));
      if (listed.some((p) => expand(p, userHome) === wanted)) skipped.push(wanted);
      continue;
    }
    if (plantedTarget(wanted, path)) {
      skipped.push(`${wanted} (a symlink to ${path})`);
      continue;
    }
    if (seen.has(path) || path === '/') continue;
    seen.add(path);
    const directory = isDirectoryReal(path);
    if (directory === undefined) continue;
    hidden.push({ path, directory });
  }

  // A path inside a hidden directory is out of sight already; covering it again would leave a
  // mount point in the directory that must show empty.
  const nested = hidden.filter((entry) => hidden.some((other) => other !== entry && other.directory && isInside(entry.path, other.path) && entry.path !== other.path));
  for (const entry of nested) hidden.splice(hidden.indexOf(entry), 1);

  const cwd = real(input.cwd) ?? input.cwd;
  // A writable path that is hidden, or inside a hidden directory, is hidden: refused here rather
  // than mounted and covered again (a name that resolved there was moved, or misconfigured).
  for (const entry of hidden) {
    for (const wanted of [...input.roots, ...(input.roots.length > 0 ? [] : [input.workspace])]) {
      const path = real(wanted);
      if (path !== undefined && (entry.directory ? isInside(path, entry.path) : path === entry.path)) {
        throw new ExecgateError(
          'EXECGATE_ERR_SANDBOX_PATH',
          `The workspace ${wanted} is ${path === entry.path ? '' : 'inside '}${entry.path}, which the sandbox hides (state directory, audit log, session bus or a credential path)${path === wanted ? '' : `; its name leads there now (${path})`}. Use another workspace. Nothing was run.`,
          { path: wanted, hidden: entry.path },
        );
      }
    }
  }
  for (const entry of hidden) {
    if (entry.directory ? isInside(cwd, entry.path) : cwd === entry.path) {
      throw new ExecgateError(
        'EXECGATE_ERR_SANDBOX_PATH',
        `The working directory ${input.cwd} is inside ${entry.path}, which the sandbox hides (state directory, audit log, session bus or a credential path). Run the command in another directory. Nothing was run.`,
        { cwd: input.cwd, hidden: entry.path },
      );
    }
  }

  const writable: string[] = [];
  // /var/tmp as /tmp: sockets live there too (tmux with TMUX_TMPDIR, editors' servers), and a
  // read-only bind would not stop a run connecting to one.
  const privateTmp = getPrivateTmp();
  checkWorkspacePlacement({ roots: input.roots, workspace: input.workspace, writable: settings.filesystem.writable, env, userHome: input.userHome });
  for (const wanted of getWantedWritable(input.roots, input.workspace, settings.filesystem.writable, userHome)) {
    const path = real(wanted);
    if (path === undefined) {
      skipped.push(wanted);
      continue;
    }
    if (!writable.includes(path)) writable.push(path);
  }
  // A writable path inside another is carried by the outer bind (bubblewrap binds recursively);
  // binding it again would mount by name below a root that runs can rename in.
  for (let i = writable.length - 1; i >= 0; i--) {
    const path = writable[i];
    if (writable.some((other) => other !== path && isInside(path, other))) writable.splice(i, 1);
  }
  const readOnly: string[] = [];
  for (const wanted of settings.filesystem.readOnly.map((p) => expand(p, userHome))) {
    const path = real(wanted);
    if (path === undefined) skipped.push(wanted);
    else if (!readOnly.includes(path)) readOnly.push(path);
  }
  // Each temp directory is a private tmpfs in every run (args.ts): the host's holds every
  // gateway's runtime sockets (spawn helper, egress proxy), which a run that could write there
  // could replace with its own listener. A writable root inside one of those is refused.
  for (const path of writable) {
    // A temp directory itself as a writable root: the private tmpfs every run gets covers it,
    // so nothing of it would be writable (or there at all) inside. Said, not silently empty.
    const covered = privateTmp.find((t) => path === t);
    if (covered !== undefined) {
      throw new ExecgateError(
        'EXECGATE_ERR_SANDBOX_PATH',
        `The writable path ${path} is the temp directory, which every sandboxed run gets a private, empty copy of; nothing in the host's ${covered} is visible inside. Name a directory inside it (\`${join(covered, 'work')}\`, say) in \`cwd.roots\` or \`sandbox.filesystem.writable\`, or start the gateway there. Nothing was run.`,
        { path },
      );
    }
  }
  for (const path of [...writable, cwd]) {
    for (const t of privateTmp) {
      const below = path === t || !isInside(path, t) ? undefined : path.slice(t.length + 1).split(sep)[0];
      if (below !== undefined && RUNTIME_DIR.test(below)) {
        throw new ExecgateError(
          'EXECGATE_ERR_SANDBOX_PATH',
          `The ${path === cwd ? 'working directory' : 'writable path'} ${path} is inside ${join(t, below)}, a gateway's private runtime directory. Run the command in another directory. Nothing was run.`,
          { path, runtime: join(t, below) },
        );
      }
    }
  }
  const inPrivateTmp = (path: string): boolean =>
    privateTmp.some((t) => isInside(path, t) && !writable.some((w) => w !== t && isInside(w, t) && isInside(path, w)));
  // The working directory is entered inside the sandbox. Outside every writable path it is
  // read-only. In a private temp directory (and outside every writable root there) it would not
  // exist inside at all, and binding it in, even read-only, would hand the run whatever lives
  // in it: every user's and program's sockets (a terminal multiplexer's, an agent's), which a
  // read-only mount does not stop anyone from connecting to. So it is refused.
  const cwdWritable = writable.some((w) => isInside(cwd, w)) || privateTmp.includes(cwd);
  if (!cwdWritable && inPrivateTmp(cwd)) {
    const t = privateTmp.find((p) => isInside(cwd, p)) as string;
    throw new ExecgateError(
      'EXECGATE_ERR_SANDBOX_PATH',
      `The working directory ${input.cwd} is inside the temp directory ${t}, which every sandboxed run gets a private, empty copy of; the host's ${t} (and the sockets in it) is never mounted in. Run the command in the workspace or under a writable root, or add ${cwd} to \`cwd.roots\`. Nothing was run.`,
      { cwd: input.cwd, temp: t },
    );
  }
  // execgate's own files (the egress bridge and its preload, the CLI a nested `execgate` runs)
  // must be readable inside: where a private temp directory would hide them, they are bound
  // back read-only.
  const own = real(OWN_FILES);
  if (own !== undefined && inPrivateTmp(own) && !readOnly.includes(own)) readOnly.push(own);
  // And never writable: the gateway, its spawn helper, supervisor and egress bridge load this
  // code (and node, bubblewrap, nsenter, the shell: the system's programs) after a run may have
  // ended, so a run whose writable root holds them would run its code outside every sandbox.
  for (const wanted of getProtectedCode(input.home)) {
    const path = real(wanted);
    if (path === undefined || !writable.some((w) => isInside(path, w) || isInside(w, path)) || readOnly.some((r) => isInside(path, r))) continue;
    readOnly.push(path);
  }
  for (const file of input.protectedFiles ?? []) {
    const path = real(file);
    if (path !== undefined && writable.some((w) => isInside(path, w)) && !readOnly.includes(path)) readOnly.push(path);
  }
  const pinned: string[] = [];
  for (const target of [...hidden.map((h) => h.path), ...readOnly]) {
    for (const root of writable) {
      if (target === root || !isInside(target, root)) continue;
      for (let dir = dirname(target); dir !== root && isInside(dir, root) && dir !== dirname(dir); dir = dirname(dir)) {
        // Inside a private temp directory there is no host directory to pin (and binding one
        // would bring the host's temp directory back).
        if (!pinned.includes(dir) && !inPrivateTmp(dir)) pinned.push(dir);
      }
    }
  }
  // Parents before children, so that a deeper mount lands on top of a shallower one.
  const byDepth = (a: string, b: string): number => a.split(sep).length - b.split(sep).length;
  writable.sort(byDepth);
  readOnly.sort(byDepth);
  pinned.sort(byDepth);
  hidden.sort((a, b) => byDepth(a.path, b.path));
  const covered = getCoveredDirs(hidden, writable, readOnly, pinned, privateTmp);
  covered.sort((a, b) => byDepth(a.path, b.path));
  return Object.freeze({
    hidden: Object.freeze(hidden),
    covered: Object.freeze(covered),
    writable: Object.freeze(writable),
    readOnly: Object.freeze(readOnly),
    pinned: Object.freeze(pinned),
    privateTmp: Object.freeze(privateTmp),
    skipped: Object.freeze([...new Set(skipped)]),
    abstractBus: bus.abstract,
    cwd,
    cwdWritable,
  });
}
