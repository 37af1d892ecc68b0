/*
 * How the paths a policy names become host paths: `~` for each home a run's programs may take,
 * symlinks resolved, the temp directories every run gets a private copy of, and the writable
 * roots as named. Apart from the view (paths.ts) because the checks made when the gateway starts
 * (placement.ts) must read the same names the same way as every run's view does.
 */
import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';

export function expand(path: string, home: string): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return path;
}

// realpath(3), one system call, where Node's own realpathSync lstat()s every component: a run
// resolves a score of paths, most of which (the credential list) do not exist, and a missing one
// is found by a stat that throws nothing (building the ENOENT error costs more than the calls).
// While a view is made to be kept (trackResolutions), the walk is made here instead, one lstat
// per component shared by every name of the view, so that what each name depends on is known.
export function real(path: string): string | undefined {
  if (memo === undefined) return resolveReal(path);
  if (memo.has(path)) return memo.get(path);
  const found = tracker !== undefined ? walkReal(path, tracker) : resolveReal(path);
  memo.set(path, found);
  return found;
}

/*
 * One answer per name while one view is made (withOneResolution): the view names a path several
 * times (the workspace as a writable root, a work area and the working directory; each home),
 * and two lookups of one name made microseconds apart could only differ by a rename in between,
 * which would make one view disagree with itself. Nothing is kept across views here (a view kept
 * from one run to the next is view-cache.ts's, with what it depends on checked each run).
 */
let memo: Map<string, string | undefined> | undefined;
/** The account's home for the view being made: one password-database read per view. */
let accountHome: { value: string | undefined } | undefined;

/** Runs `make` with each name resolved at most once (see above); nested calls share the outer scope. */
export function withOneResolution<T>(make: () => T): T {
  if (memo !== undefined) return make();
  memo = new Map();
  try {
    return make();
  } finally {
    memo = undefined;
    accountHome = undefined;
    tracker = undefined;
  }
}

/**
 * What a host path looked like when it was looked at: enough to tell, with one lstat, whether a
 * name still leads where it led (device, inode, type and permission bits) and, for a directory
 * whose entries were looked up or listed (`listing`), whether any entry was added, removed or
 * renamed since (its change and modification times: a directory's times move whenever its entries
 * do, and its change time cannot be set back by anyone).
 */
export interface PathRecord {
  readonly dev: number;
  readonly ino: number;
  readonly mode: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  /** Entries of this directory were looked up (found or not) or listed: its times are checked too. */
  listing: boolean;
}

/** What one view depended on: each host path looked at, by name, in the order first looked at. */
export interface Resolutions {
  readonly records: Map<string, PathRecord | null>;
  /** A resolution that could not be followed here (a relative name): the view is not kept. */
  untrackable: boolean;
}

let tracker: Resolutions | undefined;

/**
 * Runs `make` (inside withOneResolution) with every host path it resolves, lists or lstat()s
 * through this module recorded, and returns what was recorded with what `make` returned.
 */
export function trackResolutions<T>(make: () => T): { value: T; resolutions: Resolutions } {
  const resolutions: Resolutions = { records: new Map(), untrackable: false };
  return withOneResolution(() => {
    if (tracker !== undefined || (memo !== undefined && memo.size > 0)) resolutions.untrackable = true;
    else tracker = resolutions;
    try {
      return { value: make(), resolutions };
    } finally {
      tracker = undefined;
    }
  });
}

/**
 * Runs `make` with no resolution recorded and none shared with the view around it: what is
 * found once per process (the protected code's package walk) is not something a kept view
 * depends on, and its answers must not stand in the view's memo unrecorded.
 */
export function untracked<T>(make: () => T): T {
  const saved = { memo, tracker, accountHome };
  memo = undefined;
  tracker = undefined;
  try {
    return make();
  } finally {
    ({ memo, tracker, accountHome } = saved);
  }
}

/** One lstat of `path`, recorded (and shared) while a view is tracked. */
function look(path: string, resolutions: Resolutions): PathRecord | null {
  const known = resolutions.records.get(path);
  if (known !== undefined) return known;
  let record: PathRecord | null = null;
  try {
    const stats = lstatSync(path, { throwIfNoEntry: false });
    if (stats !== undefined) record = { dev: stats.dev, ino: stats.ino, mode: stats.mode, mtimeMs: stats.mtimeMs, ctimeMs: stats.ctimeMs, listing: false };
  } catch {
    record = null; // EACCES, ENOTDIR: not reachable; the directory it was looked up in is checked
  }
  resolutions.records.set(path, record);
  return record;
}

/** Marks `dir` as a directory whose entries the view depends on (its lstat taken first, if not yet). */
function dependOnListing(dir: string, resolutions: Resolutions): PathRecord | null {
  const record = look(dir, resolutions);
  if (record) record.listing = true;
  return record;
}

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/*
 * realpath(3) made of lstat calls: each component looked up in the real directory reached so
 * far, a symlink's target followed (relative to that directory, `..` taking the parent of what
 * is already resolved, 40 links at most, as the kernel does), and every step recorded: each
 * component's lstat, and the directory it was looked up in as a listing when the component is
 * missing, not a directory, or a symlink (an entry replaced by another in the same directory
 * may reuse its inode: only the directory's times tell). A component that is a directory is
 * checked by its own identity, so that the churn of a directory above (the temp directory, a
 * home) does not throw away what below it did not change.
 */
