/*
 * A bounded, depth-first walk for the search tools. Symbolic links are never followed (their
 * target may be outside the roots, or loop), and `.git` / `node_modules` below the base are
 * skipped. Entries come in name order, so results are stable.
 */
import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SKIPPED_DIRS } from './context';

export interface WalkEntry {
  /** Real path. */
  readonly path: string;
  /** Relative to the walk's base, `/`-separated. */
  readonly relative: string;
  readonly isDirectory: boolean;
}

export interface WalkState {
  visited: number;
  /** True when the walk stopped at `maxEntries`. */
  limited: boolean;
}

export async function* walk(base: string, maxEntries: number, state: WalkState): AsyncGenerator<WalkEntry> {
  const stack: Array<{ path: string; relative: string }> = [{ path: base, relative: '' }];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries: Dirent[];
    try {
      entries = await readdir(dir.path, { withFileTypes: true });
    } catch {
      continue; // unreadable directories are skipped, not fatal
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const subdirs: Array<{ path: string; relative: string }> = [];
    for (const entry of entries) {
      if (state.visited >= maxEntries) {
        state.limited = true;
        return;
      }
      state.visited += 1;
      if (entry.isSymbolicLink()) continue;
      const path = join(dir.path, entry.name);
      const relative = dir.relative === '' ? entry.name : `${dir.relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (SKIPPED_DIRS.has(entry.name)) continue;
        yield { path, relative, isDirectory: true };
        subdirs.push({ path, relative });
      } else if (entry.isFile()) {
        yield { path, relative, isDirectory: false };
      }
    }
    // Push in reverse so the first subdirectory is walked first.
    for (let i = subdirs.length - 1; i >= 0; i -= 1) stack.push(subdirs[i]);
  }
}
