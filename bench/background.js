'use strict';
/*
 * Figure 5: 200 concurrent background processes. Start them all at once through the gateway
 * (each `echo proc-N; sleep 60`, its output redacted into its file), call status on them while
 * they run, and measure the gateway process's memory; against starting the same 200 shells with
 * child_process.spawn (detached, stdin and both outputs piped, output read) in the same
 * process. Rounds of the two alternate. The gateway's rows say whether the sandbox is on: with
 * `sandbox.mode: off`, and with the default policy's sandbox (each run its own bubblewrap).
 *
 *   npm run build && node bench/background.js [--quick]
 */
const { spawn } = require('node:child_process');
const { mkdirSync } = require('node:fs');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { DIST, benchEnv, getUnsandboxedPolicy, percentile, row, runFigure } = require('./lib');

const MiB = 1048576;

function settle() {
  if (global.gc) global.gc();
  return new Promise((resolve) => setTimeout(resolve, 200));
}

async function run({ quick, baseline, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { home, env, cleanup } = benchEnv('execgate-bench-background-');
  const count = quick ? 20 : 200;
  const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' }, background: { ...DEFAULT_POLICY.background, maxConcurrent: count } };
  const gateway = createGateway({ home, env, policy });
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const work = join(home, 'work');
  mkdirSync(work);
  const sandboxedGateway = checkPlatform().ok
    ? createGateway({ home: join(home, 'sandboxed'), env, cwd: work, policy: { ...policy, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } } })
    : undefined;
  const results = { rawStart: [], start: [], rawKill: [], kill: [], status: [], list: [], rawMemory: [], memory: [], baseStart: [], baseKill: [], sandboxedStart: [], sandboxedKill: [] };
  // --baseline: the same start and kill through another tree's gateway, in rounds of their own.
  const baseGateway = baseline
    ? require(join(baseline, 'gateway.js')).createGateway({ home: join(home, 'baseline'), env, policy: getUnsandboxedPolicy(baseline, { background: policy.background }) })
    : undefined;

  const rawRound = async () => {
    await settle();
    const before = process.memoryUsage.rss();
    const started = performance.now();
    const children = Array.from({ length: count }, (_, i) => {
      const child = spawn('/bin/bash', ['--norc', '--noprofile', '-c', `echo proc-${i}; sleep 60`], { detached: true, stdio: ['pipe', 'pipe', 'pipe'], env });
      child.stdout.on('data', () => {});
      child.stderr.on('data', () => {});
      return child;
    });
    results.rawStart.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 500));
    results.rawMemory.push((process.memoryUsage.rss() - before) / MiB / count);
    const killing = performance.now();
    await Promise.all(children.map((child) => new Promise((resolve) => {
      child.once('exit', resolve);
      process.kill(-child.pid, 'SIGTERM');
    })));
    results.rawKill.push(performance.now() - killing);
  };

  const gatewayRound = async () => {
    await settle();
    const before = process.memoryUsage.rss();
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: count }, (_, i) => gateway.exec({ command: `echo proc-${i}; sleep 60`, mode: 'background' })));
    results.start.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 500));
    results.memory.push((process.memoryUsage.rss() - before) / MiB / count);
    for (let i = 0; i < (quick ? 100 : 2000); i++) {
      const id = runs[i % runs.length].id;
      const s = performance.now();
      gateway.background.status(id);
      results.status.push((performance.now() - s) * 1000);
    }
    for (let i = 0; i < (quick ? 3 : 20); i++) {
      const s = performance.now();
      gateway.background.list();
      results.list.push(performance.now() - s);
    }
    const killing = performance.now();
    await Promise.all(runs.map((p) => gateway.background.kill(p.id, { grace: 1000 })));
    results.kill.push(performance.now() - killing);
    for (const p of runs) gateway.background.remove(p.id);
  };

  const sandboxedRound = async () => {
    await settle();
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: count }, (_, i) => sandboxedGateway.exec({ command: `echo proc-${i}; sleep 60`, mode: 'background' })));
    results.sandboxedStart.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const killing = performance.now();
    await Promise.all(runs.map((p) => sandboxedGateway.background.kill(p.id, { grace: 1000 })));
    results.sandboxedKill.push(performance.now() - killing);
    for (const p of runs) sandboxedGateway.background.remove(p.id);
  };

  const baselineRound = async () => {
    await settle();
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: count }, (_, i) => baseGateway.exec({ command: `echo proc-${i}; sleep 60`, mode: 'background' })));
    results.baseStart.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const killing = performance.now();
    await Promise.all(runs.map((p) => baseGateway.background.kill(p.id, { grace: 1000 })));
    results.baseKill.push(performance.now() - killing);
    for (const p of runs) baseGateway.background.remove(p.id);
  };

  const rounds = quick ? 1 : 5;
  const kinds = [rawRound, gatewayRound, ...(sandboxedGateway ? [sandboxedRound] : []), ...(baseGateway ? [baselineRound] : [])];
  log(`${rounds} alternating rounds of ${count} processes`);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < kinds.length; k++) await kinds[(r + k) % kinds.length]();
  }
  await gateway.close();
  await sandboxedGateway?.close();
  await baseGateway?.close();
  cleanup();
  const statusSummary = { median: percentile(results.status, 50), min: Math.min(...results.status), max: percentile(results.status, 99), n: results.status.length };
  return {
    rows: [
      row(5, `start ${count}: raw child_process.spawn`, results.rawStart),
      row(5, `start ${count}: gateway.exec background, sandbox off`, results.start, { of: { name: 'raw', samples: results.rawStart } }),
      ...(sandboxedGateway ? [row(5, `start ${count}: gateway.exec background, sandbox on (default policy)`, results.sandboxedStart, { of: { name: 'raw', samples: results.rawStart } })] : []),
      row(5, `memory per process: raw (RSS growth / ${count})`, results.rawMemory, { unit: 'MiB' }),
      row(5, `memory per process: gateway, sandbox off (RSS growth / ${count})`, results.memory, { unit: 'MiB', of: { name: 'raw', samples: results.rawMemory } }),
      row(5, `status() call with ${count} running (median; max = p99)`, statusSummary, { unit: 'us' }),
      row(5, `list() with ${count} running`, results.list),
      row(5, `kill all ${count}: raw SIGTERM to each group`, results.rawKill),
      row(5, `kill all ${count}: gateway.background.kill, sandbox off`, results.kill, { of: { name: 'raw', samples: results.rawKill } }),
      ...(sandboxedGateway ? [row(5, `kill all ${count}: gateway.background.kill, sandbox on`, results.sandboxedKill, { of: { name: 'raw', samples: results.rawKill } })] : []),
      ...(baseGateway ? [
        row(5, `baseline tree: start ${count}`, results.baseStart, { of: { name: 'raw', samples: results.rawStart } }),
        row(5, `baseline tree: kill all ${count}`, results.baseKill, { of: { name: 'raw', samples: results.rawKill } }),
        row(5, 'this tree against the baseline: start', results.start, { of: { name: 'baseline tree', samples: results.baseStart } }),
        row(5, 'this tree against the baseline: kill all', results.kill, { of: { name: 'baseline tree', samples: results.baseKill } }),
      ] : []),
    ],
    notes: [
      'The gateway starts background runs with a direct spawn in every spawner mode (see src/process/spawner); status() reads the live run and the tail of its output file.',
    ],
  };
}

const figure = { id: 5, title: `Concurrent background processes`, run };
module.exports = figure;
if (require.main === module) runFigure(figure);
