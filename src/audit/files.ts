/*
 * The files of one audit log: the active file (`audit.log`) and the files rotation moved aside,
 * named `audit.log.<UTC time of rotation>` (`audit.log.20250105T102030123Z`, with `.N` added in
 * the rare case two rotations share a millisecond), so names sort oldest first and never change
 * once written. The chain runs through them in that order, ending in the active file.
 */
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const ROTATED = /^(\d{8}T\d{9}Z)(?:\.(\d+))?$/;

function getStamp(date: Date): string {
  return date.toISOString().replace(/[-:.]/g, '');
}

/** Sort key of a rotated file name's suffix, or undefined when it is not one. */
function parseRotatedSuffix(suffix: string): { stamp: string; n: number } | undefined {
  const match = ROTATED.exec(suffix);
  return match ? { stamp: match[1], n: match[2] === undefined ? 0 : Number(match[2]) } : undefined;
}

/** The rotated files of `activePath`, oldest first (only those that exist). */
export function listRotatedFiles(activePath: string): string[] {
  const dir = dirname(activePath);
  const prefix = `${basename(activePath)}.`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const rotated: { path: string; stamp: string; n: number }[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const key = parseRotatedSuffix(name.slice(prefix.length));
    if (key !== undefined) rotated.push({ path: join(dir, name), ...key });
  }
  rotated.sort((a, b) => (a.stamp < b.stamp ? -1 : a.stamp > b.stamp ? 1 : a.n - b.n));
  return rotated.map((file) => file.path);
}

/** The whole set, oldest first: rotated files, then the active file. */
export function listAuditFiles(activePath: string, exists: (path: string) => boolean): string[] {
  const files = listRotatedFiles(activePath);
  if (exists(activePath)) files.push(activePath);
  return files;
}

/** A name for the active file moved aside now that does not exist yet. */
export function getRotatedPath(activePath: string, now: Date, exists: (path: string) => boolean): string {
  const base = `${activePath}.${getStamp(now)}`;
  if (!exists(base)) return base;
  for (let n = 1; ; n++) if (!exists(`${base}.${n}`)) return `${base}.${n}`;
}

/**
 * Order files given on a command line the way the chain runs: rotated files of the same log by
 * their time stamps, each active file after its rotated ones; other names keep their order.
 */
export function orderAuditFiles(files: readonly string[]): string[] {
  const keyed = files.map((path, index) => {
    const name = basename(path);
    // A rotated name is `<active>.<stamp>` or `<active>.<stamp>.<n>`.
    const match = /^(.*)\.(\d{8}T\d{9}Z(?:\.\d+)?)$/.exec(name);
    if (match) {
      const key = parseRotatedSuffix(match[2])!;
      return { path, index, group: join(dirname(path), match[1]), stamp: key.stamp, n: key.n };
    }
    return { path, index, group: path, stamp: '~', n: 0 };
  });
  const firstIndex = new Map<string, number>();
  for (const file of keyed) if (!firstIndex.has(file.group)) firstIndex.set(file.group, file.index);
  keyed.sort((a, b) => {
    const ga = firstIndex.get(a.group)!;
    const gb = firstIndex.get(b.group)!;
    if (ga !== gb) return ga - gb;
    if (a.stamp !== b.stamp) return a.stamp < b.stamp ? -1 : 1;
    return a.n - b.n;
  });
  return keyed.map((file) => file.path);
}
