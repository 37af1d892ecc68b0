'use strict';
/*
 * What the benchmark figures share: statistics, the interleaving loop, a private state
 * directory, the raw baselines, and the report format. A figure is a module exporting
 * `{ id, title, run({ quick, log }) }` whose `run` resolves to `{ rows, notes }`; each row is
 * one measurement (median, min, max of many samples) and may carry a ratio against another row
 * measured side by side in the same run, and the target that ratio is held to.
 */
const { execFileSync, spawn } = require('node:child_process');
const { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { loadavg, tmpdir } = require('node:os');
const { join, resolve } = require('node:path');
const { performance } = require('node:perf_hooks');
const { getGoal } = require('./goals');

const DIST = join(__dirname, '..', 'dist');

function sorted(samples) {
  return [...samples].sort((a, b) => a - b);
}

function percentile(samples, p) {
  const s = sorted(samples);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((s.length * p) / 100) - 1))];
}

function summarize(samples) {
  const s = sorted(samples);
  return { median: percentile(s, 50), min: s[0], max: s[s.length - 1], n: s.length };
}

/**
 * Runs every variant once per iteration, in an order that rotates each iteration, so slow
 * phases of a noisy machine hit every variant alike. Returns the samples (ms) per variant;
 * the first `warmup` iterations are not kept. `before(name)` and `after(name, kept)`, when given,
 * are awaited around each sample outside its timing (a figure reads CPU time there).
 */
async function interleave(variants, { iterations, warmup = 0, before, after }) {
  const names = Object.keys(variants);
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < warmup + iterations; i++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length];
      if (before) await before(name);
      const started = performance.now();
      await variants[name]();
      const elapsed = performance.now() - started;
      if (i >= warmup) samples[name].push(elapsed);
      if (after) await after(name, i >= warmup);
    }
  }
  return samples;
}

let clockTickMs;
/*
 * CPU time (ms, user + system) of this process's descendants, live and reaped, less the subtrees
 * of `exclude` (pids): each live one's own time and its reaped children's, from /proc (clock
 * ticks, 10 ms here), plus this process's reaped children's. A descendant reaped by one of them
 * moves into its parent's count, so nothing is counted twice or lost, unless it was reparented
 * out of this tree. Linux only; undefined elsewhere.
 */
function readDescendantsCpu(exclude = []) {
  let names;
  try {
    names = readdirSync('/proc');
  } catch {
    return undefined;
  }
  clockTickMs ??= 1000 / (Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100);
  const stats = new Map();
  for (const name of names) {
    if (!/^[0-9]+$/.test(name)) continue;
    let text;
    try {
      text = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the command's closing parenthesis: state ppid ... utime(14) stime cutime cstime.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = (from) => Number(fields[from]) + Number(fields[from + 1]);
    stats.set(Number(name), { ppid: Number(fields[1]), own: ticks(11), reaped: ticks(13) });
  }
  const children = new Map();
  for (const [pid, stat] of stats) {
    if (!children.has(stat.ppid)) children.set(stat.ppid, []);
    children.get(stat.ppid).push(pid);
  }
  const skip = new Set(exclude);
  let total = stats.get(process.pid)?.reaped ?? 0;
  const queue = [...(children.get(process.pid) ?? [])];
  while (queue.length > 0) {
    const pid = queue.pop();
    if (skip.has(pid)) continue;
    total += stats.get(pid).own + stats.get(pid).reaped;
    queue.push(...(children.get(pid) ?? []));
  }
  return total * clockTickMs;
}

/** CPU time (ms) of this process, all its threads (getrusage, microseconds). */
function readOwnCpu() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * A row of the report: a measurement, optionally its ratio to another one and a target. `goal`
 * names the goal of bench/goals.js the row measures (its target and direction come from there);
 * `peerOf` names a goal the row measures for the peer (sandbox-runtime) instead.
 */
function row(figure, name, samples, { unit = 'ms', of, target, higherIsBetter = false, note, goal, peerOf } = {}) {
  const stats = Array.isArray(samples) ? summarize(samples) : samples;
  const result = { figure, name, unit, ...stats };
  // The peer's figure for a goal (the goals table prints it beside this run's).
  if (peerOf !== undefined) result.peerOf = getGoal(peerOf).id;
  if (goal !== undefined) {
    // The goal's target and direction come from bench/goals.js, the one table of goals.
    const known = getGoal(goal);
    result.goal = goal;
    target = known.target;
    higherIsBetter = known.direction === '>=';
  }
  if (of) {
    const base = Array.isArray(of.samples) ? summarize(of.samples) : of.samples;
    result.ratio = { of: of.name, value: stats.median / base.median };
    if (target !== undefined) {
      result.ratio.target = `${higherIsBetter ? '>=' : '<='} ${target}`;
      result.ratio.met = higherIsBetter ? result.ratio.value >= target : result.ratio.value <= target;
    }
  }
  if (note) result.note = note;
  return result;
}

/**
 * The environment every figure's process starts with: nothing inherited but PATH (an inherited
 * NODE_OPTIONS or NODE_EXTRA_CA_CERTS changes what every Node start costs, and a user's
 * EXECGATE_* settings what a gateway does), HOME an empty directory, the keyring off, and the
 * figures' own EXECGATE_BENCH_* knobs.
 */
function cleanEnv(home) {
  const env = {
    PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    EXECGATE_HOME: join(home, '.execgate'),
    EXECGATE_KEYRING: 'off',
  };
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('EXECGATE_BENCH_')) env[name] = value;
  }
  return env;
}

