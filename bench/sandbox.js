'use strict';
/*
 * Figure 9: what the sandbox costs. A sandboxed gateway.exec of `true` (the default policy with
 * `sandbox.mode: required`, audit on) against raw spawns of the same sandbox: what a plan's
 * launch runs (nsenter into the gateway's shared network namespace, then bubblewrap with the
 * same options, seccomp filter included, then bash) without execgate's gate and mount check,
 * and bubblewrap making a network namespace of its own per run. Also against a raw unsandboxed `bash -c true`, the floor every peer pays the full
 * namespace set-up on top of. All interleaved. Then output throughput through a sandboxed
 * sync run against an unsandboxed one.
 *
 *   npm run build && node bench/sandbox.js [--quick]
 */
const { spawn } = require('node:child_process');
const { closeSync, mkdirSync, openSync } = require('node:fs');
const { join } = require('node:path');
const { DIST, benchEnv, interleave, readDescendantsCpu, readOwnCpu, row, runFigure, unsandboxedPolicy, waitChild } = require('./lib');

const MB = 1e6;

async function run({ quick, baseline, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { preparePlan } = require(join(DIST, 'plan', 'prepare.js'));
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { SharedNetwork, checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const { renderBwrapOptions } = require(join(DIST, 'process', 'bwrap', 'spec.js'));
  const platform = checkPlatform();
  if (!platform.ok) return { rows: [], notes: [`skipped: ${platform.reason}`] };

  const { home, env, cleanup } = benchEnv('execgate-bench-sandbox-');
  const work = join(home, 'work');
  mkdirSync(work);
  // The default policy (`network: open`: every public host through the egress proxy and the
  // gateway's shared bridge) and the same with `network: none` (loopback only, no proxy).
  const sandboxed = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } };
  const gateway = createGateway({ policy: sandboxed, home: join(home, 'state'), env, cwd: work });
  const offline = { ...sandboxed, network: { ...sandboxed.network, mode: 'none', allow: [], deny: [] } };
  const noNet = createGateway({ policy: offline, home: join(home, 'offline'), env, cwd: work });
  // What the audit log's records (written and synced before and after each run) add.
  const noAudit = createGateway({ policy: offline, home: join(home, 'no-audit'), env, cwd: work, audit: false });
  const plain = createGateway({ policy: unsandboxedPolicy(), home: join(home, 'plain'), env, cwd: work });
  // Every run sets its sandbox up on its own path: what the defaults did before warm sandboxes.
  const cold = createGateway({ policy: sandboxed, home: join(home, 'cold'), env, cwd: work, warmSandboxes: 0 });
  // --baseline=DIR: the same two gateways from another built tree, interleaved with these.
  let base;
  if (baseline) {
    const { createGateway: createBaseline } = require(join(baseline, 'gateway.js'));
    base = {
      warm: createBaseline({ policy: sandboxed, home: join(home, 'base-warm'), env, cwd: work }),
      cold: createBaseline({ policy: sandboxed, home: join(home, 'base-cold'), env, cwd: work, warmSandboxes: 0 }),
    };
  }

  // The raw baselines run exactly what a plan runs: the same argv and environment.
  const network = new SharedNetwork(platform.helper);
  const plan = await preparePlan({
    refs: gateway.refs, policy: sandboxed, env, cwd: work, shell: '/bin/bash', supportedModes: new Set(['sync']),
    sandbox: { home: join(home, 'raw-state'), network: () => network },
  }, { command: 'true' });
  if (!plan.sandbox.sandboxed || !plan.sandbox.network.shared) throw new Error(`unexpected plan: ${JSON.stringify(plan.sandbox)}`);
  // The raw baselines run what a plan's sandbox is, without execgate's gate and mount check:
  // bubblewrap with the same options (binds by path, the seccomp filter on descriptor 3), the
  // program straight after them.
  const seccompFd = openSync(plan.launch.spec.seccomp, 'r');
  const options = renderBwrapOptions(plan.launch.spec, { seccomp: () => 3 });
  const planArgv = [...plan.launch.launcher, ...options, '--', plan.shell, ...plan.args];
  // Bubblewrap alone with the same mounts and namespaces, making the network namespace itself,
  // running `bash -c true`: no nsenter (the figure the issue compares with).
  const bwrapAt = planArgv.indexOf(platform.helper);
  const ownNetArgv = planArgv.slice(bwrapAt, planArgv.indexOf('--', bwrapAt + options.length));
  ownNetArgv.splice(ownNetArgv.indexOf('--die-with-parent'), 0, '--unshare-net');
  ownNetArgv.push('--', '/bin/bash', '--norc', '--noprofile', '-c', 'true');
  const spawnRaw = (argv) => waitChild(spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe', seccompFd], env: plan.env, cwd: work }));
  const check = (result) => {
    if (result.exitCode !== 0) throw new Error(`run failed: ${result.output}`);
  };

  const variants = {
    rawBash: () => spawnRaw(['/bin/bash', '--norc', '--noprofile', '-c', 'true']),
    rawPlan: () => spawnRaw(planArgv),
    rawOwnNet: () => spawnRaw(ownNetArgv),
    gateway: async () => check(await gateway.exec({ command: 'true' })),
    gatewayNone: async () => check(await noNet.exec({ command: 'true' })),
    gatewayNoAudit: async () => check(await noAudit.exec({ command: 'true' })),
    gatewayCold: async () => check(await cold.exec({ command: 'true' })),
    unsandboxed: async () => check(await plain.exec({ command: 'true' })),
    ...(base ? {
      baseWarm: async () => check(await base.warm.exec({ command: 'true' })),
      baseCold: async () => check(await base.cold.exec({ command: 'true' })),
    } : {}),
  };
  const iterations = quick ? 10 : 200;
  log(`${iterations} interleaved iterations of ${Object.keys(variants).length} variants, each once the warm sandboxes are set up`);
  // Each sample starts on a machine where nothing of the sample before it is still running: a
  // warm gateway sets its next sandbox up after each run (bubblewrap, some 10 ms of CPU), and on
  // two cores that set-up slowed whichever variant came next (`network: none` came after `open`
  // in every iteration and read slower than it). What an agent's call meets after its pause; the
  // back-to-back row below is the tight loop, where the set-up is still going on.
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const warmGateways = [gateway, noNet, noAudit, ...(base ? [base.warm] : [])];
  const settled = async (tail = 5) => {
    const until = Date.now() + 2000;
    while (Date.now() < until && warmGateways.some((g) => g.warmSandboxes.waiting === 0)) await pause(5);
    await pause(tail);
  };
  const samples = await interleave(variants, { iterations, warmup: quick ? 2 : 20, before: () => settled() });
  // The figure is about warm sandboxes only if the runs did start in them.
  const warmShare = (g) => { const { warm, cold: coldRuns } = g.warmSandboxes; return warm / (warm + coldRuns); };
  const shares = { open: warmShare(gateway), none: warmShare(noNet) };
  // Back to back: each run asked for the moment the one before returned, so the sandbox set up
  // after a run has had no time to get ready; what a tight loop of commands sees.
  const backToBack = [];
  const baseBackToBack = [];
  for (let i = 0; i < iterations; i += 1) {
    for (const [g, into] of base ? [[gateway, backToBack], [base.warm, baseBackToBack]] : [[gateway, backToBack]]) {
      const started = process.hrtime.bigint();
      check(await g.exec({ command: 'true' }));
      into.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }

  // CPU per run, all of it: this process (each gateway lives here, as the raw spawns are made
  // from here) and every process below it, the next warm sandbox's set-up included. Blocks of
  // runs with an agent's pause after each, interleaved by block; a block ends once each gateway's
  // next warm sandbox is set up (or 2 s), so the set-up a run leaves behind is counted with it.
  const cpuMeasured = readDescendantsCpu() !== undefined;
  const cpu = { rawBash: [], rawOwnNet: [], gateway: [], gatewayNone: [], gatewayCold: [], ...(base ? { baseWarm: [], baseCold: [] } : {}) };
  if (cpuMeasured) {
    const perBlock = quick ? 5 : 20;
    const blocks = quick ? 2 : 10;
    log(`${blocks} interleaved blocks of ${perBlock} runs for CPU per run`);
    const names = Object.keys(cpu);
    for (let b = 0; b < blocks; b += 1) {
      for (let k = 0; k < names.length; k += 1) {
        const name = names[(b + k) % names.length];
        await settled(20);
        const before = readOwnCpu() + readDescendantsCpu();
        for (let i = 0; i < perBlock; i += 1) {
          await variants[name]();
          await pause(10);
        }
        await settled(20);
        cpu[name].push((readOwnCpu() + readDescendantsCpu() - before) / perBlock);
      }
    }
  }

  const bytes = quick ? 64 * 1024 * 1024 : 1024 * 1024 * 1024;
  const producer = `head -c ${bytes} /dev/zero`;
  const checkBytes = (result) => {
    if (result.exitCode !== 0 || result.bytes.stdout !== bytes) throw new Error(`read ${result.bytes.stdout} of ${bytes} bytes`);
  };
  const rounds = quick ? 1 : 5;
  log(`${rounds} interleaved rounds of ${bytes / 1048576} MiB, sandboxed and not`);
  const through = await interleave({
    sandboxed: async () => checkBytes(await gateway.exec({ command: producer })),
    unsandboxed: async () => checkBytes(await plain.exec({ command: producer })),
  }, { iterations: rounds, warmup: 0 });

  await gateway.close();
  await noNet.close();
  await noAudit.close();
  await plain.close();
  await cold.close();
  if (base) {
    await base.warm.close();
    await base.cold.close();
  }
  network.close();
  closeSync(seccompFd);
  cleanup();

  const rawPlan = { name: 'raw spawn of the plan argv', samples: samples.rawPlan };
  const rawBash = { name: 'raw bash -c true', samples: samples.rawBash };
  const rawOwnNet = { name: 'raw bwrap + bash -c true', samples: samples.rawOwnNet };
  const rate = (ms) => bytes / MB / (ms / 1000);
  const size = quick ? '64 MiB' : '1 GiB';
  return {
    rows: [
      row(9, 'raw spawn: bash -c true (no sandbox)', samples.rawBash),
      row(9, 'raw spawn: nsenter + bwrap (the plan\'s options, no gate) + bash -c true', samples.rawPlan, { of: rawBash }),
      row(9, 'raw spawn: bwrap --unshare-net (same namespaces and mounts) + bash -c true', samples.rawOwnNet, { of: rawBash }),
      row(9, `gateway.exec true, sandboxed, network open (defaults + required; ${Math.round(shares.open * 100)}% of runs warm)`, samples.gateway, { of: rawBash, goal: 'sandbox-warm' }),
      row(9, '  same, against the raw plan argv', samples.gateway, { of: rawPlan }),
      row(9, '  same, against raw bwrap', samples.gateway, { of: rawOwnNet }),
      row(9, `gateway.exec true, sandboxed, network none (${Math.round(shares.none * 100)}% of runs warm)`, samples.gatewayNone, { of: rawBash, target: 1.5 }),
      row(9, '  same, against raw bwrap', samples.gatewayNone, { of: rawOwnNet }),
      row(9, '  network open against network none', samples.gateway, { of: { name: 'network none', samples: samples.gatewayNone } }),
      row(9, 'gateway.exec true, sandboxed, network open, warm sandboxes off (every run cold)', samples.gatewayCold, { of: rawOwnNet, goal: 'sandbox-cold' }),
      row(9, '  same, against the raw plan argv', samples.gatewayCold, { of: rawPlan }),
      row(9, '  warm against cold', samples.gateway, { of: { name: 'cold', samples: samples.gatewayCold } }),
      row(9, 'gateway.exec true, sandboxed, network open, back to back (no pause between runs)', backToBack, { of: rawOwnNet }),
      row(9, 'gateway.exec true, sandboxed, network none, audit off (warm)', samples.gatewayNoAudit, { of: rawOwnNet }),
      row(9, 'gateway.exec true, sandbox off', samples.unsandboxed, { of: rawBash }),
      ...(base ? [
        row(9, 'baseline tree: gateway.exec true, sandboxed, network open (warm sandboxes on)', samples.baseWarm, { of: rawOwnNet }),
        row(9, '  this tree against the baseline, warm', samples.gateway, { of: { name: 'baseline tree', samples: samples.baseWarm } }),
        row(9, 'baseline tree: gateway.exec true, sandboxed, every run cold', samples.baseCold, { of: rawOwnNet }),
        row(9, '  this tree against the baseline, cold', samples.gatewayCold, { of: { name: 'baseline tree', samples: samples.baseCold } }),
        row(9, 'baseline tree: back to back', baseBackToBack, { of: rawOwnNet }),
        row(9, '  this tree against the baseline, back to back', backToBack, { of: { name: 'baseline tree', samples: baseBackToBack } }),
      ] : []),
      ...(cpuMeasured ? [
        row(9, 'CPU per run (this process and all below it): raw bash -c true', cpu.rawBash),
        row(9, 'CPU per run: raw bwrap --unshare-net + bash -c true', cpu.rawOwnNet, { of: { name: 'raw bash', samples: cpu.rawBash } }),
        row(9, 'CPU per run: gateway.exec true, sandboxed, network open, warm (the next sandbox\'s set-up included)', cpu.gateway, { of: { name: 'raw bwrap', samples: cpu.rawOwnNet }, target: 1 }),
        row(9, 'CPU per run: gateway.exec true, sandboxed, network none, warm', cpu.gatewayNone, { of: { name: 'raw bwrap', samples: cpu.rawOwnNet }, target: 1 }),
        row(9, 'CPU per run: gateway.exec true, sandboxed, network open, cold', cpu.gatewayCold, { of: { name: 'raw bwrap', samples: cpu.rawOwnNet } }),
        ...(base ? [
          row(9, 'CPU per run: baseline tree, warm', cpu.baseWarm, { of: { name: 'raw bwrap', samples: cpu.rawOwnNet } }),
          row(9, '  this tree against the baseline, warm', cpu.gateway, { of: { name: 'baseline tree', samples: cpu.baseWarm } }),
          row(9, 'CPU per run: baseline tree, cold', cpu.baseCold, { of: { name: 'raw bwrap', samples: cpu.rawOwnNet } }),
          row(9, '  this tree against the baseline, cold', cpu.gatewayCold, { of: { name: 'baseline tree', samples: cpu.baseCold } }),
        ] : []),
      ] : []),
      row(9, `${size} through a sandboxed sync run`, through.sandboxed.map(rate), { unit: 'MB/s', of: { name: 'unsandboxed', samples: through.unsandboxed.map(rate) }, higherIsBetter: true }),
      row(9, `${size} through an unsandboxed sync run`, through.unsandboxed.map(rate), { unit: 'MB/s' }),
    ],
    notes: [
      'Warm sandboxes (gateway option warmSandboxes, default 1): once a sandboxed sync run has ended (or has run 200 ms), the gateway sets the same sandbox up again for the next one; the next run with the same sandbox starts in it, the set-up off its path. The interleaved rows leave the other variants\' runs between two runs of one gateway, as an agent\'s pauses do, and each sample starts once every warm gateway\'s next sandbox is set up (before, a set-up still running slowed whichever variant came next); back to back, a run finds the next sandbox still being set up and waits for the rest of that set-up.',
      'CPU per run: user + system time of this process (every gateway lives in it, and the raw spawns are made from it) and of every process below it, over blocks of runs with a 10 ms pause after each, each block ending once the warm gateways\' next sandboxes are set up; blocks interleaved. Clock ticks of 10 ms for the children: read over blocks, not single runs.',
      'A gateway\'s runs join one network namespace per gateway (nsenter, then bwrap): that is for sharing loopback between runs, not for speed; entering costs about what creating a namespace per run would.',
      'Inherited descriptors: a process holding one without close-on-exec (a shell that started it with `200<file`, a PTY run in progress) starts each run through a descriptor-closing bash, one exec more; run the figure from a clean shell to see the usual case.',
      'network open: the gateway\'s one egress bridge (started by the first run, in the warm-up) serves every run; a run adds only its proxy registration and variables.',
    ],
  };
}

const figure = { id: 9, title: 'The sandbox: sandboxed gateway.exec vs raw bubblewrap spawns vs raw bash', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
