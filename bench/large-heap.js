'use strict';
/*
 * Figure 2: spawning from a host with a large heap. Node spawns by fork(2), which copies the
 * parent's page tables while its event loop waits, so a raw spawn from a 2 GiB process costs
 * tens of milliseconds. execgate's default (`spawner: 'auto'`) spawns from a small helper once
 * the host is past 128 MiB resident.
 *
 * Heap size is a property of a process, so this figure runs worker processes side by side and
 * interleaves them in blocks: a small one (gateway with defaults, and raw spawn), a 2 GiB one
 * running only the gateway with defaults (it uses the helper), and a 2 GiB one running raw spawn
 * and the gateway with `spawner: 'direct'`. The helper worker must not fork itself: after each
 * fork the kernel write-protects the parent's pages, and the next writes fault (copy-on-write),
 * which would charge the cost of the raw spawns to the helper. Each worker measures its event
 * loop's delay (perf_hooks.monitorEventLoopDelay) during its spawns. The full run adds a sweep
 * over host sizes: direct spawn vs the helper, the measurement behind the 128 MiB threshold.
 *
 *   npm run build && node bench/large-heap.js [--quick]
 */
const { fork } = require('node:child_process');
const { join } = require('node:path');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const { DIST, benchEnv, holdMemory, rawSpawn, row, rssMiB, runFigure } = require('./lib');

const SHELL = '/bin/bash';
const SECRET = 'bench-secret-value-0123456789abcdef';
const MiB = 1024 * 1024;
/** Calls of one variant in a row, under one event-loop delay histogram. */
const CALLS_IN_A_ROW = 5;

/* ---------- worker side ---------- */

async function worker(role, ballast) {
  holdMemory(ballast);
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { home, env, cleanup } = benchEnv('execgate-bench-heap-');
  const gatewayEnv = { ...env, EXECGATE_SECRET_BENCH_TOKEN: SECRET };
  const command = 'true <<secret:bench-token>>';
  const gateways = [];
  const gateway = (options) => {
    const created = createGateway({ policy: require('./lib').unsandboxedPolicy(), home: join(home, String(gateways.length)), env: gatewayEnv, ...options });
    gateways.push(created);
    return (() => created.exec({ command }));
  };
  const raw = () => rawSpawn(SHELL, ['--norc', '--noprofile', '-c', `true ${SECRET}`], env);
  const audit = role.startsWith('sweep') ? { audit: false } : {};
  const variants = {
    small: { gatewayDefault: gateway({}), raw },
    'large-execgate': { gatewayDefault: gateway({}) },
    'large-direct': { raw, gatewayDirect: gateway({ spawner: 'direct' }) },
    'sweep-direct': { gatewayDirect: gateway({ spawner: 'direct', ...audit }) },
    'sweep-helper': { gatewayHelper: gateway({ spawner: 'helper', ...audit }) },
  }[role];
  // Each variant runs a few calls in a row under a fresh event-loop delay histogram (one that
  // is disabled and enabled again would count the pause in between as a delay).
  const stalls = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  const runCalls = async (name, calls, samples) => {
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await variants[name]();
      samples.push(performance.now() - started);
    }
    histogram.disable();
    if (histogram.count > 0) stalls[name].push(histogram.max / 1e6);
  };
  for (const name of Object.keys(variants)) await runCalls(name, 5, []); // warm-up (starts the helper where there is one)
  for (const name of Object.keys(variants)) stalls[name] = [];
  process.on('message', async (message) => {
    if (message.block) {
      const names = Object.keys(variants);
      const samples = Object.fromEntries(names.map((name) => [name, []]));
      for (let done = 0, round = 0; done < message.block; done += CALLS_IN_A_ROW, round++) {
        for (let k = 0; k < names.length; k++) {
          const name = names[(round + k) % names.length];
          await runCalls(name, Math.min(CALLS_IN_A_ROW, message.block - done), samples[name]);
        }
      }
      process.send({ samples, rss: rssMiB() });
    } else if (message.done) {
      for (const created of gateways) await created.close();
      cleanup();
      process.send({ stalls, rss: rssMiB() }, () => process.exit(0));
    }
  });
  process.send({ ready: true, rss: rssMiB() });
}

/* ---------- orchestrator side ---------- */

