/*
 * `execgate audit report --html`: one self-contained page a reviewer opens first. Counts and the
 * chain verdict are rendered as HTML; the investigation part (filters by actor, decision,
 * secret, command text and time; a timeline whose buckets fit the period; per-secret and
 * per-actor views; a panel per run with everything the log knows) is drawn by the page's own
 * script from data embedded in it. Nothing is fetched: the Content-Security-Policy allows only
 * that script and that style, by their sha256 hashes.
 *
 * Commands, actors, reasons and names are attacker-influenced text. In the HTML part every one
 * goes through escapeHtml; in the data block JSON is escaped so nothing can end the block; the
 * script only ever sets text (see report-client.ts).
 *
 * Scale: one streaming pass; aggregates are exact, the runs embedded for filtering are bounded
 * by `limit` (see report-data.ts), so a million records give a page of a few MB.
 */
import { createHash } from 'node:crypto';
import { readAuditBatches } from './reader';
import { matchesFilter, type SearchFilter } from './query';
import { RunAssembler } from './runs';
import { StatsCollector, type AuditStats } from './stats';
import type { VerifyResult } from './verify';
import { ChainVerifier } from './verify';
import type { AuditKeys } from './key';
import { ReportCollector, type ReportModel } from './report-data';
import { BUCKETS, MAX_BARS } from './report-timeline';
import { REPORT_SCRIPT, REPORT_STYLE } from './report-client';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

// Controls and bidi overrides are made visible, as in the terminal output.
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(INVISIBLE, (char) => `\\u{${char.charCodeAt(0).toString(16)}}`)
    .replace(/[&<>"'`]/g, (char) => HTML_ESCAPES[char]);
}

/** JSON that can sit inside a `<script type="application/json">` block: nothing in it can close the block. */
export function toScriptJson(value: unknown): string {
  // Bidi controls too, so the file itself reads the same in any viewer. Plain one-character
  // passes: a character-class regex with a callback is many times slower over megabytes.
  let json = JSON.stringify(value).replaceAll('<', '\\u003c').replaceAll('>', '\\u003e').replaceAll('&', '\\u0026');
  if (RARE.test(json)) json = json.replace(RARE_ALL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return json;
}

const RARE = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const RARE_ALL = new RegExp(RARE.source, 'g');

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** The page's policy: its own script and style by hash, nothing else, no network. */
export const REPORT_CSP = `default-src 'none'; script-src ${sha256(REPORT_SCRIPT)}; style-src ${sha256(REPORT_STYLE)}; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export interface ReportOptions {
  filter?: SearchFilter;
  /** Runs embedded in the page for filtering and the per-run panel; default 10000. */
  limit?: number;
  /** Verify the chain in the same pass when the key is at hand. */
  keys?: AuditKeys;
  partial?: boolean;
  /** Shown in the header. */
  files: readonly string[];
  now?: Date;
}

function renderVerify(verify: VerifyResult | undefined): string {
  if (verify === undefined) return '<p class="verify unknown">Chain not verified: no audit key at hand (run <code>execgate audit verify</code> where the key is).</p>';
  if (verify.wrongKey.length > 0) {
    const ids = [...new Set(verify.wrongKey.map((file) => file.keyId ?? 'not named'))].join(', ');
    return `<p class="verify broken">WRONG KEY: the log was sealed under audit key id ${escapeHtml(ids)}, the key at hand has id ${escapeHtml(verify.keyId)}; nothing could be checked.</p>`;
  }
  if (verify.ok) {
    return `<p class="verify ok">Chain verified: ${verify.records} records, seq ${verify.firstSeq ?? '-'} to ${verify.lastSeq ?? '-'}, intact (key id ${escapeHtml(verify.keyId)})${verify.notes.length ? `; ${verify.notes.length} note(s)` : ''}.` +
      `<span class="caveat">Not visible to verify: records cut off after seq ${verify.lastSeq ?? '-'} at a record boundary. Compare with the collector's copy: <code>execgate audit verify --against FILE</code>.</span></p>`;
  }
  const first = verify.breaks[0];
  const where = first ? `${first.file} line ${first.line}${first.seq !== undefined ? ` (seq ${first.seq})` : ''}: ${first.reason}` : 'no records';
  return `<p class="verify broken">CHAIN BROKEN (${verify.breakCount} break(s)). First: ${escapeHtml(where)}</p>`;
}