/** The load average as printed: 1, 5 and 15 minutes. */
function formatLoad(load = loadavg()) {
  return load.map((n) => n.toFixed(2)).join(' ');
}

/** A private EXECGATE_HOME and an environment for the gateway and for children (keyring off). */
function benchEnv(prefix = 'execgate-bench-') {
  const home = mkdtempSync(join(tmpdir(), prefix));
  process.env.EXECGATE_KEYRING = 'off';
  process.env.EXECGATE_HOME = home;
  // Figures 1-7 measure the unsandboxed path (as before the sandbox existed); figure 9 the sandbox.
  const policyFile = join(home, 'unsandboxed.yaml');
  writeFileSync(policyFile, 'version: 1\nsandbox:\n  mode: off\n');
  const env = {
    PATH: process.env.PATH || '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    EXECGATE_HOME: home,
    EXECGATE_KEYRING: 'off',
    EXECGATE_POLICY: policyFile,
  };
  return { home, env, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

/** The embedded default policy with the OS sandbox off (figures that measure the unsandboxed path). */
function unsandboxedPolicy(base) {
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const policy = base || DEFAULT_POLICY;
  return { ...policy, sandbox: { ...policy.sandbox, mode: 'off' } };
}

/** Resolves once the child has exited and both of its output pipes are closed (what an executor waits for). */
function waitChild(child) {
  return new Promise((resolve, reject) => {
    let open = 3;
    const done = () => { if (--open === 0) resolve(child.exitCode); };
    child.once('error', reject);
    child.stdout.on('data', () => {});
    child.stderr.on('data', () => {});
    child.stdout.once('close', done);
    child.stderr.once('close', done);
    child.once('exit', done);
  });
}

/** The raw baseline: the same shell, detached, stdin /dev/null, both outputs piped and read. */
function rawSpawn(shell, args, env) {
  return waitChild(spawn(shell, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env }));
}

/** Hold `bytes` of resident memory (touched Buffers, so the pages are real). */
function holdMemory(bytes) {
  const chunk = 64 * 1024 * 1024;
  const held = [];
  for (let left = bytes; left > 0; left -= chunk) held.push(Buffer.alloc(Math.min(chunk, left), 1));
  globalThis.__benchBallast = held;
  return held;
}

function rssMiB() {
  return process.memoryUsage.rss() / 1048576;
}

/** Samples the resident set every `everyMs` until stopped; resolves the peak (bytes). */
function watchRss(everyMs = 5) {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, everyMs);
  return () => {
    clearInterval(timer);
    return Math.max(peak, process.memoryUsage.rss());
  };
}

