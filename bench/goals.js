'use strict';
/*
 * The performance goals, in one place. `npm run bench` (bench/run.js) prints them with this run's
 * figure beside each one, met or missed; docs/performance.md holds the same table between the
 * markers `<!-- goals:begin -->` and `<!-- goals:end -->`, and test/docs/goals.test.ts checks
 * that it matches this list. After changing a goal: `node bench/goals.js --write` rewrites the
 * table in docs/performance.md; `node bench/goals.js --check` says whether it matches.
 *
 * A goal is found in a run's rows in two ways: a row that names it (`row(..., { goal: 'id' })`
 * in bench/lib.js: the row's ratio, or its median for a goal on an absolute figure), else the
 * goal's `find(rows)`, which knows the figure's current row names. A goal that no row of the
 * run measures is reported as not measured, never as met. Beside each, the peer's figure where
 * a row measures the same for @anthropic-ai/sandbox-runtime (`row(..., { peerOf: 'id' })`).
 */
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const DOC = join(__dirname, '..', 'docs', 'performance.md');
const BEGIN = '<!-- goals:begin -->';
const END = '<!-- goals:end -->';

const byName = (figure, pattern) => (rows) => rows.find((r) => r.figure === figure && pattern.test(r.name));
const ratioOf = (figure, pattern) => (rows) => {
  const r = byName(figure, pattern)(rows);
  return r && r.ratio ? { value: r.ratio.value, row: r } : undefined;
};
const medianOf = (figure, pattern) => (rows) => {
  const r = byName(figure, pattern)(rows);
  return r ? { value: r.median, row: r } : undefined;
};
/** The ratio of two rows' medians (two rows measured side by side in the same figure). */
const medianRatio = (figure, pattern, basePattern) => (rows) => {
  const r = byName(figure, pattern)(rows);
  const base = byName(figure, basePattern)(rows);
  return r && base ? { value: r.median / base.median, row: r } : undefined;
};

/**
 * id: stable name (rows name it); figure: the bench figure that measures it; what: the
 * measurement; against: what a user would otherwise run; direction and target: the goal, on a
 * ratio (unit 'x') or an absolute figure (unit given); before: the figure when the goal was set
 * (the tree at 9dd1ec9, clean environment). The proxy goals are of the real path, a client inside
 * a sandboxed run (figures 14 and 8's end-to-end rows), not of requests sent to the proxy's socket.
 */
