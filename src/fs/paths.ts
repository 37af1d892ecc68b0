/*
 * Path containment on absolute, normalized paths (no `..`): the one rule for "is this path the
 * root or below it", so that `/a/bc` is never taken to be inside `/a/b`.
 */
import { sep } from 'node:path';

export function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}
