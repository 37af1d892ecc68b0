/*
 * How the paths a policy names become host paths: `~` for each home a run's programs may take,
 * symlinks resolved, the temp directories every run gets a private copy of, and the writable
 * roots as named. Apart from the view (paths.ts) because the checks made when the gateway starts
 * (placement.ts) must read the same names the same way as every run's view does.
 */
import { realpathSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';

export function expand(path: string, home: string): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return path;
}

// realpath(3), one system call, where Node's own realpathSync lstat()s every component: a run
// resolves a score of paths, most of which (the credential list) do not exist, and a missing one
// is found by a stat that throws nothing (building the ENOENT error costs more than the calls).
export function real(path: string): string | undefined {
  if (memo === undefined) return resolveReal(path);
  if (memo.has(path)) return memo.get(path);
  const found = resolveReal(path);
  memo.set(path, found);
  return found;
}

/*
 * One answer per name while one view is made (withOneResolution): the view names a path several
 * times (the workspace as a writable root, a work area and the working directory; each home),
 * and two lookups of one name made microseconds apart could only differ by a rename in between,
 * which would make one view disagree with itself. Nothing is kept across views.
 */
let memo: Map<string, string | undefined> | undefined;

/** Runs `make` with each name resolved at most once (see above); nested calls share the outer scope. */
export function withOneResolution<T>(make: () => T): T {
  if (memo !== undefined) return make();
  memo = new Map();
  try {
    return make();
  } finally {
    memo = undefined;
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

function getAccountHome(): string | undefined {
  try {
    const home = userInfo().homedir;
    return home.startsWith('/') ? home : undefined;
  } catch {
    return undefined;
  }
}
