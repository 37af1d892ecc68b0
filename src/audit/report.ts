/*
 * `execgate audit report --html`: one self-contained page for reviewers (no script, no external
 * resource): verification status, counts, a timeline of runs per period, denied requests
 * highlighted, failures, secret usage by name, and the latest runs.
 *
 * Commands, actors, reasons and names are attacker-influenced text. Every one goes through
 * escapeHtml (text and attribute contexts alike), and the page carries a Content-Security-Policy
 * that allows no script at all, so even a missed escape could not run code.
 */
import { readAuditBatches } from './reader';
import { matchesFilter, type SearchFilter } from './query';
import { isFailed, RunAssembler, type RunSummary } from './runs';
import { getExitLabel, StatsCollector, type AuditStats } from './stats';
import { formatDuration, getDecisionLabel } from './format';
import type { VerifyResult } from './verify';
import { ChainVerifier } from './verify';
import type { AuditKeys } from './key';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

// Controls and bidi overrides are made visible, as in the terminal output.
// eslint-disable-next-line no-control-regex
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(INVISIBLE, (char) => `\\u{${char.charCodeAt(0).toString(16)}}`)
    .replace(/[&<>"'`]/g, (char) => HTML_ESCAPES[char]!);
}

export interface ReportOptions {
  filter?: SearchFilter;
  /** Runs listed in the timeline table (the latest); default 500. */
  limit?: number;
  /** Verify the chain in the same pass when the key is at hand. */
  keys?: AuditKeys;
  partial?: boolean;
  /** Shown in the header. */
  files: readonly string[];
  now?: Date;
}

class Latest<T> {
  readonly #items: T[] = [];
  readonly #limit: number;
  total = 0;
  constructor(limit: number) {
    this.#limit = limit;
  }
  push(item: T): void {
    this.total++;
    this.#items.push(item);
    if (this.#items.length > this.#limit * 2) this.#items.splice(0, this.#items.length - this.#limit);
  }
  get items(): T[] {
    return this.#items.slice(-this.#limit);
  }
}

interface ReportData {
  stats: AuditStats;
  verify?: VerifyResult;
  runs: Latest<RunSummary>;
  denied: Latest<RunSummary>;
  failed: Latest<RunSummary>;
  perHour: Map<string, { runs: number; denied: number; failed: number }>;
}

const BUCKETS: { label: string; hours: number }[] = [
  { label: 'hour', hours: 1 },
  { label: '6 hours', hours: 6 },
  { label: 'day', hours: 24 },
  { label: 'week', hours: 24 * 7 },
  { label: '30 days', hours: 24 * 30 },
  { label: '365 days', hours: 24 * 365 },
];
const MAX_BARS = 120;

function renderTimeline(perHour: ReportData['perHour']): string {
  if (perHour.size === 0) return '<p class="empty">No runs in this period.</p>';
  let first = Infinity;
  let last = -Infinity;
  for (const key of perHour.keys()) {
    const hour = Date.parse(`${key}:00:00Z`) / 3_600_000;
    first = Math.min(first, hour);
    last = Math.max(last, hour);
  }
  const bucket = BUCKETS.find((b) => (last - first) / b.hours + 1 <= MAX_BARS) ?? BUCKETS[BUCKETS.length - 1]!;
  const bars = new Map<number, { runs: number; denied: number; failed: number }>();
  for (const [key, counts] of perHour) {
    const index = Math.floor((Date.parse(`${key}:00:00Z`) / 3_600_000 - first) / bucket.hours);
    const bar = bars.get(index) ?? { runs: 0, denied: 0, failed: 0 };
    bar.runs += counts.runs;
    bar.denied += counts.denied;
    bar.failed += counts.failed;
    bars.set(index, bar);
  }
  const count = Math.floor((last - first) / bucket.hours) + 1;
  const max = Math.max(...[...bars.values()].map((bar) => bar.runs), 1);
  const cells: string[] = [];
  for (let index = 0; index < count; index++) {
    const bar = bars.get(index) ?? { runs: 0, denied: 0, failed: 0 };
    const start = new Date((first + index * bucket.hours) * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
    const height = (value: number) => `${Math.round((value / max) * 100)}%`;
    cells.push(
      `<div class="bar" title="${escapeHtml(`${start} UTC: ${bar.runs} runs, ${bar.denied} denied, ${bar.failed} failed`)}">` +
        `<div class="ok" style="height:${height(bar.runs - bar.denied - bar.failed)}"></div>` +
        `<div class="fail" style="height:${height(bar.failed)}"></div>` +
        `<div class="deny" style="height:${height(bar.denied)}"></div></div>`,
    );
  }
  const from = new Date(first * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
  const to = new Date((first + count * bucket.hours) * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
  return `<div class="chart" role="img" aria-label="runs per ${bucket.label}">${cells.join('')}</div>
<p class="axis">${escapeHtml(from)} UTC &rarr; ${escapeHtml(to)} UTC, one bar per ${bucket.label}; <span class="k ok">allowed</span> <span class="k fail">failed</span> <span class="k deny">denied</span></p>`;
}

function rowClass(summary: RunSummary): string {
  if (summary.decision === 'denied') return 'run denied';
  if (isFailed(summary)) return 'run failed';
  return 'run';
}

function renderRefs(summary: RunSummary): string {
  const refs = summary.refs
    .map((ref) => `<span class="ref${ref.found === false ? ' missing' : ''}">${escapeHtml(ref.ref ?? `<<${ref.kind}:${ref.id}>>`)}</span>`);
  // Egress decisions of the run: each host once, denied ones marked (the full list is in `audit show`).
  const hosts = new Map<string, { allowed: boolean; injected: boolean }>();
  for (const egress of summary.egress) {
    const key = `${egress.host}${egress.port !== undefined ? `:${egress.port}` : ''}`;
    const seen = hosts.get(key) ?? { allowed: true, injected: false };
    hosts.set(key, { allowed: seen.allowed && egress.allowed, injected: seen.injected || egress.injected.length > 0 });
  }
  const egress = [...hosts].map(([host, state]) =>
    `<span class="egress${state.allowed ? '' : ' denied'}" title="${state.allowed ? 'allowed' : 'denied'}${state.injected ? ', secret injected' : ''}">${state.allowed ? '' : '&#x2715; '}${escapeHtml(host)}${state.injected ? ' &#x1F511;' : ''}</span>`);
  return [...refs, ...egress].join(' ');
}

function renderRunRows(runs: readonly RunSummary[], detail: 'run' | 'denied' | 'failed'): string {
  return runs
    .map((run) => {
      const why = detail === 'denied'
        ? `${run.rule ? `rule ${run.rule}: ` : ''}${run.reason ?? run.message ?? ''}`
        : detail === 'failed'
          ? run.code ?? run.reason ?? (run.timedOut ? 'timed out' : run.signal ? `killed by ${run.signal}` : `exit ${getExitLabel(run)}`)
          : renderRefs(run);
      return `<tr class="${rowClass(run)}" data-run-id="${escapeHtml(run.runId ?? '')}">` +
        `<td class="time">${escapeHtml(run.time.replace('T', ' ').replace('Z', ''))}</td>` +
        `<td class="id">${escapeHtml(run.runId ?? '-')}</td>` +
        `<td>${escapeHtml(run.actor ?? '-')}</td>` +
        `<td class="decision">${escapeHtml(getDecisionLabel(run))}</td>` +
        `<td class="exit">${escapeHtml(getExitLabel(run))}</td>` +
        `<td class="num">${escapeHtml(formatDuration(run.durationMs))}</td>` +
        `<td class="cmd"><code>${escapeHtml(run.command ?? '-')}</code></td>` +
        `<td>${detail === 'run' ? why : escapeHtml(why)}</td></tr>`;
    })
    .join('\n');
}

function runTable(caption: string, runs: Latest<RunSummary>, detail: 'run' | 'denied' | 'failed', id: string): string {
  const shown = runs.items;
  const more = runs.total > shown.length ? ` (the latest ${shown.length} of ${runs.total})` : ` (${runs.total})`;
  const last = detail === 'run' ? 'references and egress' : detail === 'denied' ? 'rule and reason' : 'why';
  if (shown.length === 0) return `<section id="${id}"><h2>${escapeHtml(caption)} (0)</h2><p class="empty">None.</p></section>`;
  return `<section id="${id}"><h2>${escapeHtml(caption + more)}</h2>
<table><thead><tr><th>time (UTC)</th><th>run</th><th>actor</th><th>decision</th><th>exit</th><th>duration</th><th>command</th><th>${last}</th></tr></thead>
<tbody>
${renderRunRows(shown, detail)}
</tbody></table></section>`;
}

function renderVerify(data: ReportData): string {
  const verify = data.verify;
  if (verify === undefined) return '<p class="verify unknown">Chain not verified: no audit key at hand (run <code>execgate audit verify</code> where the key is).</p>';
  if (verify.ok) {
    return `<p class="verify ok">Chain verified: ${verify.records} records, seq ${verify.firstSeq ?? '-'} to ${verify.lastSeq ?? '-'}, intact (key id ${escapeHtml(verify.keyId)})${verify.notes.length ? `; ${verify.notes.length} note(s)` : ''}.</p>`;
  }
  const first = verify.breaks[0];
  const where = first ? `${first.file} line ${first.line}${first.seq !== undefined ? ` (seq ${first.seq})` : ''}: ${first.reason}` : 'no records';
  return `<p class="verify broken">CHAIN BROKEN (${verify.breakCount} break(s)). First: ${escapeHtml(where)}</p>`;
}

function renderSecrets(stats: AuditStats): string {
  if (stats.secrets.length === 0) return '<p class="empty">No references were used.</p>';
  const rows = stats.secrets.map((use) => `<tr class="secret"><td><code>${escapeHtml(use.ref)}</code></td><td class="num">${use.runs}</td><td class="num">${use.found}</td><td class="num">${use.notFound}</td>` +
    `<td>${escapeHtml(Object.entries(use.sources).map(([source, n]) => `${source} (${n})`).join(', ') || '-')}</td><td class="num">${use.fingerprints}</td><td class="num">${use.failed}</td>` +
    `<td class="time">${escapeHtml(use.firstTime.replace('T', ' ').replace('Z', ''))}</td><td class="time">${escapeHtml(use.lastTime.replace('T', ' ').replace('Z', ''))}</td></tr>`);
  return `<table><thead><tr><th>reference</th><th>runs</th><th>found</th><th>not found</th><th>sources</th><th>distinct values</th><th>failed runs</th><th>first use</th><th>last use</th></tr></thead><tbody>
${rows.join('\n')}
</tbody></table>`;
}

function renderCounts(title: string, counts: Record<string, number>): string {
  const rows = Object.entries(counts).map(([key, n]) => `<tr><td>${escapeHtml(key)}</td><td class="num">${n}</td></tr>`).join('');
  return `<table class="counts"><thead><tr><th>${escapeHtml(title)}</th><th>count</th></tr></thead><tbody>${rows || '<tr><td colspan="2">none</td></tr>'}</tbody></table>`;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555;margin:0 0 12px}
table{border-collapse:collapse;width:100%;margin:4px 0}th,td{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f5;font-weight:600}td.num{text-align:right}td.time,td.id{white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px}
td.cmd code{white-space:pre-wrap;word-break:break-all;font-size:12px}
tr.denied{background:#fde2e1}tr.denied td.decision{color:#a50e0e;font-weight:700}
tr.failed{background:#fff4d6}tr.failed td.exit{color:#8a5300;font-weight:700}
.ref{font-family:ui-monospace,monospace;font-size:12px;background:#eef;border-radius:3px;padding:0 3px}.ref.missing{background:#eee;color:#777}
.egress{font-family:ui-monospace,monospace;font-size:12px;background:#e3f5e1;border-radius:3px;padding:0 3px}.egress.denied{background:#fde2e1;color:#a50e0e}
.verify{padding:8px 10px;border-radius:6px;font-weight:600}.verify.ok{background:#e3f5e1;color:#185c12}.verify.broken{background:#a50e0e;color:#fff}.verify.unknown{background:#eee}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:90px}.card b{display:block;font-size:22px}
.card.deny b{color:#a50e0e}.card.fail b{color:#8a5300}
.chart{display:flex;align-items:flex-end;gap:2px;height:120px;border-bottom:1px solid #999;padding-top:4px}
.bar{flex:1;display:flex;flex-direction:column-reverse;height:100%;min-width:2px}
.bar .ok,.k.ok{background:#7aa7e0}.bar .fail,.k.fail{background:#f0b429}.bar .deny,.k.deny{background:#d93025}
.k{display:inline-block;padding:0 6px;border-radius:3px;color:#000}.axis{color:#555;font-size:12px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:16px;align-items:start}.empty{color:#777}
`;

function renderPage(data: ReportData, options: ReportOptions): string {
  const { stats } = data;
  const now = (options.now ?? new Date()).toISOString();
  const decisions = stats.decisions;
  const card = (label: string, value: number, cls = '') => `<div class="card ${cls}"><b>${value}</b>${escapeHtml(label)}</div>`;
  const top = stats.topCommands
    .map((entry) => `<tr><td class="cmd"><code>${escapeHtml(entry.command)}</code></td><td class="num">${entry.runs}</td></tr>`)
    .join('');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>execgate audit report</title>
<style>${STYLE}</style></head>
<body>
<h1>execgate audit report</h1>
<p class="meta">Period ${escapeHtml(stats.firstTime ?? '-')} to ${escapeHtml(stats.lastTime ?? '-')} (UTC). Generated ${escapeHtml(now)} from ${escapeHtml(options.files.join(', ') || 'no files')}.</p>
${renderVerify(data)}
<div class="cards">${card('runs', stats.runs)}${card('allowed', decisions.allowed ?? 0)}${card('denied', decisions.denied ?? 0, 'deny')}${card('rejected', decisions.rejected ?? 0, 'fail')}${card('failed', data.failed.total, 'fail')}${card('records', stats.records)}${card('references used', stats.secrets.length)}</div>
<section id="timeline"><h2>Timeline</h2>
${renderTimeline(data.perHour)}
</section>
${runTable('Denied requests', data.denied, 'denied', 'denied')}
${runTable('Failures', data.failed, 'failed', 'failures')}
<section id="secrets"><h2>Secret usage by name</h2>
${renderSecrets(stats)}
</section>
${runTable('Runs', data.runs, 'run', 'runs')}
<section id="counts"><h2>Counts</h2><div class="grid">
${renderCounts('event', stats.events)}${renderCounts('exit status', stats.exits)}
<table class="counts"><thead><tr><th>top commands${stats.topCommandsApproximate ? ' (approximate)' : ''}</th><th>runs</th></tr></thead><tbody>${top || '<tr><td colspan="2">none</td></tr>'}</tbody></table>
<table class="counts"><thead><tr><th>actor</th><th>runs</th></tr></thead><tbody>${stats.actors.map((a) => `<tr><td>${escapeHtml(a.actor)}</td><td class="num">${a.runs}</td></tr>`).join('') || '<tr><td colspan="2">none</td></tr>'}</tbody></table>
</div></section>
</body></html>
`;
}

/** Read `files` once and build the report page. */
export async function buildHtmlReport(options: ReportOptions): Promise<{ html: string; stats: AuditStats; verify?: VerifyResult }> {
  const limit = options.limit ?? 500;
  const filter = options.filter ?? {};
  const collector = new StatsCollector();
  const data: Omit<ReportData, 'stats'> = {
    runs: new Latest(limit),
    denied: new Latest(Math.min(limit, 200)),
    failed: new Latest(Math.min(limit, 200)),
    perHour: new Map(),
  };
  const assembler = new RunAssembler((summary) => {
    if (!matchesFilter(summary, filter)) return;
    collector.add(summary);
    if (summary.runId === undefined) return;
    data.runs.push(summary);
    const failed = isFailed(summary);
    if (summary.decision === 'denied') data.denied.push(summary);
    if (failed) data.failed.push(summary);
    const hour = summary.time.slice(0, 13);
    const counts = data.perHour.get(hour) ?? { runs: 0, denied: 0, failed: 0 };
    counts.runs++;
    if (summary.decision === 'denied') counts.denied++;
    else if (failed) counts.failed++;
    data.perHour.set(hour, counts);
  });
  const verifier = options.keys ? new ChainVerifier(options.keys, { partial: options.partial }) : undefined;
  for await (const batch of readAuditBatches(options.files)) {
    for (const line of batch) {
      verifier?.push(line);
      assembler.push(line);
    }
  }
  assembler.finish();
  const stats = collector.result(assembler.skipped);
  const verify = verifier?.finish();
  const html = renderPage({ ...data, stats, ...(verify ? { verify } : {}) }, options);
  return { html, stats, ...(verify ? { verify } : {}) };
}
