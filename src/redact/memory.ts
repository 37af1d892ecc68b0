/*
 * Values a gateway has resolved or seen pass through, remembered for the gateway's life so that
 * every later run masks them too. Each run's redactor otherwise knows only the values that run
 * resolved, and a value one run wrote to a file (or a file name, or a listener on the shared
 * loopback) would come back unmasked when a later run prints it. In memory only, never on disk;
 * bounded, the least recently used value forgotten first.
 */
const DEFAULT_LIMIT = 4096;

export class MaskMemory {
  // value -> label; a Map keeps insertion order, which makes the oldest entry the first one.
  readonly #entries = new Map<string, string>();
  readonly #limit: number;

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
    }
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
}
