/*
 * Which runs the HTML report embeds for filtering and the per-run panel: all of them up to
 * `limit`, past it a bounded, reproducible choice, so that a browser never holds a million rows.
 * Apart from the aggregates (report-data.ts), which count every run whatever is embedded.
 */
import { getOutcome, type Outcome } from './report-timeline';
import type { RunSummary } from './runs';

/** The newest `size` items pushed, in a fixed array (no copying as items come and go). */
class Ring<T> {
  readonly #items: T[] = [];
  #next = 0;
  constructor(readonly size: number) {}
  push(item: T): void {
    if (this.#items.length < this.size) this.#items.push(item);
    else this.#items[this.#next] = item;
    this.#next = (this.#next + 1) % this.size;
  }
  toArray(): T[] {
    return this.#items.length < this.size ? [...this.#items] : [...this.#items.slice(this.#next), ...this.#items.slice(0, this.#next)];
  }
}

/*
 * Which runs the page embeds once there are more than `limit`: the latest (40%), the latest
 * denied / rejected / failed (40%: what a reviewer looks for first), and a uniform sample of
 * the whole period (20%, reservoir sampling with a fixed seed, so a log always gives the same page).
 */
export class Sample {
  readonly #all: RunSummary[] = [];
  #overflow = false;
  readonly #latest: Ring<RunSummary>;
  readonly #flagged: Ring<RunSummary>;
  readonly #sample: RunSummary[] = [];
  readonly #sampleSize: number;
  #seen = 0;
  #seed = 0x9e3779b9;

  constructor(readonly limit: number) {
    this.#latest = new Ring(Math.max(1, Math.floor(limit * 0.4)));
    this.#flagged = new Ring(Math.max(1, Math.floor(limit * 0.4)));
    this.#sampleSize = Math.max(1, limit - this.#latest.size - this.#flagged.size);
  }

  #random(): number {
    // xorshift32
    let x = this.#seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#seed = x >>> 0;
    return this.#seed / 0x1_0000_0000;
  }

  add(summary: RunSummary, outcome: Outcome): void {
    this.#seen++;
    if (!this.#overflow) {
      this.#all.push(summary);
      if (this.#all.length <= this.limit) return;
      this.#overflow = true;
      const all = this.#all.splice(0);
      all.forEach((item, index) => this.#place(item, getOutcome(item), index + 1));
      return;
    }
    this.#place(summary, outcome, this.#seen);
  }

  /** `ordinal`: this run's 1-based position among all runs (for the reservoir). */
  #place(summary: RunSummary, outcome: Outcome, ordinal: number): void {
    this.#latest.push(summary);
    if (outcome !== 0) this.#flagged.push(summary);
    if (this.#sample.length < this.#sampleSize) this.#sample.push(summary);
    else {
      const slot = Math.floor(this.#random() * ordinal);
      if (slot < this.#sampleSize) this.#sample[slot] = summary;
    }
  }

  result(): { runs: RunSummary[]; sampled: boolean } {
    if (!this.#overflow) return { runs: this.#all, sampled: false };
    const byId = new Map<string, RunSummary>();
    for (const run of [...this.#sample, ...this.#flagged.toArray(), ...this.#latest.toArray()]) byId.set(run.runId ?? '', run);
    return { runs: [...byId.values()].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0)), sampled: true };
  }
}