function walkReal(path: string, resolutions: Resolutions): string | undefined {
  if (!isAbsolute(path)) {
    resolutions.untrackable = true;
    return resolveReal(path);
  }
  const root = dependOnListing('/', resolutions);
  if (!root || (root.mode & S_IFMT) !== S_IFDIR) return undefined;
  let resolved = '/';
  const pending = path.split('/').filter((part) => part !== '' && part !== '.').reverse();
  let links = 0;
  while (pending.length > 0) {
    const part = pending.pop() as string;
    if (part === '.') continue;
    if (part === '..') {
      resolved = dirname(resolved);
      continue;
    }
    const next = resolved === '/' ? `/${part}` : `${resolved}/${part}`;
    const record = look(next, resolutions);
    if (!record) {
      dependOnListing(resolved, resolutions);
      return undefined;
    }
    const type = record.mode & S_IFMT;
    if (type === S_IFLNK) {
      dependOnListing(resolved, resolutions);
      if (++links > 40) return undefined;
      let target: string;
      try {
        target = readlinkSync(next);
      } catch {
        return undefined;
      }
      if (target.startsWith('/')) resolved = '/';
      for (const segment of target.split('/').filter((s) => s !== '' && s !== '.').reverse()) pending.push(segment);
      continue;
    }
    if (type !== S_IFDIR) {
      dependOnListing(resolved, resolutions);
      // A file: the end of the name, or a component the rest cannot be looked up in (ENOTDIR).
      if (pending.length > 0) return undefined;
    }
    resolved = next;
  }
  // `file/` is no name of anything (ENOTDIR), as for realpath(3).
  if (path.endsWith('/') && resolved !== '/' && ((resolutions.records.get(resolved)?.mode ?? 0) & S_IFMT) !== S_IFDIR) return undefined;
  return resolved;
}

/**
 * The kind of a real path the view resolved (a directory or not), from the lstat its resolution
 * made while tracked; otherwise a stat.
 */
export function isDirectoryReal(path: string): boolean | undefined {
  const record = tracker?.records.get(path);
  if (record) return (record.mode & S_IFMT) === S_IFDIR;
  try {
    return statSync(path).isDirectory();
  } catch {
    return undefined;
  }
}

/** Whether `name` itself is a symlink (lstat), its directory's entries recorded while tracked. */
export function isSymlinkName(name: string): boolean {
  if (tracker !== undefined && isAbsolute(name)) {
    const parent = real(dirname(name));
    if (parent === undefined) return false;
    dependOnListing(parent, tracker);
  }
  try {
    return lstatSync(name).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The permission bits of a real directory whose entries are about to be listed (recorded as a listing while tracked). */
export function statForListing(dir: string): number | undefined {
  if (tracker !== undefined) {
    const record = dependOnListing(dir, tracker);
    return record && (record.mode & S_IFMT) === S_IFDIR ? record.mode & 0o7777 : undefined;
  }
  try {
    return statSync(dir).mode & 0o7777;
  } catch {
    return undefined;
  }
}

function resolveReal(path: string): string | undefined {
  try {
    if (statSync(path, { throwIfNoEntry: false }) === undefined) return undefined;
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/** The temp directories every run gets a private, empty copy of. */
export function getPrivateTmp(): string[] {
  return [...new Set(['/tmp', real('/var/tmp'), real(tmpdir())].filter((t): t is string => t !== undefined && t !== '/'))];
}

/**
 * The writable paths as named: `cwd.roots`, else the workspace (none when it is a temp directory,
 * which every run gets a private copy of), and `sandbox.filesystem.writable`.
 */
export function getWantedWritable(roots: readonly string[], workspace: string, writable: readonly string[], userHome: string): string[] {
  const privateTmp = getPrivateTmp();
  const own = roots.length > 0 ? [] : [workspace].filter((w) => !privateTmp.includes(real(w) ?? w));
  return [...roots, ...own, ...writable.map((p) => expand(p, userHome))];
}

/**
 * The home directory `~` stands for: $HOME when it is an absolute path, else the account's home
 * in the password database, else `fallback` (os.homedir()). An empty or relative HOME is no home.
 */
export function getUserHome(env: Readonly<Record<string, string | undefined>>, fallback: string): string {
  if (env.HOME?.startsWith('/')) return env.HOME;
  return getAccountHome() ?? fallback;
}

/** Every home directory a run's programs may take for `~`, real paths: $HOME, the account's, os.homedir(). */
export function getHomes(env: Readonly<Record<string, string | undefined>>, fallback: string): string[] {
  const named = [env.HOME, getAccountHome(), fallback].filter((h): h is string => typeof h === 'string' && h.startsWith('/'));
  return [...new Set(named.map((h) => real(h) ?? resolve(h)))];
}

/** The account's home in the password database (once per view while one is made). */
export function getAccountHome(): string | undefined {
  if (memo !== undefined) {
    accountHome ??= { value: readAccountHome() };
    return accountHome.value;
  }
  return readAccountHome();
}

function readAccountHome(): string | undefined {
  try {
    const home = userInfo().homedir;
    return home.startsWith('/') ? home : undefined;
  } catch {
    return undefined;
  }
}