const GOALS = [
  {
    id: 'cli-start', figure: 6, what: 'CLI `execgate run -- true`, wall time, clean environment', against: '`node -e 0`',
    direction: '<=', target: 2, unit: 'x', before: '8.3x',
    find: ratioOf(6, /^execgate run -- true/),
  },
  {
    id: 'exec-unsandboxed', figure: 1, what: '`gateway.exec` of `true`, sandbox off (audit on, the defaults otherwise)', against: 'raw `spawn(\'bash\', [\'-c\', \'true\'])`',
    direction: '<=', target: 1.15, unit: 'x', before: '1.87x',
    find: ratioOf(1, /^gateway\.exec \(defaults/),
  },
  {
    id: 'sandbox-warm', figure: 9, what: 'sandboxed `gateway.exec` of `true`, warm sandbox', against: 'raw unsandboxed `bash -c true`',
    direction: '<=', target: 1.5, unit: 'x', before: '2.7x',
    find: ratioOf(9, /^ {2}same, against raw unsandboxed bash/),
  },
  {
    id: 'sandbox-warm-cpu', figure: 14, what: 'CPU per sandboxed warm `gateway.exec` of `true`, defaults (the next sandbox\'s preparation included)', against: 'CPU of a raw `bwrap` (pid, net, ipc, uts) + `bash -c true`',
    direction: '<=', target: 1, unit: 'x', before: '4.1x (15.7 ms against 3.8 ms)',
    find: () => undefined,
  },
  {
    id: 'sandbox-cold', figure: 9, what: 'sandboxed `gateway.exec` of `true`, every run cold', against: 'raw `bwrap` with the same namespaces and mounts + `bash -c true`',
    direction: '<=', target: 1.25, unit: 'x', before: '1.55-1.66x',
    find: ratioOf(9, /^gateway\.exec true, sandboxed, network open, warm sandboxes off/),
  },
  {
    id: 'redact-1000', figure: 4, what: 'redaction, 1,000 secrets with their encodings, mixed text', against: '(absolute)',
    direction: '>=', target: 500, unit: 'MB/s', before: '196 MB/s',
    find: medianOf(4, /redactor, 1,?000 secrets/),
  },
  {
    id: 'output-capture', figure: 3, what: '1 GiB of output through a sync `gateway.exec`, default policy (sandboxed)', against: 'a raw Node pipe reader',
    direction: '>=', target: 0.9, unit: 'x', before: '0.88x',
    find: medianRatio(3, /through gateway\.exec sync, defaults/, /read by Node from a pipe/),
  },
  {
    id: 'mcp-call', figure: 7, what: 'MCP `bash` tool call over stdio, sandbox off', against: '`gateway.exec` in process',
    direction: '<=', target: 1.3, unit: 'x', before: '1.47x',
    find: ratioOf(7, /^MCP `bash` tool call/),
  },
  {
    id: 'proxy-plain', figure: 14, what: 'egress proxy, 100 MiB plain HTTP, curl inside the sandbox (bridge and proxy)', against: 'the same curl, direct',
    direction: '>=', target: 0.5, unit: 'x', before: '0.10x',
    find: () => undefined,
  },
  {
    id: 'proxy-tunnel', figure: 14, what: 'egress proxy, 100 MiB HTTPS through a CONNECT tunnel, curl inside the sandbox', against: 'the same curl, direct',
    direction: '>=', target: 0.8, unit: 'x', before: '0.63x',
    find: () => undefined,
  },
  {
    id: 'proxy-intercept', figure: 8, what: 'egress proxy, 100 MiB HTTPS intercepted, a secret injected, curl inside the sandbox', against: 'the same curl, direct',
    direction: '>=', target: 0.5, unit: 'x', before: '0.27-0.31x',
    find: ratioOf(8, /^100 MiB end to end: curl in a sandboxed gateway run, HTTPS intercepted/),
  },
  {
    id: 'proxy-cpu-vs-peer', figure: 14, what: 'CPU per MiB, 100 MiB plain HTTP fetched by curl from inside the sandbox through the proxy', against: 'the same through sandbox-runtime',
    direction: '<=', target: 1, unit: 'x', before: '0.75-0.89x (two runs)',
    find: () => undefined,
  },
  {
    id: 'tcp-relay', figure: 15, what: 'raw TCP egress, 100 MiB by name (`sandbox.network.tcp`), a client inside the sandbox', against: 'the same client, direct',
    direction: '>=', target: 0.8, unit: 'x', before: '0.46x (loaded host)',
    find: ratioOf(15, /^100 MiB raw TCP: the same client in a sandboxed run/),
  },
];

const byId = new Map(GOALS.map((goal) => [goal.id, goal]));

function getGoal(id) {
  const goal = byId.get(id);
  if (!goal) throw new Error(`bench/goals.js has no goal '${id}'`);
  return goal;
}

function isMet(goal, value) {
  return goal.direction === '<=' ? value <= goal.target : value >= goal.target;
}

function formatGoal(goal) {
  return `${goal.direction === '<=' ? '≤' : '≥'} ${goal.target}${goal.unit === 'x' ? 'x' : ` ${goal.unit}`}`;
}

function formatValue(goal, value) {
  if (value === undefined || !Number.isFinite(value)) return '-';
  return goal.unit === 'x' ? `${value.toFixed(2)}x` : `${value >= 100 ? value.toFixed(0) : value.toFixed(1)} ${goal.unit}`;
}

/** What a row that names a goal measured: its ratio, or its median for an absolute goal. */
function valueOfRow(goal, r) {
  if (goal.unit === 'x') return r.ratio ? r.ratio.value : r.unit === 'x' ? r.median : undefined;
  return r.median;
}

/** Each goal with this run's value (undefined: not measured), met or not, and the row it came from. */
function evaluateGoals(rows) {
  return GOALS.map((goal) => {
    const tagged = rows.find((r) => r.goal === goal.id);
    const found = tagged ? { value: valueOfRow(goal, tagged), row: tagged } : goal.find(rows);
    const value = found && Number.isFinite(found.value) ? found.value : undefined;
    const peerRow = rows.find((r) => r.peerOf === goal.id);
    const peer = peerRow ? valueOfRow(goal, peerRow) : undefined;
    return { id: goal.id, figure: goal.figure, goal: formatGoal(goal), before: goal.before, value, met: value === undefined ? undefined : isMet(goal, value), row: found?.row?.name, peer: Number.isFinite(peer) ? peer : undefined };
  });
}

function table(header, body) {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

/** The goals table printed by a run: each goal with this run's figure. */
function formatGoalsResult(results, { quick = false } = {}) {
  const body = results.map((result) => {
    const goal = getGoal(result.id);
    const verdict = result.value === undefined ? 'not measured' : quick ? '(quick run)' : result.met ? 'met' : 'MISSED';
    return [String(goal.figure), goal.id, goal.what, goal.against, formatGoal(goal), goal.before, formatValue(goal, result.value), verdict, formatValue(goal, result.peer)];
  });
  return table(['fig', 'goal', 'measurement', 'against', 'goal', 'before', 'this run', '', 'sandbox-runtime, same run'], body);
}

/** The goals table of docs/performance.md (no run's figures: those are in the rows below it). */
function formatGoalsMarkdown() {
  return table(['fig', 'goal', 'measurement', 'against', 'goal', 'before'], GOALS.map((goal) => [String(goal.figure), goal.id, goal.what, goal.against, formatGoal(goal), goal.before]));
}

/** Problems with the goals table in `text` (a docs/performance.md): [] when it matches GOALS. */
function checkGoalsDoc(text) {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) return [`no goals table between ${BEGIN} and ${END}`];
  const found = text.slice(begin + BEGIN.length, end).trim().split('\n');
  const expected = formatGoalsMarkdown().split('\n');
  const problems = [];
  for (let i = 0; i < Math.max(found.length, expected.length); i++) {
    if (found[i] !== expected[i]) problems.push(`line ${i + 1} of the goals table: found ${JSON.stringify(found[i] ?? '(none)')}, expected ${JSON.stringify(expected[i] ?? '(none)')}`);
  }
  return problems;
}

function writeGoalsDoc(path = DOC) {
  const text = readFileSync(path, 'utf8');
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${path}: no ${BEGIN} ... ${END}`);
  writeFileSync(path, `${text.slice(0, begin + BEGIN.length)}\n${formatGoalsMarkdown()}\n${text.slice(end)}`);
}

module.exports = { GOALS, DOC, checkGoalsDoc, evaluateGoals, formatGoalsMarkdown, formatGoalsResult, getGoal, isMet, writeGoalsDoc };

if (require.main === module) {
  if (process.argv.includes('--write')) writeGoalsDoc();
  else if (process.argv.includes('--check')) {
    const problems = checkGoalsDoc(readFileSync(DOC, 'utf8'));
    for (const problem of problems) console.error(problem);
    process.exitCode = problems.length > 0 ? 1 : 0;
  } else console.log(formatGoalsMarkdown());
}
