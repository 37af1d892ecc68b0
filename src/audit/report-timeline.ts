/*
 * The report's timeline: each run's outcome (allowed, denied, failed) counted per time bucket,
 * exact over every run of the period whatever the page embeds. Counted at a few base resolutions
 * during the one pass, so that the bucket width can be chosen at the end, once the period's span
 * is known. Apart from the rest of the report's data (report-data.ts) because it is its own
 * bounded structure with its own limits.
 */
import { isFailed, type RunSummary } from './runs';

/** Bucket widths the timeline may use, finest first: it picks the finest that gives at most MAX_BARS bars. */
export const BUCKETS: readonly { ms: number; label: string }[] = [
  { ms: 1000, label: 'second' },
  { ms: 5000, label: '5 seconds' },
  { ms: 15_000, label: '15 seconds' },
  { ms: 60_000, label: 'minute' },
  { ms: 5 * 60_000, label: '5 minutes' },
  { ms: 15 * 60_000, label: '15 minutes' },
  { ms: 3_600_000, label: 'hour' },
  { ms: 3 * 3_600_000, label: '3 hours' },
  { ms: 6 * 3_600_000, label: '6 hours' },
  { ms: 86_400_000, label: 'day' },
  { ms: 7 * 86_400_000, label: 'week' },
  { ms: 30 * 86_400_000, label: '30 days' },
  { ms: 365 * 86_400_000, label: '365 days' },
];
export const MAX_BARS = 120;
/** Base resolutions counted during the pass; each bucket width is a multiple of one of them. */
const BASES = [1000, 60_000, 3_600_000, 86_400_000] as const;
/** A base map that grows past this many keys covers too long a period to need that resolution. */
const MAX_BASE_KEYS = 200_000;

/** 0 allowed, 1 denied, 2 failed (rejected counts as failed: execgate refused it as invalid). */
export type Outcome = 0 | 1 | 2;

export function getOutcome(summary: RunSummary): Outcome {
  if (summary.decision === 'denied') return 1;
  return isFailed(summary) ? 2 : 0;
}

export interface Timeline {
  readonly start: number;
  readonly bucketMs: number;
  readonly label: string;
  /** [allowed, denied, failed] per bucket. */
  readonly bars: readonly (readonly [number, number, number])[];
}

export class TimelineCounter {
  readonly #maps: (Map<number, [number, number, number]> | undefined)[] = BASES.map(() => new Map());
  #first = Infinity;
  #last = -Infinity;

  add(time: number, outcome: Outcome): void {
    if (!Number.isFinite(time)) return;
    if (time < this.#first) this.#first = time;
    if (time > this.#last) this.#last = time;
    for (let index = 0; index < BASES.length; index++) {
      const map = this.#maps[index];
      if (map === undefined) continue;
      const key = Math.floor(time / BASES[index]);
      let counts = map.get(key);
      if (counts === undefined) {
        if (map.size >= MAX_BASE_KEYS) {
          this.#maps[index] = undefined;
          continue;
        }
        counts = [0, 0, 0];
        map.set(key, counts);
      }
      counts[outcome]++;
    }
  }

  result(): Timeline | undefined {
    if (this.#first === Infinity) return undefined;
    const span = this.#last - this.#first;
    for (const bucket of BUCKETS) {
      if (span / bucket.ms + 1 > MAX_BARS && bucket !== BUCKETS[BUCKETS.length - 1]) continue;
      const baseIndex = BASES.reduce((found, base, index) => (bucket.ms % base === 0 && this.#maps[index] !== undefined ? index : found), -1);
      if (baseIndex < 0) continue;
      const base = BASES[baseIndex];
      const start = Math.floor(this.#first / bucket.ms) * bucket.ms;
      const count = Math.floor((this.#last - start) / bucket.ms) + 1;
      const bars: [number, number, number][] = Array.from({ length: count }, () => [0, 0, 0]);
      for (const [key, counts] of this.#maps[baseIndex]!) {
        const bar = bars[Math.floor((key * base - start) / bucket.ms)];
        if (bar === undefined) continue;
        bar[0] += counts[0];
        bar[1] += counts[1];
        bar[2] += counts[2];
      }
      return { start, bucketMs: bucket.ms, label: bucket.label, bars };
    }
    return undefined;
  }
}