function renderPage(stats: AuditStats, model: ReportModel, verify: VerifyResult | undefined, options: ReportOptions): string {
  const now = (options.now ?? new Date()).toISOString();
  const card = (label: string, value: number, cls = '') => `<div class="card ${cls}"><b>${value}</b>${escapeHtml(label)}</div>`;
  const data = toScriptJson({ ...model, buckets: BUCKETS, maxBars: MAX_BARS });
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>execgate audit report</title>
<style>${REPORT_STYLE}</style></head>
<body>
<header><h1>execgate audit report</h1>
<div class="meta">Period ${escapeHtml(stats.firstTime ?? '-')} to ${escapeHtml(stats.lastTime ?? '-')} (UTC). Generated ${escapeHtml(now)} from ${escapeHtml(options.files.join(', ') || 'no files')}.</div></header>
<main>
${renderVerify(verify)}
<div class="cards">${card('runs', stats.runs)}${card('allowed', stats.decisions.allowed ?? 0)}${card('denied', stats.decisions.denied ?? 0, 'deny')}${card('rejected', model.rejected, 'fail')}${card('failed or rejected', model.outcomes[2], 'fail')}${card('records', stats.records)}${card('references named', model.secretCount)}${card('actors', model.actorCount)}</div>
<section class="panel" id="filter-panel"><h2>Filter</h2>
<form id="filters" class="filters" autocomplete="off">
<label>actor<input name="actor" list="actor-list" placeholder="contains"></label><datalist id="actor-list"></datalist>
<label>decision<select name="decision"><option value="">any</option><option value="allowed">allowed</option><option value="denied">denied</option><option value="rejected">rejected</option><option value="failed">failed</option></select></label>
<label>secret<select name="secret"><option value="">any</option></select></label>
<label>command text<input name="q" placeholder="contains"></label>
<label>from (UTC)<input name="from" placeholder="YYYY-MM-DD[Thh:mm]"></label>
<label>to (UTC)<input name="to" placeholder="YYYY-MM-DD[Thh:mm]"></label>
<label>&nbsp;<button type="button" id="clear">clear filters</button></label>
</form>
<div class="shown" id="shown"></div>
</section>
<section class="panel" id="timeline"><h2>Timeline <small><span class="k a"></span>allowed<span class="k d"></span>denied<span class="k f"></span>failed or rejected</small></h2>
<div id="timeline-chart"></div><div class="legend" id="timeline-caption"></div>
</section>
<div class="split">
<section class="panel" id="runs"><h2>Runs <small>newest first; click one for everything the log knows about it</small></h2>
<div class="scroll"><table><thead><tr><th>time (UTC)</th><th>actor</th><th>decision</th><th>exit</th><th class="num">duration</th><th>command</th><th>references</th></tr></thead><tbody id="runs-body"></tbody></table></div>
<div id="runs-more"></div>
</section>
<section class="panel" id="detail"><h2 id="detail-title">Run detail</h2><div id="detail-body"></div></section>
</div>
<section class="panel" id="secrets"><h2>Secrets <small>every reference named in the period, denied and rejected requests included; exact over all runs</small></h2>
<div class="scroll"><table><thead><tr><th>reference</th><th class="num">requests</th><th class="num">allowed</th><th class="num">denied / rejected</th><th class="num">failed runs</th><th class="num">not found</th><th>sources</th><th>who</th><th class="num">distinct values</th><th class="num">value changes</th><th></th></tr></thead><tbody id="secrets-body"></tbody></table></div>
</section>
<section class="panel" id="actors"><h2>Actors <small>exact over all runs${model.actorCount > model.actors.length ? `; the ${model.actors.length} with the most runs of ${model.actorCount}` : ''}</small></h2>
<div class="scroll"><table><thead><tr><th>actor</th><th class="num">runs</th><th class="num">allowed</th><th class="num">denied</th><th class="num">failed</th><th>secrets named</th><th>top commands</th><th>first / last</th></tr></thead><tbody id="actors-body"></tbody></table></div>
</section>
<noscript><p>This page draws its filters, timeline and tables with its own inline script; counts and the chain status above are plain HTML.</p></noscript>
</main>
<script type="application/json" id="execgate-data">${data}</script>
<script>${REPORT_SCRIPT}</script>
</body></html>
`;
}

/** Read `files` once and build the report page. */
export async function buildHtmlReport(options: ReportOptions): Promise<{ html: string; stats: AuditStats; verify?: VerifyResult; embeddedRuns: number }> {
  const filter = options.filter ?? {};
  const collector = new StatsCollector();
  const report = new ReportCollector(options.limit ?? 10_000);
  const assembler = new RunAssembler((summary) => {
    if (!matchesFilter(summary, filter)) return;
    collector.add(summary);
    report.add(summary);
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
  const model = report.result();
  const html = renderPage(stats, model, verify, options);
  return { html, stats, ...(verify ? { verify } : {}), embeddedRuns: model.runs.length };
}
