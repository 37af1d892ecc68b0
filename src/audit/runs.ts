/*
 * Review works on runs: the records that share a run id (request, decision, start, end) folded
 * into one summary, so "which runs used <<secret:x>> and failed" can be asked even though the
 * reference is in `exec.started` and the exit status in `exec.finished`. Records without a run
 * id (gateway started, secret set, ...) are summaries of their own.
 *
 * Streaming in bounded memory: summaries come out in the order their first record was written,
 * as soon as every earlier run is complete; at most `maxOpen` runs are held (a run still open
 * when that many later ones are waiting is emitted as it stands).
 */
import { parseChainLine, type ChainRecord } from './chain';
import type { AuditLine } from './reader';

export interface RunRef {
  readonly kind: string;
  readonly id: string;
  readonly ref?: string;
  readonly found?: boolean;
  readonly source?: string;
  readonly fingerprint?: string;
}

/** One egress decision of a run (`egress.decision` records). */
export interface RunEgress {
  readonly via: string;
  readonly host: string;
  readonly port: number | undefined;
  readonly allowed: boolean;
  readonly rule: string | undefined;
  readonly injected: string[];
}

export type Decision = 'allowed' | 'denied' | 'rejected' | 'requested' | 'event';

export interface RunSummary {
  /** The run id; undefined for a record that belongs to no run. */
  readonly runId: string | undefined;
  /** Time of the first record. */
  readonly time: string;
  endTime: string;
  /** Event of the first record (for records that belong to no run: the event). */
  readonly event: string;
  events: string[];
  actor?: string;
  command?: string;
  cwd?: string;
  mode?: string;
  decision: Decision;
  rule?: string;
  reason?: string;
  code?: string;
  message?: string;
  exitCode?: number | null;
  signal?: string | null;
  timedOut?: boolean;
  killed?: boolean;
  durationMs?: number;
  redactions?: number;
  refs: RunRef[];
  envRemoved?: string[];
  envWithheld?: string[];
  /** Network connections and intercepted requests, in order (sandboxed runs). */
  egress: RunEgress[];
  /** `finished`, `failed`, or undefined while no end record was seen. */
  end?: 'finished' | 'failed';
  /** The records as stored (only kept when asked). */
  lines?: string[];
  /** The whole record, for records that belong to no run. */
  record?: ChainRecord;
  complete: boolean;
}

const TERMINAL: ReadonlySet<string> = new Set(['exec.finished', 'exec.failed', 'exec.denied', 'exec.rejected', 'background.finished', 'background.killed']);

function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function asNames(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined;
}

function newSummary(record: ChainRecord): RunSummary {
  const runId = asString(record.runId);
  // Every member is created here, so all summaries share one shape (V8 keeps them fast).
  return {
    runId,
    time: record.time,
    endTime: record.time,
    event: record.event,
    events: [],
    actor: undefined,
    command: undefined,
    cwd: undefined,
    mode: undefined,
    decision: runId === undefined ? 'event' : 'requested',
    rule: undefined,
    reason: undefined,
    code: undefined,
    message: undefined,
    exitCode: undefined,
    signal: undefined,
    timedOut: undefined,
    killed: undefined,
    durationMs: undefined,
    redactions: undefined,
    refs: [],
    envRemoved: undefined,
    envWithheld: undefined,
    egress: [],
    end: undefined,
    lines: undefined,
    record: undefined,
    complete: runId === undefined,
  };
}

