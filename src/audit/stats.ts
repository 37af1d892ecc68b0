/*
 * Counts over a period, streaming: by event, by decision, by exit status, the most frequent
 * commands, and which secrets were used (by name; fingerprints only counted, never shown as
 * values because there are none). Distinct commands are counted exactly up to a bound; past it
 * the rarest are dropped now and then (lossy counting) and the top list says it is approximate.
 */
import { readAuditBatches } from './reader';
import { matchesFilter, type SearchFilter } from './query';
import { isFailed, RunAssembler, type RunSummary } from './runs';

const MAX_DISTINCT = 50_000;
const MAX_FINGERPRINTS = 100;

/** Counts with a bound on distinct keys. */
export class BoundedCounter {
  readonly #counts = new Map<string, number>();
  readonly #max: number;
  approximate = false;

  constructor(max = MAX_DISTINCT) {
    this.#max = max;
  }

  add(key: string, by = 1): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + by);
    if (this.#counts.size > this.#max) this.#prune();
  }

  #prune(): void {
    const sorted = [...this.#counts.values()].sort((a, b) => a - b);
    const threshold = sorted[Math.floor(sorted.length / 2)];
    for (const [key, count] of this.#counts) if (count <= threshold) this.#counts.delete(key);
    this.approximate = true;
  }

  top(n: number): { key: string; count: number }[] {
    return [...this.#counts].map(([key, count]) => ({ key, count })).sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1)).slice(0, n);
  }

  toObject(): Record<string, number> {
    return Object.fromEntries([...this.#counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
  }
}

export interface SecretUse {
  ref: string;
  kind: string;
  name: string;
  /** Runs that named it, allowed or not. */
  runs: number;
  /** Requests naming it that the policy denied, or that were rejected as invalid (nothing resolved). */
  denied: number;
  rejected: number;
  found: number;
  notFound: number;
  sources: Record<string, number>;
  /** Distinct value fingerprints seen (a change means the secret's value changed). */
  fingerprints: number;
  failed: number;
  firstTime: string;
  lastTime: string;
}

export interface AuditStats {
  firstTime?: string;
  lastTime?: string;
  records: number;
  runs: number;
  events: Record<string, number>;
  decisions: Record<string, number>;
  exits: Record<string, number>;
  actors: { actor: string; runs: number }[];
  topCommands: { command: string; runs: number }[];
  topCommandsApproximate: boolean;
  secrets: SecretUse[];
  skipped: number;
}

/** The exit column: exit code, `timeout`, the signal, `failed`, or `-` (no end record). */
export function getExitLabel(summary: RunSummary): string {
  if (summary.decision === 'denied' || summary.decision === 'rejected' || summary.decision === 'event') return '-';
  if (summary.end === 'failed') return 'failed';
  if (summary.end !== 'finished') return 'no end';
  if (summary.timedOut) return 'timeout';
  if (summary.signal) return summary.signal;
  return summary.exitCode === undefined || summary.exitCode === null ? '?' : String(summary.exitCode);
}

export class StatsCollector {
  readonly #events = new BoundedCounter(1000);
  readonly #decisions = new BoundedCounter(100);
  readonly #exits = new BoundedCounter(1000);
  readonly #actors = new BoundedCounter();
  readonly #commands = new BoundedCounter();
  readonly #secrets = new Map<string, SecretUse & { prints: Set<string> }>();
  #records = 0;
  #runs = 0;
  #firstTime: string | undefined;
  #lastTime: string | undefined;

  add(summary: RunSummary): void {
    this.#records += summary.events.length;
    for (const event of summary.events) this.#events.add(event);
    if (this.#firstTime === undefined || summary.time < this.#firstTime) this.#firstTime = summary.time;
    if (this.#lastTime === undefined || summary.endTime > this.#lastTime) this.#lastTime = summary.endTime;
    if (summary.runId === undefined) return;
    this.#runs++;
    this.#decisions.add(summary.decision);
    this.#exits.add(getExitLabel(summary));
    if (summary.actor !== undefined) this.#actors.add(summary.actor);
    if (summary.command !== undefined) this.#commands.add(summary.command);
    const failed = isFailed(summary);
    for (const ref of summary.refs) {
      const key = ref.ref ?? `<<${ref.kind}:${ref.id}>>`;
      let use = this.#secrets.get(key);
      if (use === undefined) {
        if (this.#secrets.size >= MAX_DISTINCT) continue;
        use = { ref: key, kind: ref.kind, name: ref.id, runs: 0, denied: 0, rejected: 0, found: 0, notFound: 0, sources: {}, fingerprints: 0, failed: 0, firstTime: summary.time, lastTime: summary.time, prints: new Set() };
        this.#secrets.set(key, use);
      }
      use.runs++;
      if (summary.decision === 'denied') use.denied++;
      else if (summary.decision === 'rejected') use.rejected++;
      else if (ref.found === false) use.notFound++;
      else if (ref.found === true) use.found++;
      if (ref.source !== undefined) use.sources[ref.source] = (use.sources[ref.source] ?? 0) + 1;
      if (ref.fingerprint !== undefined && use.prints.size < MAX_FINGERPRINTS) use.prints.add(ref.fingerprint);
      if (failed) use.failed++;
      use.lastTime = summary.time;
    }
  }

  result(skipped = 0): AuditStats {
    return {
      ...(this.#firstTime !== undefined ? { firstTime: this.#firstTime } : {}),
      ...(this.#lastTime !== undefined ? { lastTime: this.#lastTime } : {}),
      records: this.#records,
      runs: this.#runs,
      events: this.#events.toObject(),
      decisions: this.#decisions.toObject(),
      exits: this.#exits.toObject(),
      actors: this.#actors.top(10).map(({ key, count }) => ({ actor: key, runs: count })),
      topCommands: this.#commands.top(10).map(({ key, count }) => ({ command: key, runs: count })),
      topCommandsApproximate: this.#commands.approximate,
      secrets: [...this.#secrets.values()]
        .map(({ prints, ...use }) => ({ ...use, fingerprints: prints.size }))
        .sort((a, b) => b.runs - a.runs || (a.ref < b.ref ? -1 : 1)),
      skipped,
    };
  }
}

/** Stats over the runs in `files` that match `filter` (usually just a period). */
export async function collectStats(files: readonly string[], filter: SearchFilter = {}): Promise<AuditStats> {
  const collector = new StatsCollector();
  const assembler = new RunAssembler((summary) => {
    if (matchesFilter(summary, filter)) collector.add(summary);
  });
  for await (const batch of readAuditBatches(files)) for (const line of batch) assembler.push(line);
  assembler.finish();
  return collector.result(assembler.skipped);
}
