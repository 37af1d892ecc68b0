/*
 * What no run may write wherever its writable roots are: execgate's compiled code and its
 * dependencies, the system's programs and libraries, and node's installation. The gateway and
 * its helpers load this code after a run may have ended, outside every sandbox. Found once per
 * process (a package.json walk), apart from the view that binds it read-only (paths.ts).
 *
 * The walk reads some 120 package.json files and lists each node_modules directory: about 20 ms
 * of every CLI start (a sixth of its CPU, in profiles). So what it found is kept in the state
 * directory with what it read, and a process whose walk's inputs are all as they were takes it:
 * each directory it listed (identity, size and change times, and its real path again), each
 * manifest it read (the same), each link it resolved (resolved again). Anything npm, pnpm or a
 * hand can do to the layout changes one of those (an entry added, removed or renamed changes
 * its directory's times; a manifest rewritten, its own; a link retargeted, its resolution), and
 * the walk runs again. File times come from a coarse clock, so a walk that read something
 * changed within RACY_MS of its start is not kept (git's "racy" index entries); the change time
 * cannot be set back by anyone but root. The file is the state directory's, which no run sees.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, writeFileSync, type Dirent } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { real } from './host-paths';

const PACKAGE_ROOT = resolve(__dirname, '..', '..');
/** The package's root, or the node_modules it was installed into (its dependencies live there). */
export const OWN_FILES = basename(dirname(PACKAGE_ROOT)) === 'node_modules' ? dirname(PACKAGE_ROOT) : PACKAGE_ROOT;

/** The system's programs and libraries, and node's own installation. */
const SYSTEM_CODE: readonly string[] = Object.freeze(['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/boot']);

let protectedCode: readonly string[] | undefined;

/** An npm package name: `name` or `@scope/name`, no empty, `.` or `..` part. */
const PACKAGE_NAME = /^(?:@(?!\.\.?\/)[^/]+\/)?(?!\.\.?$)[^/]+$/;

/**
 * The real directories of execgate's runtime dependencies, transitively (package.json walk).
 * Node's own lookup (node_modules/NAME in a package's directory and each one above it), with what
 * it asks the file system asked once: each `node_modules` directory (and scope directory) is
 * listed once with its real path, so that a dependency found there costs a look-up in that
 * listing, not an lstat and a path join per package asking for it at each level (measured on a
 * checkout's 123 packages: the walk's CPU from about 30 ms, most of it joining and normalising
 * paths and lstat calls, to a third of that), and only a link is resolved on its own.
 */
export function getDependencyDirs(root: string, record?: WalkRecord): string[] {
  const found = new Set<string>();
  const listings = new Map<string, { readonly real: string; readonly entries: ReadonlyMap<string, Dirent> } | null>();
  const list = (dir: string): { readonly real: string; readonly entries: ReadonlyMap<string, Dirent> } | null => {
    let listing = listings.get(dir);
    if (listing !== undefined) return listing;
    listing = null;
    record?.dirs.set(dir, stampOf(dir));
    const realDir = real(dir);
    record?.reals.set(dir, realDir ?? '-');
    if (realDir !== undefined) {
      try {
        listing = { real: realDir, entries: new Map(readdirSync(dir, { withFileTypes: true }).map((entry) => [entry.name, entry])) };
      } catch {
        listing = null;
      }
    }
    listings.set(dir, listing);
    return listing;
  };
  const locate = (base: string, name: string): string | undefined => {
    // A name npm would not install (an empty, `.` or `..` part) is looked up as a path, as before.
    const candidate = join(base, 'node_modules', name);
    const parent = PACKAGE_NAME.test(name) ? dirname(candidate) : undefined;
    if (parent === undefined) return resolveLink(candidate, lstatSync(candidate, { throwIfNoEntry: false }) === undefined);
    const listing = list(parent);
    const entry = listing?.entries.get(basename(candidate));
    if (!listing || !entry) return undefined;
    return entry.isSymbolicLink() ? resolveLink(candidate, false) : join(listing.real, entry.name);
  };
  const resolveLink = (path: string, missing: boolean): string | undefined => {
    const found = missing ? undefined : real(path);
    record?.reals.set(path, found ?? '-');
    return found;
  };
  const visit = (dir: string): void => {
    let manifest: { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    record?.files.set(join(dir, 'package.json'), stampOf(join(dir, 'package.json')));
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as typeof manifest;
    } catch {
      return;
    }
    for (const name of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) {
      // Node's own lookup: node_modules/NAME in this directory and each one above it.
      for (let base = dir; ; base = dirname(base)) {
        const candidate = locate(base, name);
        if (candidate !== undefined) {
          if (!found.has(candidate)) {
            found.add(candidate);
            visit(candidate);
          }
          break;
        }
        if (base === dirname(base)) break;
      }
    }
  };
  visit(root);
  return [...found];
}

/** What a walk read: each directory listed and file read with its stamp, each path resolved with its real path. */
export interface WalkRecord {
  readonly dirs: Map<string, string>;
  readonly files: Map<string, string>;
  readonly reals: Map<string, string>;
}

