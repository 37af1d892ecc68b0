/*
 * Choosing how runs are spawned. `direct` forks this process for every run: cheapest while
 * this process is small, but the fork's cost (and the time the event loop is blocked) grows with
 * its resident memory. `helper` always spawns from a small helper process. `auto` (the gateway's
 * default) spawns directly until this process's resident set exceeds AUTO_HELPER_RSS, then
 * starts the helper and keeps using it. README.md (Performance) has the measurements behind
 * the threshold.
 */
import { ExecgateError } from '../../errors';
import { spawnDirect } from './direct';
import { HelperSpawner } from './helper';
import type { SpawnedProcess, Spawner, SpawnerKind, SpawnRequest } from './types';

export { directSpawner } from './direct';
export { HelperSpawner } from './helper';
export type { ProcessExit, SpawnedProcess, Spawner, SpawnerKind, SpawnRequest } from './types';

/** Resident set size above which `auto` spawns from the helper. */
export const AUTO_HELPER_RSS = 256 * 1024 * 1024;

const KINDS: readonly SpawnerKind[] = ['direct', 'helper', 'auto'];

export function validateSpawnerKind(value: unknown, option: string): SpawnerKind {
  if (typeof value === 'string' && (KINDS as readonly string[]).includes(value)) return value as SpawnerKind;
  const shown = typeof value === 'string' ? `\`${value.slice(0, 40)}\`` : `\`${String(value)}\` (${typeof value})`;
  throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected the \`${option}\` option to be \`direct\`, \`helper\` or \`auto\`, got ${shown}.`, { option });
}

export class AutoSpawner implements Spawner {
  readonly #threshold: number;
  readonly #helper = new HelperSpawner();
  #useHelper = false;

  constructor(threshold = AUTO_HELPER_RSS) {
    this.#threshold = threshold;
    this.#decide();
  }

  spawn(request: SpawnRequest): Promise<SpawnedProcess> {
    return this.#decide() ? this.#helper.spawn(request) : spawnDirect(request);
  }

  close(): Promise<void> {
    return this.#helper.close();
  }

  /** Whether the helper is in use (it stays in use once this process has grown past the threshold). */
  get usesHelper(): boolean {
    return this.#useHelper;
  }

  #decide(): boolean {
    if (!this.#useHelper && process.memoryUsage.rss() > this.#threshold) {
      this.#useHelper = true;
      this.#helper.start().catch(() => { /* the next spawn reports it */ });
    }
    return this.#useHelper;
  }
}

export function createSpawner(kind: SpawnerKind): Spawner {
  if (kind === 'direct') return { spawn: spawnDirect, close: async () => { /* nothing held */ } };
  if (kind === 'helper') {
    const helper = new HelperSpawner();
    helper.start().catch(() => { /* the next spawn reports it */ });
    return helper;
  }
  return new AutoSpawner();
}
