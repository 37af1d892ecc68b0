/*
 * What no run may write wherever its writable roots are: execgate's compiled code and its
 * dependencies, the system's programs and libraries, and node's installation. The gateway and
 * its helpers load this code after a run may have ended, outside every sandbox. Found once per
 * process (a package.json walk), apart from the view that binds it read-only (paths.ts).
 */
import { lstatSync, readdirSync, readFileSync, realpathSync, type Dirent } from 'node:fs';
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
export function getDependencyDirs(root: string): string[] {
  const found = new Set<string>();
  const listings = new Map<string, { readonly real: string; readonly entries: ReadonlyMap<string, Dirent> } | null>();
  const list = (dir: string): { readonly real: string; readonly entries: ReadonlyMap<string, Dirent> } | null => {
    let listing = listings.get(dir);
    if (listing !== undefined) return listing;
    listing = null;
    const realDir = real(dir);
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
    if (parent === undefined) return lstatSync(candidate, { throwIfNoEntry: false }) === undefined ? undefined : real(candidate);
    const listing = list(parent);
    const entry = listing?.entries.get(basename(candidate));
    if (!listing || !entry) return undefined;
    return entry.isSymbolicLink() ? real(candidate) : join(listing.real, entry.name);
  };
  const visit = (dir: string): void => {
    let manifest: { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
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

/** What no run may write, wherever its writable root is: execgate's code and the system's. */
export function getProtectedCode(): readonly string[] {
  if (protectedCode) return protectedCode;
  // Installed as a dependency: the node_modules holding execgate and what it loads; run from its
  // own checkout: the compiled code and the dependencies, not the rest of the checkout. Where
  // the dependencies really are (pnpm's .pnpm store, a workspace's hoisted node_modules), the
  // outermost node_modules holding each: one bind each (a bind per package costs a millisecond
  // of every run's set-up per score of packages, measured), and a handful for any layout.
  const own = OWN_FILES === PACKAGE_ROOT ? [join(PACKAGE_ROOT, 'dist'), join(PACKAGE_ROOT, 'node_modules')] : [OWN_FILES];
  for (const dir of getDependencyDirs(PACKAGE_ROOT)) {
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
