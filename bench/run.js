'use strict';
/*
 * The benchmark suite: `npm run bench` (builds, then runs this). Each figure runs in a process
 * of its own (so one figure's heap or helper processes cannot skew another), measures its
 * variants side by side, interleaved, and reports medians with min and max, and ratios of
 * medians against the baseline measured in the same run. Prints one table and writes the whole
 * report to bench/results/<timestamp>.json. Then the goals (bench/goals.js, the one table that
 * docs/performance.md shows too) with this run's figure beside each, met or missed, and the
 * load average before and after the run and each figure. Every figure's process starts in a
 * clean environment (PATH, an empty HOME, the keyring off; nothing else inherited).
 *
 *   npm run bench                  full run (several minutes; needs ~4.5 GB of free memory)
 *   npm run bench -- --quick       smoke run: every figure, small sizes, a few iterations
 *   npm run bench -- --only=1,3    some figures
 *   npm run bench -- --baseline=DIR  figures 1, 3, 4, 5, 8, 9, 12 and 13 also measure the built checkout in DIR (say,
 *                                    the commit before a change), interleaved with this tree
 *   npm run bench -- --only=8 --baseline=DIR --one-process
 *                                    figure 8 with both trees' proxies in one process (one heap,
 *                                    one garbage collector for both)
 *   npm run bench -- --only=8 --in-gateway
 *                                    figure 8 with each proxy's process holding a gateway too, as
 *                                    the proxy's process does for real
 *
 * Timings are never checked against their targets here: a missed target is reported, not an
 * error. The exit status is non-zero only when a figure could not run.
 */
const { spawn, execFileSync } = require('node:child_process');
const { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { cpus, loadavg, tmpdir, totalmem } = require('node:os');
const { join } = require('node:path');
const { evaluateGoals, formatGoalsResult } = require('./goals');
const { DIST, cleanEnv, formatLoad, formatTable, parseArgs } = require('./lib');

// Each figure's file and its number (the `id` it reports, which `--only` and the goals name),
// in the order they run.
const FIGURES = [
  [1, 'exec-overhead.js'],
  [2, 'large-heap.js'],
  [3, 'throughput.js'],
  [4, 'redact.js'],
  [5, 'background.js'],
  [6, 'cli-start.js'],
  [7, 'mcp.js'],
  [8, 'egress.js'],
  [16, 'egress-aws.js'],
  [15, 'tcp.js'],
  [9, 'sandbox.js'],
  [10, 'shell-reader.js'],
  [11, 'files.js'],
  [12, 'audit-write.js'],
  [13, 'import.js'],
  [14, 'peer.js'],
];

function runFigureProcess(file, args, reportPath, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(__dirname, file), ...args, '--report', reportPath], { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.once('error', (error) => resolve({ error: error.message }));
    child.once('exit', (code, signal) => {
      if (code !== 0) {
        resolve({ error: `${file} exited with ${signal ?? `status ${code}`}` });
        return;
      }
      try {
        resolve(JSON.parse(readFileSync(reportPath, 'utf8')));
      } catch (error) {
        resolve({ error: `${file} wrote no report: ${error.message}` });
      }
    });
  });
}

function getCommit() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: join(__dirname, '..'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(join(DIST, 'gateway.js'))) {
    console.error('dist/ is missing: run `npm run build` first (`npm run bench` does).');
    process.exit(1);
  }
  const scratch = mkdtempSync(join(tmpdir(), 'execgate-bench-'));
  // Every figure starts in a clean environment (see cleanEnv): no figure touches the real keyring
  // or the user's state directory, and nothing inherited changes what a Node start costs.
  const home = join(scratch, 'home');
  mkdirSync(home);
  const env = cleanEnv(home);
  const started = new Date();
  const report = {
    startedAt: started.toISOString(),
    quick: args.quick,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    commit: getCommit(),
    baseline: args.baseline,
    loadBefore: loadavg(),
    figures: [],
  };
  console.log(`execgate benchmarks${args.quick ? ' (quick)' : ''}: node ${report.node}, ${report.cpus} CPUs, load average ${formatLoad(report.loadBefore)}`);
  const unknown = (args.only ?? []).filter((id) => !FIGURES.some(([figure]) => figure === id));
  if (unknown.length > 0) {
    console.error(`--only: no figure ${unknown.join(', ')} (the figures are ${FIGURES.map(([id]) => id).sort((a, b) => a - b).join(', ')})`);
    process.exit(2);
  }
  const selected = FIGURES.filter(([id]) => !args.only || args.only.includes(id));
  let failed = 0;
  for (const [id, file] of selected) {
    const figureStarted = Date.now();
    const figureArgs = [...(args.quick ? ['--quick'] : []), ...(args.baseline ? [`--baseline=${args.baseline}`] : []), ...(args.oneProcess ? ['--one-process'] : []), ...(args.inGateway ? ['--in-gateway'] : [])];
    const result = await runFigureProcess(file, figureArgs, join(scratch, `${file}.json`), env);
    result.file = file;
    result.seconds = Math.round((Date.now() - figureStarted) / 100) / 10;
    if (!result.error && result.id !== id) result.error = `${file} reported figure ${result.id}, listed as ${id} in bench/run.js`;
    if (result.error) {
      failed += 1;
      console.error(`  ${file}: ${result.error}`);
    } else {
      console.log(`  ${result.id}. ${result.title}${result.sandbox ? ` (sandbox: ${result.sandbox})` : ''}: ${result.seconds} s, load average ${formatLoad(result.loadBefore)} before, ${formatLoad(result.loadAfter)} after`);
    }
    report.figures.push(result);
  }
  report.loadAfter = loadavg();
  report.seconds = Math.round((Date.now() - started.getTime()) / 1000);
  rmSync(scratch, { recursive: true, force: true });

  const rows = report.figures.flatMap((figure) => figure.rows ?? []);
  console.log('');
  console.log(formatTable(rows));
  for (const figure of report.figures) {
    for (const note of figure.notes ?? []) console.log(`  (${figure.id}) ${note}`);
  }
  // The goals (bench/goals.js, the same table as docs/performance.md) with this run's figures.
  report.goals = evaluateGoals(rows);
  console.log('\nGoals (bench/goals.js; docs/performance.md holds the same table):');
  console.log(formatGoalsResult(report.goals, { quick: args.quick }));
  const measured = report.goals.filter((g) => g.value !== undefined);
  const verdict = args.quick
    ? 'quick run: sizes and iteration counts are too small for the goals to mean anything'
    : `goals: ${measured.filter((g) => g.met).length} of ${measured.length} measured met (${report.goals.length - measured.length} not measured in this run)`;
  console.log(`\n${verdict}; load average ${formatLoad(report.loadBefore)} before, ${formatLoad(report.loadAfter)} after; ${report.seconds} s`);

  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${started.toISOString().replace(/[:.]/g, '-')}${args.quick ? '-quick' : ''}.json`);
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`report: ${path}`);
  if (failed > 0) {
    console.error(`${failed} figure(s) could not run.`);
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