/** Fold one record into its run's summary. */
export function applyRecord(summary: RunSummary, record: ChainRecord): void {
  summary.events.push(record.event);
  summary.endTime = record.time;
  summary.actor ??= asString(record.actor);
  summary.command ??= asString(record.command);
  summary.cwd ??= asString(record.cwd);
  summary.mode ??= asString(record.mode);
  switch (record.event) {
    case 'exec.started': {
      summary.decision = 'allowed';
      const decision = record.decision as { rule?: unknown } | undefined;
      summary.rule ??= asString(decision?.rule);
      if (Array.isArray(record.refs)) {
        const refs: RunRef[] = [];
        for (const ref of record.refs as unknown[]) {
          if (typeof ref !== 'object' || ref === null) continue;
          const item = ref as Record<string, unknown>;
          refs.push({
            kind: String(item.kind),
            id: String(item.id),
            ref: asString(item.ref),
            found: typeof item.found === 'boolean' ? item.found : undefined,
            source: asString(item.source),
            fingerprint: asString(item.fingerprint),
          });
        }
        summary.refs = refs;
      }
      const env = record.env as { removed?: unknown; withheld?: unknown } | undefined;
      summary.envRemoved = asNames(env?.removed);
      summary.envWithheld = asNames(env?.withheld);
      break;
    }
    case 'exec.denied':
      summary.decision = 'denied';
      summary.rule = asString(record.rule) ?? summary.rule;
      summary.reason = asString(record.reason);
      summary.code = asString(record.code);
      summary.message = asString(record.message);
      break;
    case 'exec.rejected':
      summary.decision = 'rejected';
      summary.code = asString(record.code);
      summary.message = asString(record.message);
      break;
    case 'exec.finished':
    case 'background.finished':
    case 'background.killed':
      summary.end = 'finished';
      if (record.exitCode === null || typeof record.exitCode === 'number') summary.exitCode = record.exitCode;
      if (record.signal === null || typeof record.signal === 'string') summary.signal = record.signal;
      if (typeof record.timedOut === 'boolean') summary.timedOut = record.timedOut;
      if (typeof record.killed === 'boolean') summary.killed = record.killed;
      if (typeof record.durationMs === 'number') summary.durationMs = record.durationMs;
      if (typeof record.redactions === 'number') summary.redactions = record.redactions;
      break;
    case 'egress.decision':
      summary.egress.push({
        via: String(record.via),
        host: String(record.host),
        port: typeof record.port === 'number' ? record.port : undefined,
        allowed: record.allowed === true,
        rule: asString(record.rule),
        injected: asNames(record.injected) ?? [],
      });
      break;
    case 'exec.failed':
      summary.end = 'failed';
      summary.code = asString(record.code);
      summary.reason = asString(record.reason);
      break;
    default:
      break;
  }
  if (summary.runId === undefined) summary.record = record;
  if (TERMINAL.has(record.event)) summary.complete = true;
}

/** Whether a run failed: execgate refused it as invalid, it failed to run, or it ended badly. */
export function isFailed(summary: RunSummary): boolean {
  if (summary.decision === 'rejected' || summary.end === 'failed') return true;
  if (summary.end !== 'finished') return false;
  return summary.timedOut === true || (summary.exitCode !== undefined && summary.exitCode !== 0) || (summary.signal !== undefined && summary.signal !== null);
}

export interface AssemblerOptions {
  /** Keep each record's stored line (for --json and show). */
  keepLines?: boolean;
  /** Runs held open at most; default 10000. */
  maxOpen?: number;
}

export class RunAssembler {
  readonly #open = new Map<string, RunSummary>();
  /** Every summary not yet emitted, in first-record order (Map keeps insertion order). */
  readonly #queue = new Map<RunSummary, true>();
  readonly #keepLines: boolean;
  readonly #maxOpen: number;
  readonly #emit: (summary: RunSummary) => void;
  /** Lines that were not records (counted, not reviewed). */
  skipped = 0;

  constructor(emit: (summary: RunSummary) => void, options: AssemblerOptions = {}) {
    this.#emit = emit;
    this.#keepLines = options.keepLines === true;
    this.#maxOpen = options.maxOpen ?? 10_000;
  }

  push(entry: AuditLine): void {
    const parsed = entry.terminated && !entry.overlong ? parseChainLine(undefined, entry.bytes) : undefined;
    if (parsed === undefined || !parsed.ok) {
      this.skipped++;
      return;
    }
    this.pushRecord(parsed.record, this.#keepLines ? entry.bytes.toString('utf8') : undefined);
  }

  pushRecord(record: ChainRecord, line?: string): void {
    const runId = asString(record.runId);
    let summary = runId === undefined ? undefined : this.#open.get(runId);
    if (summary === undefined) {
      summary = newSummary(record);
      if (runId !== undefined) this.#open.set(runId, summary);
      this.#queue.set(summary, true);
    }
    applyRecord(summary, record);
    if (line !== undefined) (summary.lines ??= []).push(line);
    if (summary.complete && runId !== undefined) this.#open.delete(runId);
    this.#drain(false);
  }

  #drain(all: boolean): void {
    for (const summary of this.#queue.keys()) {
      if (!all && !summary.complete && this.#queue.size <= this.#maxOpen) break;
      this.#queue.delete(summary);
      if (summary.runId !== undefined && this.#open.get(summary.runId) === summary) this.#open.delete(summary.runId);
      this.#emit(summary);
    }
  }

  /** Emit everything still held. */
  finish(): void {
    this.#drain(true);
  }
}
