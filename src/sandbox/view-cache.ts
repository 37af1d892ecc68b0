/*
 * A run's file-system view kept for the next run with the same inputs, and used only when
 * everything it was made from is as it was: the view's inputs (the policy's file-system lists,
 * the state directory, the audit log, the working directory, the writable roots, the homes the
 * environment and the password database name, the temp directory, the protected files), and
 * every host path it looked at, each checked again with one lstat (host-paths.ts, PathRecord):
 * each component of each name still the same file (device, inode, type, permissions), and each
 * directory whose entries the view depends on (where a name was missing, a file, a symlink, or
 * a covered directory's listing) with the same change and modification times. Checking those
 * costs one lstat per directory on the way; making the view costs a stat and a realpath of
 * every name (most of the credential list, missing in each home), a listing of each covered
 * directory and an lstat of its entries.
 *
 * File times come from a coarse clock (a kernel tick; a second or two on some file systems), so
 * a directory changed within the tick in which it was looked at can keep the times it had: a
 * view is kept only when every directory it depends on was last changed clearly before the
 * view was begun (git's "racy" index entries), and otherwise made again at the next run. Only
 * on local file systems whose times the kernel sets as entries change (a network file
 * system's come from another clock), and never after this process's clock went back.
 */
import { lstatSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import type { PathRecord, Resolutions } from './host-paths';

/** Change times clearly older than this, against the time the view was begun, are trusted. */
const FINE_MARGIN_MS = 50;
/** Where times have whole seconds only (a change time with no fraction): two seconds, FAT's tick. */
const COARSE_MARGIN_MS = 2_000;
const MAX_KEPT = 16;

/** File systems whose directory times move with their entries on this machine's clock. */
const LOCAL_TYPES = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x794c7630, // overlayfs
  0xf2f52010, // f2fs
]);

interface Kept<T> {
  readonly value: T;
  readonly records: ReadonlyArray<readonly [string, PathRecord | null]>;
}

const kept = new Map<string, Kept<unknown>>();
let lastNow = 0;
/** Views made, reused, kept, and dropped because something they depend on changed: for tests and the bench. */
const counts = { made: 0, reused: 0, kept: 0, dropped: 0 };

export function getViewCacheCounts(): Readonly<typeof counts> {
  return { ...counts };
}

/** Tests only: forget every kept view. */
export function clearViewCache(): void {
  kept.clear();
}

/** The inputs a view is made from, as one string (the environment's names the view reads, the temp directory, the account's home). */
export function viewKey(parts: Record<string, unknown>): string {
  return JSON.stringify({ ...parts, tmpdir: tmpdir() });
}

/** The kept value for `key` if every path it depended on is unchanged; otherwise undefined (and it is dropped). */
export function reuse<T>(key: string): T | undefined {
  const now = Date.now();
  if (now < lastNow) kept.clear(); // the clock went back: times no longer order changes
  lastNow = now;
  const entry = kept.get(key);
  if (entry === undefined) return undefined;
  if (!unchanged(entry.records)) {
    kept.delete(key);
    counts.dropped++;
    return undefined;
  }
  counts.reused++;
  return entry.value as T;
}

function unchanged(records: ReadonlyArray<readonly [string, PathRecord | null]>): boolean {
  const listed = new Set<string>();
  for (const [path, record] of records) if (record?.listing) listed.add(path);
  for (const [path, record] of records) {
    if (record === null) {
      // Missing then: its directory's times say whether it appeared, where they are checked.
      if (listed.has(dirname(path))) continue;
      if (lstatSync(path, { throwIfNoEntry: false }) !== undefined) return false;
      continue;
    }
    let now;
    try {
      now = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      return false;
    }
    if (now === undefined || now.dev !== record.dev || now.ino !== record.ino || now.mode !== record.mode) return false;
    if (record.listing && (now.mtimeMs !== record.mtimeMs || now.ctimeMs !== record.ctimeMs)) return false;
  }
  return true;
}

/**
 * Keeps `value` for `key` when what it depended on can be checked soundly next time: every
 * resolution was followed, every directory it depends on last changed clearly before `begun`,
 * and each on a local file system.
 */
export function keep<T>(key: string, value: T, resolutions: Resolutions, begun: number): void {
  counts.made++;
  if (resolutions.untrackable || resolutions.records.size === 0) return;
  const devices = new Map<number, string>();
  for (const [path, record] of resolutions.records) {
    if (record === null) continue;
    if (record.listing) {
      const margin = record.ctimeMs % 1000 === 0 ? COARSE_MARGIN_MS : FINE_MARGIN_MS;
      if (record.mtimeMs >= begun - margin || record.ctimeMs >= begun - margin) return;
    }
    if (!devices.has(record.dev) && (record.mode & 0o170000) === 0o040000) devices.set(record.dev, path);
  }
  for (const [path, record] of resolutions.records) {
    if (record !== null && !devices.has(record.dev)) devices.set(record.dev, dirname(path));
  }
  for (const path of devices.values()) {
    try {
      if (!LOCAL_TYPES.has(Number(statfsSync(path).type))) return;
    } catch {
      return;
    }
  }
  if (kept.size >= MAX_KEPT && !kept.has(key)) kept.delete(kept.keys().next().value as string);
  kept.set(key, { value, records: [...resolutions.records] });
  counts.kept++;
}
