/*
 * Choosing how runs are spawned. `direct` forks this process for every run: cheapest while
 * this process is small, but the fork's cost (and the time the event loop is blocked) grows with
 * its resident memory. `helper` always spawns from a small helper process. `auto` (the gateway's
 * default) spawns directly until this process's resident set exceeds AUTO_HELPER_RSS, then
 * starts the helper and keeps using it. docs/performance.md has the measurements behind
 * the threshold.
 */
import { invalidOption, spawnFailed, type ExecgateError } from '../../errors';
import { directSpawner, spawnDirect } from './direct';
import type { HelperSpawner } from './helper';
import { getPipePool } from './pipes';
import type { SpawnedProcess, Spawner, SpawnerKind, SpawnRequest } from './types';

export { directSpawner } from './direct';
export type { ProcessExit, SpawnedProcess, Spawner, SpawnerKind, SpawnRequest } from './types';

/** Resident set size above which `auto` spawns from the helper. */
export const AUTO_HELPER_RSS = 128 * 1024 * 1024;
/** How often `auto` reads the resident set size, at most. */
export const RSS_CHECK_MS = 100;

const KINDS: readonly SpawnerKind[] = ['direct', 'helper', 'auto'];

export function validateSpawnerKind(value: unknown, option: string): SpawnerKind {
  if (typeof value === 'string' && (KINDS as readonly string[]).includes(value)) return value as SpawnerKind;
  throw invalidOption(option, value, '`direct`, `helper` or `auto`');
}

function helperClosed(): ExecgateError {
  return spawnFailed('the command', 'the spawn helper is closed (its gateway was closed)');
}

/** The helper's code is loaded only by a process that uses it. */
function createHelperSpawner(): HelperSpawner {
  return new (require('./helper') as typeof import('./helper')).HelperSpawner();
}

export class AutoSpawner implements Spawner {
  readonly #threshold: number;
  #helper: HelperSpawner | undefined;
  #useHelper = false;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(threshold = AUTO_HELPER_RSS) {
    this.#threshold = threshold;
  }

  spawn(request: SpawnRequest): Promise<SpawnedProcess> {
    // Once large, always the helper. The resident set is read at most every RSS_CHECK_MS; a
    // process that grows past the threshold meanwhile forks directly a few more times. Its peak
    // (getrusage) first: a process that never reached the threshold is not past it now, and that
    // is known without parsing /proc/self/stat, which waits for this process's memory map lock
    // (8 µs median, 2.4 ms at the 99th percentile on a busy machine, against 1 and 8 µs). Only
    // past a peak that high is the current size read.
    if (!this.#useHelper) {
      const now = performance.now();
      if (now - this.#checkedAt >= RSS_CHECK_MS) {
        this.#checkedAt = now;
        this.#useHelper = process.resourceUsage().maxRSS * 1024 > this.#threshold && process.memoryUsage.rss() > this.#threshold;
      }
    }
    if (!this.#useHelper) return spawnDirect(request);
    if (this.#closed) return Promise.reject(helperClosed());
    this.#helper ??= createHelperSpawner();
    return this.#helper.spawn(request);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#helper?.close();
  }

  /** Whether the helper is in use (it stays in use once this process has grown past the threshold). */
  get usesHelper(): boolean {
    return this.#useHelper;
  }
}

/**
 * The helper process, where one is used, starts with the first spawn that needs it. The pipes
 * of direct spawns (pipes.ts) are made from now on, so that the first run does not wait for them.
 */
export function createSpawner(kind: SpawnerKind): Spawner {
  if (kind !== 'helper') getPipePool().prefill();
  if (kind === 'direct') return directSpawner;
  if (kind === 'helper') return createHelperSpawner();
  return new AutoSpawner();
}
