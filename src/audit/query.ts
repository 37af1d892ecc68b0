/*
 * Search filters over run summaries, and the streaming passes that search, show and stats use.
 */
import { ExecgateError } from '../errors';
import { readAuditBatches } from './reader';
import { isLifecycleRecord } from './events';
import { isFailed, RunAssembler, type RunSummary } from './runs';

export interface SearchFilter {
  /** ISO time; runs whose first record is at or after it. */
  since?: string;
  /** ISO time; runs whose first record is before it. */
  until?: string;
  /** Event names a run must include one of (`exec.*` matches a prefix). */
  events?: readonly string[];
  /** A reference name (`x`, `secret:x` or `<<secret:x>>`) the run used. */
  ref?: string;
  /** A regular expression the unresolved command must match. */
  command?: RegExp;
  denied?: boolean;
  failed?: boolean;
  /** Text the actor must contain. */
  actor?: string;
  runId?: string;
  /** Leave out gateway start/stop records (what `audit search` does unless asked). */
  hideLifecycle?: boolean;
}

const RELATIVE = /^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `2025-01-05`, `2025-01-05T10:00:00Z`, or a duration back from now (`30m`, `24h`, `7d`, `2w`), as an ISO time. */
export function parseTimeSpec(text: string, option: string, now = Date.now()): string {
  const relative = RELATIVE.exec(text.trim());
  if (relative) return new Date(now - Number(relative[1]) * UNIT_MS[relative[2].toLowerCase()]).toISOString();
  const time = Date.parse(text);
  if (Number.isNaN(time)) {
    throw new ExecgateError(
      'EXECGATE_ERR_CLI_USAGE',
      `Expected \`${option}\` to be an ISO date or time (2025-01-05, 2025-01-05T10:00:00Z) or a duration back from now (30m, 24h, 7d, 2w), got ${JSON.stringify(text)}.`,
    );
  }
  return new Date(time).toISOString();
}

function refMatches(want: string, ref: { kind: string; id: string; ref?: string }): boolean {
  return want === ref.id || want === `${ref.kind}:${ref.id}` || want === ref.ref;
}

function eventMatches(patterns: readonly string[], event: string): boolean {
  return patterns.some((pattern) => (pattern.endsWith('*') ? event.startsWith(pattern.slice(0, -1)) : pattern === event));
}

export function matchesFilter(summary: RunSummary, filter: SearchFilter): boolean {
  if (filter.since !== undefined && summary.time < filter.since) return false;
  if (filter.until !== undefined && summary.time >= filter.until) return false;
  if (filter.runId !== undefined && summary.runId !== filter.runId) return false;
  if (filter.hideLifecycle && summary.record !== undefined && isLifecycleRecord(summary.event, summary.record as { reload?: unknown })) return false;
  if (filter.events !== undefined && filter.events.length > 0 && !summary.events.some((event) => eventMatches(filter.events!, event))) return false;
  if (filter.actor !== undefined && !(summary.actor ?? '').includes(filter.actor)) return false;
  if (filter.denied && summary.decision !== 'denied') return false;
  if (filter.failed && !isFailed(summary)) return false;
  if (filter.command !== undefined) {
    if (summary.command === undefined) return false;
    filter.command.lastIndex = 0;
    if (!filter.command.test(summary.command)) return false;
  }
  if (filter.ref !== undefined) {
    const want = filter.ref;
    const record = summary.record;
    const standalone = record !== undefined && typeof record.name === 'string' && (want === record.name || want === `${String(record.kind ?? 'secret')}:${record.name}`);
    if (!standalone && !summary.refs.some((ref) => refMatches(want, ref))) return false;
  }
  return true;
}

/** Stream `files`, fold records into runs, and hand each run that matches `filter` to `onRun`. */
export async function searchAudit(
  files: readonly string[],
  filter: SearchFilter,
  onRun: (summary: RunSummary) => void,
  options: { keepLines?: boolean } = {},
): Promise<{ records: number; runs: number; matched: number; skipped: number }> {
  let records = 0;
  let runs = 0;
  let matched = 0;
  const assembler = new RunAssembler(
    (summary) => {
      runs++;
      if (!matchesFilter(summary, filter)) return;
      matched++;
      onRun(summary);
    },
    { keepLines: options.keepLines },
  );
  // Looking for one run: parse only the lines that name it.
  const needle = filter.runId === undefined ? undefined : Buffer.from(`"runId":${JSON.stringify(filter.runId)}`);
  for await (const batch of readAuditBatches(files)) {
    records += batch.length;
    for (const line of batch) if (needle === undefined || line.bytes.includes(needle)) assembler.push(line);
  }
  assembler.finish();
  return { records, runs, matched, skipped: assembler.skipped };
}
