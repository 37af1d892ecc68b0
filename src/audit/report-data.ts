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
 *
 * The timeline is counted in report-timeline.ts and the embedded runs are chosen in
 * report-sample.ts; this file keeps the per-secret and per-actor aggregates and puts the model
 * together.
 */
import { formatEgressEntry } from './egress';
import { Sample } from './report-sample';
import { getOutcome, TimelineCounter, type Outcome, type Timeline } from './report-timeline';
import { getExtra, type RunSummary } from './runs';
import { getExitLabel } from './stats';

const TOP = 10;
const MAX_TRACKED = 5000;
const MAX_ROTATIONS = 50;

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
  /** SSH agent answers: [answer text, count], total, past the kept ones */
  sh?: { d: [number, number][]; n: number; more: number };
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
      ...(run.ssh !== undefined ? { sh: { d: run.ssh.entries.map((entry): [number, number] => [intern(entry.text), entry.count]), n: run.ssh.total, more: run.ssh.dropped } } : {}),
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