/** A path's identity, size and times as lstat gives them (`-`: nothing there). */
function stampOf(path: string): string {
  const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  return stat === undefined ? '-' : `${stat.dev}:${stat.ino}:${stat.mode}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
}

/** The cache file in the state directory. */
export const PROTECTED_CODE_CACHE_FILE = 'protected-code.json';
const CACHE_VERSION = 1;
const MAX_CACHE_BYTES = 4 << 20;
/** A walk that read something whose times are this close to (or after) its start is not kept. */
const RACY_MS = 2_000;

interface CachedWalk {
  readonly version: number;
  readonly root: string;
  readonly dirs: ReadonlyArray<[string, string]>;
  readonly files: ReadonlyArray<[string, string]>;
  readonly reals: ReadonlyArray<[string, string]>;
  readonly found: readonly string[];
}

const isPairs = (value: unknown): value is Array<[string, string]> =>
  Array.isArray(value) && value.every((pair) => Array.isArray(pair) && pair.length === 2 && typeof pair[0] === 'string' && typeof pair[1] === 'string');

/** The kept walk, if it is a regular file of this user's (never a link) in the expected shape. */
function readCachedWalk(file: string): CachedWalk | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_CACHE_BYTES || (typeof process.getuid === 'function' && stat.uid !== process.getuid())) return undefined;
    const bytes = Buffer.alloc(stat.size);
    const read = readSync(fd, bytes, 0, bytes.length, 0);
    const parsed = JSON.parse(bytes.subarray(0, read).toString('utf8')) as Partial<CachedWalk>;
    if (parsed.version !== CACHE_VERSION || typeof parsed.root !== 'string' || !isPairs(parsed.dirs) || !isPairs(parsed.files) || !isPairs(parsed.reals)) return undefined;
    if (!Array.isArray(parsed.found) || !parsed.found.every((dir) => typeof dir === 'string')) return undefined;
    return parsed as CachedWalk;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Whether everything the kept walk read is as it was then. */
function isCurrent(walk: CachedWalk, root: string): boolean {
  if (walk.root !== root) return false;
  for (const [path, stamp] of walk.dirs) if (stampOf(path) !== stamp) return false;
  for (const [path, stamp] of walk.files) if (stampOf(path) !== stamp) return false;
  for (const [path, resolved] of walk.reals) if ((real(path) ?? '-') !== resolved) return false;
  return true;
}

/** Whether a stamp's times fall within RACY_MS of `since` (ms) or after it. */
function isRacy(stamp: string, since: number): boolean {
  if (stamp === '-') return false;
  const [, , , , mtimeNs, ctimeNs] = stamp.split(':');
  const limit = BigInt(since - RACY_MS) * 1_000_000n;
  return BigInt(mtimeNs) >= limit || BigInt(ctimeNs) >= limit;
}

/**
 * getDependencyDirs(root), taken from `stateDir` when everything that walk read is unchanged (see
 * the header), else walked and kept there. `now` is the clock the racy check reads (tests).
 */
export function getDependencyDirsCached(root: string, stateDir: string | undefined, now: () => number = Date.now): string[] {
  const file = stateDir === undefined ? undefined : join(stateDir, PROTECTED_CODE_CACHE_FILE);
  const kept = file === undefined ? undefined : readCachedWalk(file);
  if (kept !== undefined && isCurrent(kept, root)) return [...kept.found];
  const started = now();
  const record: WalkRecord = { dirs: new Map(), files: new Map(), reals: new Map() };
  const found = getDependencyDirs(root, record);
  if (file === undefined || [...record.dirs.values(), ...record.files.values()].some((stamp) => isRacy(stamp, started))) return found;
  const walk: CachedWalk = { version: CACHE_VERSION, root, dirs: [...record.dirs], files: [...record.files], reals: [...record.reals], found };
  const temp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, JSON.stringify(walk), { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch {
    rmSync(temp, { force: true });
  }
  return found;
}

/**
 * What no run may write, wherever its writable root is: execgate's code and the system's.
 * `stateDir`: where the dependency walk is kept between processes (see the header).
 */
export function getProtectedCode(stateDir?: string): readonly string[] {
  if (protectedCode) return protectedCode;
  // Installed as a dependency: the node_modules holding execgate and what it loads; run from its
  // own checkout: the compiled code and the dependencies, not the rest of the checkout. Where
  // the dependencies really are (pnpm's .pnpm store, a workspace's hoisted node_modules), the
  // outermost node_modules holding each: one bind each (a bind per package costs a millisecond
  // of every run's set-up per score of packages, measured), and a handful for any layout.
  const own = OWN_FILES === PACKAGE_ROOT ? [join(PACKAGE_ROOT, 'dist'), join(PACKAGE_ROOT, 'node_modules')] : [OWN_FILES];
  for (const dir of getDependencyDirsCached(PACKAGE_ROOT, stateDir)) {
    const parts = dir.split(sep);
    const outer = parts.indexOf('node_modules');
    if (outer > 0) own.push(parts.slice(0, outer + 1).join(sep));
  }
  // node's installation (a version manager keeps it under HOME): its bin directory's parent.
  const nodeBin = dirname(realpathSync.native(process.execPath));
  const node = basename(nodeBin) === 'bin' ? dirname(nodeBin) : nodeBin;
  protectedCode = Object.freeze([...new Set([...own, ...SYSTEM_CODE, ...(node === '/' ? [] : [node])])]);
  return protectedCode;
}
