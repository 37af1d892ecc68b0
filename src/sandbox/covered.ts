/*
 * The directories of the view that are a tmpfs of the sandbox's own, so that a hidden file in
 * them is absent rather than covered by a mount on its name (paths.ts, CoveredDir, says why).
 * Apart from the view because it reads the host directories' entries, once every other mount
 * of the plan is known.
 */
import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { isInside } from '../fs/paths';
import { statForListing } from './host-paths';
import type { CoveredDir, HiddenPath } from './paths';

/**
 * The directories whose hidden files are made absent (CoveredDir): the parent of each hidden
 * file, where no run can write that parent (it lies outside every writable root: inside one, a
 * run could create the name itself, so the file keeps its cover on its name) and no other
 * mount of the plan holds it (a read-only path, a private temp directory, a hidden directory, the
 * kernel's file systems), so that the tmpfs can be mounted right after the root and every other
 * mount lands on top of it, deeper, in depth order.
 */
export function getCoveredDirs(
  hidden: readonly HiddenPath[],
  writable: readonly string[],
  readOnly: readonly string[],
  pinned: readonly string[],
  privateTmp: readonly string[],
): CoveredDir[] {
  const files = new Map<string, string[]>();
  const holders = [...writable, ...readOnly, ...privateTmp, ...hidden.filter((h) => h.directory).map((h) => h.path)];
  for (const entry of hidden) {
    if (entry.directory) continue;
    const dir = dirname(entry.path);
    if (dir === '/' || dir === entry.path || ['/proc', '/sys', '/dev'].some((k) => isInside(dir, k))) continue;
    if (holders.some((h) => isInside(dir, h))) continue;
    const list = files.get(dir);
    if (list) list.push(entry.path);
    else files.set(dir, [entry.path]);
  }
  if (files.size === 0) return [];
  // Places later mounts take: not bound here (the mount makes its own mount point).
  const planned = new Set<string>([...writable, ...readOnly, ...pinned, ...privateTmp, ...hidden.filter((h) => h.directory).map((h) => h.path), ...files.keys()]);
  const covered: CoveredDir[] = [];
  for (const [dir, absent] of files) {
    // Its times are taken before it is listed (a kept view depends on the listing: view-cache.ts).
    const mode = statForListing(dir);
    if (mode === undefined) continue;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue; // gone since: the name cover stays, and bubblewrap says so if the file went too
    }
    const binds: string[] = [];
    const symlinks: Array<{ path: string; target: string }> = [];
    const kept: string[] = [];
    for (const name of names) {
      const path = join(dir, name);
      if (absent.includes(path)) continue;
      if (planned.has(path)) {
        kept.push(name);
        continue;
      }
      let stats: Stats | undefined;
      try {
        stats = lstatSync(path);
      } catch {
        continue; // removed meanwhile: not there inside either
      }
      if (stats.isSymbolicLink()) {
        let target: string;
        try {
          target = readlinkSync(path);
        } catch {
          continue;
        }
        symlinks.push({ path, target });
      } else binds.push(path);
      kept.push(name);
    }
    covered.push(Object.freeze({ path: dir, mode, binds: Object.freeze(binds), symlinks: Object.freeze(symlinks), absent: Object.freeze([...absent]), names: Object.freeze(kept.sort()) }));
  }
  return covered;
}
