/*
 * Values a gateway has resolved or seen pass through, remembered for the gateway's life so that
 * every later run masks them too. Each run's redactor otherwise knows only the values that run
 * resolved, and a value one run wrote to a file (or a file name, or a listener on the shared
 * loopback) would come back unmasked when a later run prints it. In memory only, never on disk;
 * bounded, the least recently used value forgotten first.
 *
 * Every run masks all of them, so they are compiled once and shared (`getShared`), not registered
 * again in each run's redactor: building the masker of 4,096 values (66,000 spellings) cost each
 * run 0.8-0.9 s of CPU (bench/redact.js). A run's redactor takes the shared one as its base
 * (Redactor#setBase): the run's own values stay in its own small matcher and their labels win.
 * Values remembered later are added to the shared redactor, which builds only them (layers.ts);
 * a value relabelled makes it stale. A forgotten value stays masked until a quarter of the limit
 * has been forgotten since the shared redactor was built (masking a forgotten value a while
 * longer only masks more), and only then is it built anew: at a full memory every run that meets
 * a new value forgets one, and rebuilding for each would put the whole build back on every run.
 * The shared redactor holds its compiled tables for the gateway's life: about 25 MiB of heap and
 * 40 MiB of typed arrays at 4,096 values, 6 and 27 MiB at 1,000 (docs/performance.md, "Redaction
 * and the MCP call, measured again").
 */
import { Redactor } from './redactor';

const DEFAULT_LIMIT = 4096;
/** Shared redactors kept, one per minimum length (a policy's `secrets.minLength`). */
const SHARED_KEPT = 4;

interface Shared {
  readonly redactor: Redactor;
  /** value -> label, as registered in `redactor`. */
  readonly labels: Map<string, string>;
  /** The memory's `#forgotten` when it was built. */
  readonly forgotten: number;
  /** The memory's version it has every value of. */
  version: number;
}

export class MaskMemory {
  // value -> label; a Map keeps insertion order, which makes the oldest entry the first one.
  readonly #entries = new Map<string, string>();
  readonly #limit: number;
  readonly #shared = new Map<number, Shared>();
  #forgotten = 0;

  constructor(limit = DEFAULT_LIMIT) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new TypeError(`Expected the \`limit\` of a MaskMemory to be a positive integer, got \`${String(limit)}\` (${typeof limit})`);
    }
    this.#limit = limit;
  }

  #version = 0;

  remember(value: string, label: string): void {
    if (value.length === 0) return;
    if (this.#entries.get(value) !== label) this.#version += 1;
    this.#entries.delete(value);
    this.#entries.set(value, label);
    while (this.#entries.size > this.#limit) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
      this.#forgotten += 1;
    }
  }

  /** Whether `value` is remembered (a forgotten one is not, though a shared redactor may still mask it). */
  has(value: string): boolean {
    return this.#entries.has(value);
  }

  entries(): IterableIterator<[string, string]> {
    return this.#entries.entries();
  }

  /** Changes whenever a value is added (or relabelled): a redactor built from the entries is stale. */
  get version(): number {
    return this.#version;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * A redactor of every remembered value of `minLength` characters or more, under its label,
   * shared by every caller (see the header): use it as a run's base (Redactor#setBase), never add
   * to it. It may also mask values forgotten lately.
   */
  getShared(minLength: number): Redactor {
    let shared = this.#shared.get(minLength);
    if (shared !== undefined && shared.version === this.#version && this.#forgotten - shared.forgotten <= this.#limit / 4) return shared.redactor;
    if (shared !== undefined && this.#forgotten - shared.forgotten > this.#limit / 4) shared = undefined;
    if (shared !== undefined) {
      // A value relabelled: the shared redactor's label for it would win; built anew.
      for (const [value, label] of this.#entries) {
        const known = shared.labels.get(value);
        if (known !== undefined && known !== label) {
          shared = undefined;
          break;
        }
      }
    }
    if (shared === undefined) {
      shared = { redactor: new Redactor({ minLength }), labels: new Map(), forgotten: this.#forgotten, version: -1 };
      this.#shared.delete(minLength);
      while (this.#shared.size >= SHARED_KEPT) this.#shared.delete(this.#shared.keys().next().value as number);
      this.#shared.set(minLength, shared);
    }
    // In the memory's order (oldest first), so the first label registered wins as it would in one registry.
    for (const [value, label] of this.#entries) {
      if (value.length < minLength || shared.labels.has(value)) continue;
      shared.redactor.add(value, label);
      shared.labels.set(value, label);
    }
    shared.version = this.#version;
    return shared.redactor;
  }
}