function parseArgs(argv) {
  const args = { quick: false, report: undefined, only: undefined, baseline: undefined, oneProcess: false, inGateway: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--quick') args.quick = true;
    else if (argv[i] === '--one-process') args.oneProcess = true;
    else if (argv[i] === '--in-gateway') args.inGateway = true;
    else if (argv[i] === '--report') args.report = argv[++i];
    else if (argv[i].startsWith('--only=')) args.only = argv[i].slice(7).split(',').map(Number);
    else if (argv[i].startsWith('--baseline=')) args.baseline = getBaselineDist(argv[i].slice(11));
  }
  return args;
}

function formatValue(value, unit) {
  if (value === undefined || Number.isNaN(value)) return '-';
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return `${value.toFixed(digits)}${unit === 'x' ? 'x' : ''}`;
}

function formatRow(r) {
  // A ratio to a zero median (a baseline that did not grow) is infinite; JSON carries it as null.
  const ratio = r.ratio ? `${Number.isFinite(r.ratio.value) ? r.ratio.value.toFixed(2) : '-'}x ${r.ratio.of}` : '';
  // A target a figure set itself, not one of bench/goals.js, is shown as such: the goals table is the one list of goals.
  const target = r.ratio && r.ratio.target ? `${r.ratio.met ? 'met' : 'MISSED'} (${r.ratio.target}${r.goal ? `: ${r.goal}` : '; not a goal'})` : '';
  return [String(r.figure), r.name, r.unit, formatValue(r.median, r.unit), `${formatValue(r.min, r.unit)} .. ${formatValue(r.max, r.unit)}`, String(r.n ?? ''), ratio, target];
}

/** A plain-text table (also valid Markdown). */
function formatTable(rows) {
  const header = ['fig', 'measurement', 'unit', 'median', 'min .. max', 'n', 'ratio (of medians)', 'target'];
  const body = rows.map(formatRow);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

/**
 * `--baseline=DIR`: another built checkout of execgate (DIR or DIR/dist holds gateway.js), e.g.
 * the commit before a change. Figures that support it (1 and 5) measure its gateway too,
 * interleaved with this tree's, so that two trees compare in one run on a noisy machine.
 */
function getBaselineDist(dir) {
  for (const candidate of [join(resolve(dir), 'dist'), resolve(dir)]) {
    if (existsSync(join(candidate, 'gateway.js'))) return candidate;
  }
  throw new Error(`--baseline=${dir}: no built execgate there (run \`npm run build\` in it first).`);
}

/** The embedded default policy of the tree in `dist`, sandbox off (what figures 1 to 5 measure). */
function getUnsandboxedPolicy(dist, overrides = {}) {
  const { DEFAULT_POLICY } = require(join(dist, 'policy', 'effective.js'));
  return { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' }, ...overrides };
}

/** Runs one figure as a script: `node bench/<figure>.js [--quick] [--report file]`. */
function runFigure(figure) {
  const args = parseArgs(process.argv.slice(2));
  const log = (message) => process.stderr.write(`  [${figure.id}] ${message}\n`);
  const loadBefore = loadavg();
  figure.run({ quick: args.quick, baseline: args.baseline, oneProcess: args.oneProcess, inGateway: args.inGateway, log }).then((result) => {
    const report = { id: figure.id, title: figure.title, loadBefore, loadAfter: loadavg(), ...result };
    if (args.report) writeFileSync(args.report, JSON.stringify(report));
    else {
      console.log(`${figure.id}. ${figure.title}${report.sandbox ? ` (sandbox: ${report.sandbox})` : ''}`);
      console.log(formatTable(report.rows));
      console.log(`  load average ${formatLoad(report.loadBefore)} before, ${formatLoad(report.loadAfter)} after`);
      for (const note of report.notes || []) console.log(`  - ${note}`);
    }
    // Ballast, helpers and servers: nothing should keep a figure's process alive past its report.
    process.exit(0);
  }, (error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = {
  DIST,
  benchEnv,
  cleanEnv,
  formatLoad,
  getUnsandboxedPolicy,
  formatTable,
  holdMemory,
  interleave,
  parseArgs,
  percentile,
  rawSpawn,
  readDescendantsCpu,
  readOwnCpu,
  row,
  rssMiB,
  runFigure,
  summarize,
  unsandboxedPolicy,
  waitChild,
  watchRss,
};
