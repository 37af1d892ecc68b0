'use strict';
/*
 * Figure 3: output throughput. A child prints 1 GiB of zeros; execgate reads it through sync
 * mode (redacted, captured within the output limit, the rest counted and written to the
 * full-output file up to its cap) and through a background process (redacted into its output
 * file, up to its cap), against the kernel's own pipe (`head | cat > /dev/null`) and against
 * Node reading the pipe and dropping the bytes. Interleaved rounds; the gateway process's
 * resident set is sampled during each run, and its growth over the value just before is the
 * memory a run costs. The goal: sync capture at 0.9x or more of the raw Node reader (Node cannot
 * read faster than that reader does; the kernel pipe is shown beside it). Rows say whether the
 * sandbox is on: the default policy's (sandbox on) and `sandbox.mode: off`.
 *
 *   npm run build && node bench/throughput.js [--quick]
 */
const { spawn } = require('node:child_process');
const { closeSync, mkdirSync } = require('node:fs');
const { Socket } = require('node:net');
const { join } = require('node:path');
const { DIST, benchEnv, getUnsandboxedPolicy, interleave, row, runFigure, unsandboxedPolicy, waitChild, watchRss } = require('./lib');

const MB = 1e6;

async function run({ quick, baseline, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const { getPipePool } = require(join(DIST, 'process', 'spawner', 'pipes.js'));
  const { home, env, cleanup } = benchEnv('execgate-bench-throughput-');
  const work = join(home, 'work');
  mkdirSync(work);
  const bytes = quick ? 64 * 1024 * 1024 : 1024 * 1024 * 1024;
  const producer = `head -c ${bytes} /dev/zero`;
  const gateway = createGateway({ policy: unsandboxedPolicy(), home: join(home, 'default'), env });
  const helper = createGateway({ policy: unsandboxedPolicy(), home: join(home, 'helper'), env, spawner: 'helper' });
  // The default policy, sandbox on (skipped where the platform has no sandbox).
  const sandboxed = checkPlatform().ok
    ? createGateway({ policy: { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } }, home: join(home, 'sandboxed'), env, cwd: work })
    : undefined;
  const baseGateway = baseline ? require(join(baseline, 'gateway.js')) : undefined;
  const base = baseGateway?.createGateway({ policy: getUnsandboxedPolicy(baseline), home: join(home, 'baseline'), env });
  // The baseline tree's default policy, sandbox on, beside this tree's (the goal's row).
  const baseSandboxed = baseGateway && sandboxed
    ? (() => {
      const { DEFAULT_POLICY: basePolicy } = require(join(baseline, 'policy', 'effective.js'));
      return baseGateway.createGateway({ policy: { ...basePolicy, sandbox: { ...basePolicy.sandbox, mode: 'required' } }, home: join(home, 'baseline-sandboxed'), env, cwd: work });
    })()
    : undefined;
  const growth = {};
  const measured = (name, fn) => async () => {
    const before = process.memoryUsage.rss();
    const stop = watchRss(5);
    await fn();
    (growth[name] ??= []).push((stop() - before) / 1048576);
  };
  const runBackground = async (through) => {
    const started = await through.exec({ command: producer, mode: 'background' });
    const ended = await through.background.wait(started.id);
    if (ended.exitCode !== 0) throw new Error(`background run ended ${ended.state} ${ended.exitCode}`);
    through.background.remove(started.id);
  };
  const checkSync = (result) => {
    if (result.exitCode !== 0 || result.bytes.stdout !== bytes) throw new Error(`sync run read ${result.bytes.stdout} of ${bytes} bytes`);
  };
  const variants = {
    kernelPipe: measured('kernelPipe', () => waitChild(spawn('/bin/sh', ['-c', `${producer} | cat > /dev/null`], { stdio: ['ignore', 'pipe', 'pipe'], env }))),
    nodePipe: measured('nodePipe', () => waitChild(spawn('/bin/sh', ['-c', producer], { stdio: ['ignore', 'pipe', 'pipe'], env }))),
    // The same reader on real pipes (what the gateway's runs write into now): child_process's
    // 'pipe' is a socketpair, which the kernel moves bytes through more slowly.
    nodeFifo: measured('nodeFifo', async () => {
      const [out, err] = await getPipePool().take();
      const child = spawn('/bin/sh', ['-c', producer], { stdio: ['ignore', out.write, err.write], env });
      closeSync(out.write);
      closeSync(err.write);
      const streams = [out, err].map((pair) => new Socket({ fd: pair.read, readable: true, writable: false }));
      await Promise.all([new Promise((resolve) => child.once('exit', resolve)), ...streams.map((stream) => new Promise((resolve) => { stream.on('data', () => {}); stream.once('close', resolve); }))]);
    }),
    sync: measured('sync', async () => checkSync(await gateway.exec({ command: producer }))),
    syncHelper: measured('syncHelper', async () => checkSync(await helper.exec({ command: producer }))),
    ...(sandboxed ? {
      syncSandboxed: measured('syncSandboxed', async () => checkSync(await sandboxed.exec({ command: producer }))),
      backgroundSandboxed: measured('backgroundSandboxed', () => runBackground(sandboxed)),
    } : {}),
    background: measured('background', () => runBackground(gateway)),
    ...(base ? {
      baseSync: measured('baseSync', async () => checkSync(await base.exec({ command: producer }))),
      baseBackground: measured('baseBackground', () => runBackground(base)),
    } : {}),
    ...(baseSandboxed ? {
      baseSyncSandboxed: measured('baseSyncSandboxed', async () => checkSync(await baseSandboxed.exec({ command: producer }))),
    } : {}),
  };
  const rounds = quick ? 1 : 7;
  log(`${rounds} interleaved rounds of ${Object.keys(variants).length} variants, ${bytes / 1048576} MiB each`);
  const samples = await interleave(variants, { iterations: rounds, warmup: quick ? 0 : 1 });
  await gateway.close();
  await helper.close();
  await sandboxed?.close();
  await base?.close();
  await baseSandboxed?.close();
  cleanup();

  const rate = (ms) => bytes / MB / (ms / 1000);
  const rates = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, list.map(rate)]));
  const kernel = { name: 'kernel pipe', samples: rates.kernelPipe };
  const node = { name: 'Node reader', samples: rates.nodePipe };
  const nodeFifo = { name: 'Node reader of a pipe', samples: rates.nodeFifo };
  const keep = (name) => growth[name].slice(-rounds);
  const size = quick ? '64 MiB' : '1 GiB';
  return {
    rows: [
      row(3, `${size} through \`head | cat > /dev/null\` (kernel pipe)`, rates.kernelPipe, { unit: 'MB/s' }),
      row(3, `${size} read by Node from a pipe, dropped`, rates.nodePipe, { unit: 'MB/s', of: kernel }),
      row(3, `${size} read by Node from a real pipe (FIFO; child_process's 'pipe' is a socketpair), dropped`, rates.nodeFifo, { unit: 'MB/s', of: node }),
      row(3, `${size} through gateway.exec sync, sandbox off`, rates.sync, { unit: 'MB/s', of: node, target: 0.9, higherIsBetter: true }),
      ...(sandboxed ? [row(3, `${size} through gateway.exec sync, sandbox on (default policy)`, rates.syncSandboxed, { unit: 'MB/s', of: node, goal: 'output-capture' })] : []),
      row(3, `${size} through gateway.exec sync, sandbox off, spawner: helper`, rates.syncHelper, { unit: 'MB/s', of: node }),
      row(3, `${size} through a background process to its file, sandbox off`, rates.background, { unit: 'MB/s', of: node }),
      ...(sandboxed ? [row(3, `${size} through a background process to its file, sandbox on`, rates.backgroundSandboxed, { unit: 'MB/s', of: node })] : []),
      row(3, `  sync, sandbox off, against the kernel pipe`, rates.sync, { unit: 'MB/s', of: kernel }),
      row(3, '  sync, sandbox off, against the Node reader of a real pipe', rates.sync, { unit: 'MB/s', of: nodeFifo }),
      ...(sandboxed ? [row(3, '  sync, sandbox on, against the Node reader of a real pipe', rates.syncSandboxed, { unit: 'MB/s', of: nodeFifo })] : []),
      row(3, '  RSS growth of the gateway process, sync (target < 64 MB)', keep('sync'), { unit: 'MiB' }),
      row(3, '  RSS growth of the gateway process, sync helper', keep('syncHelper'), { unit: 'MiB' }),
      ...(sandboxed ? [row(3, '  RSS growth of the gateway process, sync, sandbox on', keep('syncSandboxed'), { unit: 'MiB' })] : []),
      row(3, '  RSS growth of the gateway process, background', keep('background'), { unit: 'MiB' }),
      row(3, '  RSS growth of this process, Node pipe baseline', keep('nodePipe'), { unit: 'MiB' }),
      ...(base ? [
        row(3, `baseline tree: ${size} through gateway.exec sync, sandbox off`, rates.baseSync, { unit: 'MB/s', of: node }),
        row(3, `baseline tree: ${size} through a background process, sandbox off`, rates.baseBackground, { unit: 'MB/s', of: node }),
        row(3, 'this tree against the baseline: sync', rates.sync, { unit: 'MB/s', of: { name: 'baseline tree', samples: rates.baseSync } }),
        row(3, 'this tree against the baseline: background', rates.background, { unit: 'MB/s', of: { name: 'baseline tree', samples: rates.baseBackground } }),
      ] : []),
      ...(baseSandboxed ? [
        row(3, `baseline tree: ${size} through gateway.exec sync, sandbox on (default policy)`, rates.baseSyncSandboxed, { unit: 'MB/s', of: node }),
        row(3, 'this tree against the baseline: sync, sandbox on', rates.syncSandboxed, { unit: 'MB/s', of: { name: 'baseline tree', samples: rates.baseSyncSandboxed } }),
      ] : []),
    ],
    notes: [
      'Sync mode keeps the first and last 0.5 MiB of each stream in memory and writes the redacted output to a file capped at 64 MiB (policy `output.maxFileBytes`); background output files are capped at 256 MiB (`background.maxFileBytes`). Both caps are defaults.',
      `RSS growth: the peak resident set sampled every 5 ms during the run, minus the value just before it (max growth over all rounds: sync ${Math.max(...keep('sync')).toFixed(1)} MiB, background ${Math.max(...keep('background')).toFixed(1)} MiB).`,
    ],
  };
}

const figure = { id: 3, title: 'Output throughput and gateway memory', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
