/*
 * Text output for reviewers. Commands, actors and reasons are attacker-influenced: printed raw,
 * an escape sequence in a command could rewrite the reviewer's terminal (hide a line, fake a
 * status) and a bidi override could make text read differently than it runs. Every such
 * character is shown as a visible escape instead.
 */
import type { ChainRecord } from './chain';
import { EGRESS_DECISION_EVENT, formatEgressCounted, formatEgressEntry, readEgressEntry } from './egress';
import { formatSshSign, SSH_SIGN_EVENT } from './ssh';
import { getExtra, type RunSummary } from './runs';
import { getExitLabel } from './stats';

// C0 and C1 controls, DEL, bidi embeddings/overrides/isolates, and line/paragraph separators.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, (char) => {
    if (char === '\n') return '\\n';
    if (char === '\t') return '\\t';
    if (char === '\r') return '\\r';
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

/** The decision column. */
export function getDecisionLabel(summary: RunSummary): string {
  return summary.decision === 'event' ? summary.event : summary.decision;
}

const COLUMNS = ['TIME', 'RUN', 'ACTOR', 'DECISION', 'EXIT', 'DURATION', 'COMMAND'] as const;
const WIDTHS = [24, 30, 20, 16, 8, 8, 0];

export function formatTableHeader(): string {
  return COLUMNS.map((name, index) => (WIDTHS[index] ? name.padEnd(WIDTHS[index]) : name)).join(' ').trimEnd();
}

/** One row of `audit search`: time, run, actor, decision, exit, duration, command. */
export function formatTableRow(summary: RunSummary, commandWidth = 120): string {
  const cells = [
    summary.time,
    summary.runId ?? '-',
    escapeTerminal(summary.actor ?? '-'),
    escapeTerminal(getDecisionLabel(summary)),
    getExitLabel(summary),
    formatDuration(summary.durationMs),
    clip(escapeTerminal(summary.command ?? describeStandalone(summary)), commandWidth),
  ];
  return cells.map((cell, index) => (WIDTHS[index] ? clip(cell, WIDTHS[index]).padEnd(WIDTHS[index]) : cell)).join(' ').trimEnd();
}

/** What a record that belongs to no run was about (names only). */
function describeStandalone(summary: RunSummary): string {
  const record = summary.record;
  if (record === undefined) return '-';
  const parts: string[] = [];
  for (const key of ['name', 'kind', 'store', 'policy', 'reason', 'code']) {
    const value = record[key];
    if (typeof value === 'string' || typeof value === 'number') parts.push(`${key}=${String(value)}`);
  }
  return parts.length > 0 ? `(${parts.join(' ')})` : '-';
}

/** `audit show`: the whole story of one run, one line per fact. */
export function formatRunStory(summary: RunSummary, records: readonly Record<string, unknown>[]): string {
  const lines: string[] = [];
  lines.push(`run       ${summary.runId ?? '-'}`);
  lines.push(`actor     ${escapeTerminal(summary.actor ?? '-')}`);
  lines.push(`command   ${escapeTerminal(summary.command ?? '-')}`);
  if (summary.cwd !== undefined) lines.push(`cwd       ${escapeTerminal(summary.cwd)}`);
  if (summary.mode !== undefined) lines.push(`mode      ${summary.mode}`);
  lines.push(`decision  ${summary.decision}${summary.rule ? ` (rule ${escapeTerminal(summary.rule)})` : ''}${summary.reason ? `: ${escapeTerminal(summary.reason)}` : ''}`);
  lines.push(`exit      ${getExitLabel(summary)}${summary.durationMs !== undefined ? ` after ${formatDuration(summary.durationMs)}` : ''}${summary.redactions ? `, ${summary.redactions} redaction(s)` : ''}`);
  for (const ref of summary.refs) {
    const state = ref.found === false ? 'not found (left literal)' : `from ${escapeTerminal(ref.source ?? '?')}${ref.fingerprint ? `, value ${ref.fingerprint}` : ''}`;
    lines.push(`ref       ${escapeTerminal(ref.ref ?? `<<${ref.kind}:${ref.id}>>`)} ${state}`);
  }
  if (summary.envRemoved?.length) lines.push(`env cut   ${summary.envRemoved.map(escapeTerminal).join(', ')}`);
  if (summary.envWithheld?.length) lines.push(`withheld  ${summary.envWithheld.map(escapeTerminal).join(', ')}`);
  if (summary.policy !== undefined) lines.push(`policy    ${escapeTerminal(summary.policy)}`);
  // Members this version does not interpret (a sandbox or egress report, say), as recorded.
  for (const [key, value] of Object.entries(getExtra(summary) ?? {})) lines.push(`${key}: ${escapeTerminal(JSON.stringify(value) ?? String(value))}`);
  const egress = summary.egress;
  if (egress !== undefined) {
    lines.push(`egress    ${egress.total} decision(s)${egress.entries.length < egress.total ? ', identical ones counted (xN)' : ''}:`);
    for (const entry of egress.entries) lines.push(`  ${escapeTerminal(formatEgressCounted(entry))}`);
    if (egress.dropped > 0) lines.push(`  ... and ${egress.dropped} more decision(s) (see \`audit show --json\`)`);
  }
  const ssh = summary.ssh;
  if (ssh !== undefined) {
    lines.push(`ssh       ${ssh.total} agent answer(s)${ssh.entries.length < ssh.total ? ', identical ones counted (xN)' : ''}:`);
    for (const entry of ssh.entries) lines.push(`  ${escapeTerminal(entry.text)}${entry.count > 1 ? `  x${entry.count}` : ''}`);
    if (ssh.dropped > 0) lines.push(`  ... and ${ssh.dropped} more (see \`audit show --json\`)`);
  }
  lines.push('records:');
  for (const record of records) {
    const details: string[] = [];
    if (record.event === EGRESS_DECISION_EVENT) details.push(escapeTerminal(formatEgressEntry(readEgressEntry(record as ChainRecord))));
    if (record.event === SSH_SIGN_EVENT) details.push(escapeTerminal(formatSshSign(record)));
    for (const key of ['code', 'exitCode', 'signal', 'timedOut', 'durationMs', 'message']) {
      if (record[key] !== undefined && record[key] !== null && record[key] !== false) details.push(`${key}=${escapeTerminal(String(record[key]))}`);
    }
    lines.push(`  ${String(record.time)}  seq ${String(record.seq)}  ${escapeTerminal(String(record.event))}${details.length ? `  ${details.join(' ')}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