function startWorker(role, ballast) {
  const child = fork(__filename, ['--worker', role, String(ballast)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let waiting;
  child.on('message', (message) => { const w = waiting; waiting = undefined; w?.resolve(message); });
  child.once('exit', (code) => waiting?.reject(new Error(`${role} worker exited (${code})`)));
  const ask = (message) => new Promise((resolve, reject) => {
    waiting = { resolve, reject };
    if (message) child.send(message);
  });
  return { role, child, ask, ready: ask() };
}

/** Runs the workers' variants in alternating blocks; returns samples per worker and variant. */
async function runBlocks(workers, { blocks, block }) {
  const samples = {};
  const info = {};
  for (const w of workers) info[w.role] = { rss: (await w.ready).rss };
  for (let b = 0; b < blocks; b++) {
    for (let k = 0; k < workers.length; k++) {
      const w = workers[(b + k) % workers.length];
      const reply = await w.ask({ block });
      for (const [name, values] of Object.entries(reply.samples)) {
        (samples[`${w.role}/${name}`] ??= []).push(...values);
      }
      info[w.role].rss = Math.max(info[w.role].rss, reply.rss);
    }
  }
  for (const w of workers) info[w.role].stalls = (await w.ask({ done: true })).stalls;
  return { samples, info };
}

async function run({ quick, log }) {
  const large = quick ? 256 * MiB : 2048 * MiB;
  const label = quick ? '256 MiB' : '2 GiB';
  log(`workers: small, ${label} (gateway defaults), ${label} (raw spawn, spawner: direct)`);
  const workers = [startWorker('small', 0), startWorker('large-execgate', large), startWorker('large-direct', large)];
  const { samples, info } = await runBlocks(workers, quick ? { blocks: 2, block: 5 } : { blocks: 10, block: 30 });
  const small = { name: 'execgate, small host', samples: samples['small/gatewayDefault'] };
  const rawSmall = { name: 'raw, small host', samples: samples['small/raw'] };
  const rss = (role) => `RSS ${Math.round(info[role].rss)} MiB`;
  const stall = (role, name) => info[role].stalls[name];
  const rows = [
    row(2, `gateway.exec, defaults, small host (${rss('small')})`, small.samples),
    row(2, 'raw spawn, small host', rawSmall.samples),
    row(2, `gateway.exec, defaults (helper), ${label} host (${rss('large-execgate')})`, samples['large-execgate/gatewayDefault'], { of: small, target: 1.3 }),
    row(2, `raw spawn, ${label} host (${rss('large-direct')})`, samples['large-direct/raw'], { of: rawSmall }),
    row(2, `gateway.exec, spawner: direct, ${label} host`, samples['large-direct/gatewayDirect'], { of: small }),
    row(2, 'event-loop stall, small host, gateway.exec defaults', stall('small', 'gatewayDefault')),
    row(2, `event-loop stall, ${label} host, gateway.exec defaults (helper)`, stall('large-execgate', 'gatewayDefault'), { of: { name: 'small host', samples: stall('small', 'gatewayDefault') } }),
    row(2, `event-loop stall, ${label} host, gateway.exec spawner: direct`, stall('large-direct', 'gatewayDirect'), { of: { name: 'small host', samples: stall('small', 'gatewayDefault') } }),
    row(2, `event-loop stall, ${label} host, raw spawn`, stall('large-direct', 'raw')),
  ];
  const notes = [
    `Event-loop stall rows: the longest event-loop delay seen while ${CALLS_IN_A_ROW} calls ran in a row (perf_hooks.monitorEventLoopDelay, 1 ms resolution, so about 1 ms is the floor), median and range over all such groups.`,
  ];
  if (!quick) {
    // Where direct spawn starts to cost more than the helper: one worker per size and spawner, audit off.
    for (const extra of [0, 64, 128, 256, 512, 1024]) {
      log(`sweep: +${extra} MiB`);
      const pair = [startWorker('sweep-direct', extra * MiB), startWorker('sweep-helper', extra * MiB)];
      const sweep = await runBlocks(pair, { blocks: 6, block: 25 });
      const helper = { name: 'helper', samples: sweep.samples['sweep-helper/gatewayHelper'] };
      rows.push(row(2, `sweep, audit off: direct, host RSS ${Math.round(sweep.info['sweep-direct'].rss)} MiB`, sweep.samples['sweep-direct/gatewayDirect'], { of: helper }));
      rows.push(row(2, `sweep, audit off: helper, host RSS ${Math.round(sweep.info['sweep-helper'].rss)} MiB`, helper.samples));
    }
    notes.push('Sweep rows: the ratio is direct spawn over helper spawn at that host size; above 1 the helper is faster.');
  }
  return { rows, notes };
}

const figure = { id: 2, title: 'Large host heap: spawn cost and event-loop delay', run };
module.exports = figure;
if (require.main === module) {
  if (process.argv[2] === '--worker') {
    worker(process.argv[3], Number(process.argv[4])).catch((error) => { console.error(error); process.exit(1); });
  } else {
    runFigure(figure);
  }
}
