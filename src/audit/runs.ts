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
import { addEgressDecision, EGRESS_DECISION_EVENT, type EgressLog } from './egress';
import { addSshSign, SSH_SIGN_EVENT, type SshSignLog } from './ssh';
import { getEventRole, isTerminalRole } from './events';
import type { AuditLine } from './reader';

export interface RunRef {
  readonly kind: string;
  readonly id: string;
  readonly ref?: string;
  readonly found?: boolean;
  readonly source?: string;
  readonly fingerprint?: string;
}

/*
 * References named in a command's text, for requests refused before anything was resolved (a
 * rejected request records no refs). The same token grammar as refs/tokens.ts; audit sits below
 * refs/ in the layering, so the pattern is repeated here rather than imported.
 */
const ID = '[A-Za-z0-9][A-Za-z0-9._/-]{0,127}';
const TOKEN = new RegExp(`<<(secret|decrypt):(${ID})>>|\\{\\{(secret|decrypt):(${ID})\\}\\}`, 'g');

export function getCommandRefs(command: string): RunRef[] {
  const seen = new Map<string, RunRef>();
  TOKEN.lastIndex = 0;
  for (const match of command.matchAll(TOKEN)) {
    const kind = match[1] ?? match[3];
    const id = match[2] ?? match[4];
    if (!seen.has(`${kind}:${id}`)) seen.set(`${kind}:${id}`, { kind, id, ref: `<<${kind}:${id}>>` });
  }
  return [...seen.values()];
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
  /** The policy the decision was made under (from the record, else the last one the log says was loaded). */
  policy?: string;
  /** How a background run ended: `exited`, `killed`, `timed_out`. */
  state?: string;
  /** Members of the run's records this version does not interpret, flat: event, member, value, ... (see getExtra). */
  detail?: unknown[];
  /** The run's egress decisions, identical ones counted (see egress.ts). */
  egress?: EgressLog;
  /** Its SSH agent's signatures and refusals, identical ones counted (see ssh.ts). */
  ssh?: SshSignLog;
  /** `finished`, `failed`, or undefined while no end record was seen. */
  end?: 'finished' | 'failed';
  /** The records as stored (only kept when asked). */
  lines?: string[];
  /** The whole record, for records that belong to no run. */
  record?: ChainRecord;
  complete: boolean;
}

/** Members the summary already shows; the rest of a start or end record goes to `extra`. */
const KNOWN_MEMBERS: ReadonlySet<string> = new Set([
  'v', 'seq', 'time', 'event', 'prev', 'hash', 'keyId', 'runId', 'actor', 'command', 'cwd', 'mode', 'decision', 'refs', 'env', 'rule', 'reason', 'code',
  'message', 'exitCode', 'signal', 'timedOut', 'killed', 'durationMs', 'redactions', 'state', 'policy', 'timeout', 'shortened',
]);

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
    policy: undefined,
    state: undefined,
    detail: undefined,
    egress: undefined,
    ssh: undefined,
    end: undefined,
    lines: undefined,
    record: undefined,
    complete: runId === undefined,
  };
}

