/*
 * What the HTML report knows, gathered in the one streaming pass over the log. Two kinds of
 * data, kept apart so the page can say which is which:
 *
 * - exact aggregates over every run of the period: counts, the timeline (allowed / denied /
 *   failed per bucket), per secret (who, which commands, denied attempts, value fingerprint
 *   changes = rotations) and per actor;
 * - the runs embedded for filtering and the per-run panel: all of them when there are at most
 *   `limit`, otherwise the latest, the latest denied / rejected / failed, and a uniform sample
 *   (reservoir), so a browser never holds a million rows. The page says how many it holds.
 *
 * Strings repeat heavily (actors, commands, reference names, fingerprints), so embedded runs
 * refer to one string table by index.
 */
import { formatEgressEntry } from './egress';
import { getExtra, isFailed, type RunSummary } from './runs';
import { getExitLabel } from './stats';

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
const TOP = 10;
const MAX_TRACKED = 5000;
const MAX_ROTATIONS = 50;

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

class TimelineCounter {
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

/** Counts with a bound on distinct keys (the rarest dropped past it). */
class Tally<K extends string | number = string> {
  readonly #counts = new Map<K, number>();
  add(key: K): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    if (this.#counts.size > MAX_TRACKED) {
      const sorted = [...this.#counts.values()].sort((a, b) => a - b);
      const threshold = sorted[Math.floor(sorted.length / 2)];
      for (const [name, count] of this.#counts) if (count <= threshold) this.#counts.delete(name);
    }
  }
  top(n = TOP): [K, number][] {
    return [...this.#counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
  }
  get size(): number {
    return this.#counts.size;
  }
}

export interface SecretView {
  readonly ref: string;
  runs: number;
  allowed: number;
  denied: number;
  rejected: number;
  failed: number;
  notFound: number;
  sources: Record<string, number>;
  actors: [string, number][];
  commands: [string, number][];
  /** The latest denied or rejected requests that named it. */
  deniedRuns: { runId: string; time: string; actor: string; decision: string }[];
  /** Each change of the value fingerprint: a rotation (or a different store answering). */
  rotations: { time: string; runId: string; from: string; to: string }[];
  fingerprints: number;
  firstTime: string;
  lastTime: string;
}

export interface ActorView {
  readonly actor: string;
  runs: number;
  allowed: number;
  denied: number;
  failed: number;
  secrets: [string, number][];
  commands: [string, number][];
  firstTime: string;
  lastTime: string;
}

interface SecretState extends Omit<SecretView, 'actors' | 'commands'> {
  actors: Tally;
  commands: Tally<number>;
  lastFingerprint: string | undefined;
  prints: Set<string>;
}

interface ActorState extends Omit<ActorView, 'secrets' | 'commands'> {
  secrets: Tally;
  commands: Tally<number>;
}

/** Commands by number, so the per-actor and per-secret tallies hash a long command once per run, not once per tally. */
const MAX_COMMANDS = 50_000;

/** An embedded run: strings as indexes into the string table. */
export interface EmbeddedRun {
  /** run id, time, end time */
  i: string;
  t: string;
  e: string;
  /** actor, command, cwd, mode, policy, rule, reason, code, message (string table indexes, -1 none) */
  a: number;
  c: number;
  w: number;
  m: number;
  p: number;
  r: number;
  why: number;
  code: number;
  msg: number;
  /** decision, outcome, exit label */
  d: string;
  o: Outcome;
  x: string;
  exit?: number | null;
  sig?: string | null;
  to?: boolean;
  k?: boolean;
  st?: string;
  ms?: number;
  red?: number;
  /** references: [ref, found (1/0/-1 unknown), source, fingerprint] */
  refs: [number, number, number, number][];
  rm?: number[];
  wh?: number[];
  ev: string[];
  extra?: Record<string, unknown>;
  /** egress decisions: [decision text, count] (identical ones counted), total, past the kept ones */
  eg?: { d: [number, number][]; n: number; more: number };
}

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
class Sample {
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

export interface ReportModel {
  readonly timeline?: Timeline;
  readonly secrets: SecretView[];
  readonly actors: ActorView[];
  readonly strings: string[];
  readonly runs: EmbeddedRun[];
  readonly totalRuns: number;
  readonly sampled: boolean;
  readonly outcomes: [number, number, number];
  readonly rejected: number;
  /** Distinct actors and references (the views list the most active 200 and 500). */
  readonly actorCount: number;
  readonly secretCount: number;
}

export class ReportCollector {
  readonly #timeline = new TimelineCounter();
  readonly #secrets = new Map<string, SecretState>();
  readonly #actors = new Map<string, ActorState>();
  readonly #sample: Sample;
  readonly #outcomes: [number, number, number] = [0, 0, 0];
  #rejected = 0;
  #runs = 0;
  readonly #commandIds = new Map<string, number>();
  readonly #commands: string[] = [];

  #getCommandId(command: string | undefined): number | undefined {
    if (command === undefined) return undefined;
    let id = this.#commandIds.get(command);
    if (id === undefined) {
      if (this.#commands.length >= MAX_COMMANDS) return undefined;
      id = this.#commands.length;
      this.#commands.push(command);
      this.#commandIds.set(command, id);
    }
    return id;
  }

  constructor(limit: number) {
    this.#sample = new Sample(limit);
  }

  add(summary: RunSummary): void {
    if (summary.runId === undefined) return;
    this.#runs++;
    const outcome = getOutcome(summary);
    this.#outcomes[outcome]++;
    if (summary.decision === 'rejected') this.#rejected++;
    this.#timeline.add(Date.parse(summary.time), outcome);
    this.#sample.add(summary, outcome);
    const actor = summary.actor ?? '-';
    const command = this.#getCommandId(summary.command);
    this.#addActor(actor, summary, outcome, command);
    for (const ref of summary.refs) this.#addSecret(ref.ref ?? `<<${ref.kind}:${ref.id}>>`, ref, actor, summary, outcome, command);
  }

  #addActor(actor: string, summary: RunSummary, outcome: Outcome, command: number | undefined): void {
    let state = this.#actors.get(actor);
    if (state === undefined) {
      if (this.#actors.size >= MAX_TRACKED) return;
      state = { actor, runs: 0, allowed: 0, denied: 0, failed: 0, secrets: new Tally(), commands: new Tally(), firstTime: summary.time, lastTime: summary.time };
      this.#actors.set(actor, state);
    }
    state.runs++;
    if (outcome === 1) state.denied++;
    else if (outcome === 2) state.failed++;
    else state.allowed++;
    state.lastTime = summary.time;
    if (command !== undefined) state.commands.add(command);
    for (const ref of summary.refs) state.secrets.add(ref.ref ?? `<<${ref.kind}:${ref.id}>>`);
  }

  #addSecret(key: string, ref: RunSummary['refs'][number], actor: string, summary: RunSummary, outcome: Outcome, command: number | undefined): void {
    let state = this.#secrets.get(key);
    if (state === undefined) {
      if (this.#secrets.size >= MAX_TRACKED) return;
      state = {
        ref: key, runs: 0, allowed: 0, denied: 0, rejected: 0, failed: 0, notFound: 0, sources: {}, actors: new Tally(), commands: new Tally(),
        deniedRuns: [], rotations: [], fingerprints: 0, firstTime: summary.time, lastTime: summary.time, lastFingerprint: undefined, prints: new Set(),
      };
      this.#secrets.set(key, state);
    }
    state.runs++;
    state.lastTime = summary.time;
    state.actors.add(actor);
    if (command !== undefined) state.commands.add(command);
    if (summary.decision === 'denied' || summary.decision === 'rejected') {
      if (summary.decision === 'denied') state.denied++;
      else state.rejected++;
      state.deniedRuns.push({ runId: summary.runId!, time: summary.time, actor, decision: summary.decision });
      if (state.deniedRuns.length > TOP * 2) state.deniedRuns.splice(0, TOP);
      return;
    }
    state.allowed++;
    if (outcome === 2) state.failed++;
    if (ref.found === false) state.notFound++;
    if (ref.source !== undefined) state.sources[ref.source] = (state.sources[ref.source] ?? 0) + 1;
    const print = ref.fingerprint;
    if (print !== undefined) {
      if (state.prints.size < 1000) state.prints.add(print);
      if (state.lastFingerprint !== undefined && state.lastFingerprint !== print) {
        state.rotations.push({ time: summary.time, runId: summary.runId!, from: state.lastFingerprint, to: print });
        if (state.rotations.length > MAX_ROTATIONS * 2) state.rotations.splice(0, MAX_ROTATIONS);
      }
      state.lastFingerprint = print;
    }
  }

  result(): ReportModel {
    const strings: string[] = [];
    const index = new Map<string, number>();
    const intern = (value: string | undefined): number => {
      if (value === undefined) return -1;
      let found = index.get(value);
      if (found === undefined) {
        found = strings.length;
        strings.push(value);
        index.set(value, found);
      }
      return found;
    };
    const { runs, sampled } = this.#sample.result();
    const embedded = runs.map((run): EmbeddedRun => ({
      i: run.runId ?? '',
      t: run.time,
      e: run.endTime,
      a: intern(run.actor),
      c: intern(run.command),
      w: intern(run.cwd),
      m: intern(run.mode),
      p: intern(run.policy),
      r: intern(run.rule),
      why: intern(run.reason),
      code: intern(run.code),
      msg: intern(run.message),
      d: run.decision,
      o: getOutcome(run),
      x: getExitLabel(run),
      ...(run.exitCode !== undefined ? { exit: run.exitCode } : {}),
      ...(run.signal !== undefined ? { sig: run.signal } : {}),
      ...(run.timedOut ? { to: true } : {}),
      ...(run.killed ? { k: true } : {}),
      ...(run.state !== undefined ? { st: run.state } : {}),
      ...(run.durationMs !== undefined ? { ms: run.durationMs } : {}),
      ...(run.redactions !== undefined ? { red: run.redactions } : {}),
      refs: run.refs.map((ref) => [intern(ref.ref ?? `<<${ref.kind}:${ref.id}>>`), ref.found === true ? 1 : ref.found === false ? 0 : -1, intern(ref.source), intern(ref.fingerprint)]),
      ...(run.envRemoved?.length ? { rm: run.envRemoved.map(intern) } : {}),
      ...(run.envWithheld?.length ? { wh: run.envWithheld.map(intern) } : {}),
      ev: run.events,
      ...(getExtra(run) !== undefined ? { extra: getExtra(run) } : {}),
      ...(run.egress !== undefined ? { eg: { d: run.egress.entries.map((entry): [number, number] => [intern(formatEgressEntry(entry)), entry.count]), n: run.egress.total, more: run.egress.dropped } } : {}),
    }));
    const secrets = [...this.#secrets.values()]
      .map(({ actors, commands, lastFingerprint: _last, prints, deniedRuns, rotations, ...rest }): SecretView => ({
        ...rest,
        actors: actors.top(),
        commands: commands.top(5).map(([id, count]): [string, number] => [this.#commands[id], count]),
        deniedRuns: deniedRuns.slice(-TOP).reverse(),
        rotations: rotations.slice(-MAX_ROTATIONS),
        fingerprints: prints.size,
      }))
      .sort((a, b) => b.denied + b.rejected - (a.denied + a.rejected) || b.runs - a.runs || (a.ref < b.ref ? -1 : 1));
    const actors = [...this.#actors.values()]
      .map(({ secrets: used, commands, ...rest }): ActorView => ({ ...rest, secrets: used.top(), commands: commands.top(5).map(([id, count]): [string, number] => [this.#commands[id], count]) }))
      .sort((a, b) => b.runs - a.runs || (a.actor < b.actor ? -1 : 1))
      .slice(0, 200);
    const timeline = this.#timeline.result();
    return {
      ...(timeline !== undefined ? { timeline } : {}),
      secrets: secrets.slice(0, 500),
      actors,
      strings,
      runs: embedded,
      totalRuns: this.#runs,
      sampled,
      outcomes: this.#outcomes,
      rejected: this.#rejected,
      actorCount: this.#actors.size,
      secretCount: this.#secrets.size,
    };
  }
}
