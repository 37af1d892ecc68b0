'use strict';
/*
 * The benchmark suite: `npm run bench` (builds, then runs this). Each figure runs in a process
 * of its own (so one figure's heap or helper processes cannot skew another), measures its
 * variants side by side, interleaved, and reports medians with min and max, and ratios of
 * medians against the baseline measured in the same run. Prints one table and writes the whole
 * report to bench/results/<timestamp>.json.
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
const { DIST, formatTable, parseArgs } = require('./lib');

const FIGURES = [
  'exec-overhead.js',
  'large-heap.js',
  'throughput.js',
  'redact.js',
  'background.js',
  'cli-start.js',
  'mcp.js',
  'egress.js',
  'sandbox.js',
  'shell-reader.js',
  'files.js',
  'audit-write.js',
  'import.js',
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
  // No figure touches the real keyring or the user's state directory.
  const env = { ...process.env, EXECGATE_KEYRING: 'off', EXECGATE_HOME: join(scratch, 'home') };
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
  console.log(`execgate benchmarks${args.quick ? ' (quick)' : ''}: node ${report.node}, ${report.cpus} CPUs, load average ${report.loadBefore.map((n) => n.toFixed(2)).join(' ')}`);
  const selected = FIGURES.filter((_, index) => !args.only || args.only.includes(index + 1));
  let failed = 0;
  for (const file of selected) {
    const figureStarted = Date.now();
    const figureArgs = [...(args.quick ? ['--quick'] : []), ...(args.baseline ? [`--baseline=${args.baseline}`] : []), ...(args.oneProcess ? ['--one-process'] : []), ...(args.inGateway ? ['--in-gateway'] : [])];
    const result = await runFigureProcess(file, figureArgs, join(scratch, `${file}.json`), env);
    result.file = file;
    result.seconds = Math.round((Date.now() - figureStarted) / 100) / 10;
    if (result.error) {
      failed += 1;
      console.error(`  ${file}: ${result.error}`);
    } else {
      console.log(`  ${result.id}. ${result.title}: ${result.seconds} s, load average ${result.loadAfter.map((n) => n.toFixed(2)).join(' ')}`);
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
  const targets = rows.filter((r) => r.ratio && r.ratio.target);
  const verdict = args.quick
    ? 'quick run: sizes and iteration counts are too small for the targets to mean anything'
    : `targets: ${targets.filter((r) => r.ratio.met).length} of ${targets.length} met`;
  console.log(`\n${verdict}; load average ${report.loadBefore.map((n) => n.toFixed(2)).join(' ')} before, ${report.loadAfter.map((n) => n.toFixed(2)).join(' ')} after; ${report.seconds} s`);

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