function readRefs(value: unknown): RunRef[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const refs: RunRef[] = [];
  for (const ref of value as unknown[]) {
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
  return refs;
}

/** Keep what the reader does not interpret (a sandbox or egress report, bytes, truncation), by event. */
/*
 * Only the members nobody interprets are kept, flat and without building names: a summary can
 * live long (the report keeps thousands), and holding whole parsed records costs the garbage
 * collector dearly over a million of them.
 */
function keepExtra(summary: RunSummary, record: ChainRecord): void {
  for (const key in record) if (!KNOWN_MEMBERS.has(key)) (summary.detail ??= []).push(record.event, key, record[key]);
}

/** Members of a run's records this version does not interpret (a sandbox or egress report, bytes, ...), as `event.member`. */
export function getExtra(summary: RunSummary): Record<string, unknown> | undefined {
  const detail = summary.detail;
  if (detail === undefined) return undefined;
  const extra: Record<string, unknown> = {};
  for (let index = 0; index < detail.length; index += 3) extra[`${String(detail[index])}.${String(detail[index + 1])}`] = detail[index + 2];
  return extra;
}

/** Fold one record into its run's summary. */
export function applyRecord(summary: RunSummary, record: ChainRecord): void {
  summary.events.push(record.event);
  summary.endTime = record.time;
  summary.actor ??= asString(record.actor);
  summary.command ??= asString(record.command);
  summary.cwd ??= asString(record.cwd);
  summary.mode ??= asString(record.mode);
  summary.policy = asString(record.policy) ?? summary.policy;
  const role = getEventRole(record.event);
  switch (role) {
    case 'started': {
      summary.decision = 'allowed';
      const decision = record.decision as { rule?: unknown; policy?: unknown } | undefined;
      summary.rule ??= asString(decision?.rule);
      summary.policy = asString(decision?.policy) ?? summary.policy;
      summary.reason ??= asString((record.decision as { reason?: unknown } | undefined)?.reason);
      const refs = readRefs(record.refs);
      if (refs !== undefined) summary.refs = refs;
      const env = record.env as { removed?: unknown; withheld?: unknown } | undefined;
      summary.envRemoved = asNames(env?.removed);
      summary.envWithheld = asNames(env?.withheld);
      keepExtra(summary, record);
      break;
    }
    case 'denied':
      summary.decision = 'denied';
      summary.rule = asString(record.rule) ?? summary.rule;
      summary.reason = asString(record.reason);
      summary.code = asString(record.code);
      summary.message = asString(record.message);
      summary.refs = readRefs(record.refs) ?? getCommandRefs(summary.command ?? '');
      break;
    case 'rejected':
      summary.decision = 'rejected';
      summary.code = asString(record.code);
      summary.message = asString(record.message);
      summary.refs = readRefs(record.refs) ?? getCommandRefs(summary.command ?? '');
      break;
    case 'ended':
      summary.end = 'finished';
      if (record.exitCode === null || typeof record.exitCode === 'number') summary.exitCode = record.exitCode;
      if (record.signal === null || typeof record.signal === 'string') summary.signal = record.signal;
      if (typeof record.timedOut === 'boolean') summary.timedOut = record.timedOut;
      if (typeof record.killed === 'boolean') summary.killed = record.killed;
      if (typeof record.durationMs === 'number') summary.durationMs = record.durationMs;
      if (typeof record.redactions === 'number') summary.redactions = record.redactions;
      // A background run's end says how in `state` (exited, killed, timed_out).
      if (typeof record.state === 'string') {
        summary.state = record.state;
        if (record.state === 'timed_out') summary.timedOut = true;
        if (record.state === 'killed') summary.killed = true;
      }
      if (summary.reason === undefined && typeof record.reason === 'string') summary.reason = record.reason;
      keepExtra(summary, record);
      break;
    case 'failed':
      summary.end = 'failed';
      summary.code = asString(record.code);
      summary.reason = asString(record.reason);
      break;
    case 'run':
      if (record.event === EGRESS_DECISION_EVENT) summary.egress = addEgressDecision(summary.egress, record);
      else if (record.event === SSH_SIGN_EVENT) summary.ssh = addSshSign(summary.ssh, record);
      else if (summary.runId !== undefined && record.event !== 'background.started') keepExtra(summary, record);
      break;
    default:
      break;
  }
  if (summary.runId === undefined) summary.record = record;
  if (isTerminalRole(role)) summary.complete = true;
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
  /** The policy the log last said was loaded, for runs whose records do not name one. */
  #policy: string | undefined;

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
    if (runId === undefined && (record.event === 'gateway.started' || record.event === 'policy.loaded')) {
      this.#policy = asString(record.event === 'policy.loaded' ? record.source : record.policy) ?? this.#policy;
    }
    if (summary === undefined) {
      summary = newSummary(record);
      if (runId !== undefined) summary.policy = this.#policy;
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
