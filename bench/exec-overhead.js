'use strict';
/*
 * Figure 1: what execgate adds to running one command, unsandboxed (`sandbox.mode: off`; the
 * sandboxed path is figure 9). The goal row: gateway.exec({ command: 'true' }) with the audit log
 * on (the defaults: `fsync: before-spawn`), against what a user would otherwise run,
 * child_process.spawn('bash', ['-c', 'true']) with both outputs piped and read, in the same
 * process. Then gateway.exec of `true` with one secret reference resolved, execa with equivalent
 * options, and the plan's own argv spawned raw (the script and environment execgate gives the
 * shell). All variants run interleaved. Diagnostic variants show where the overhead goes: the
 * audit log without fdatasync, without the audit log, and the time spent in the prepare step, in
 * audit writes and in the fork itself. A library gateway takes the audit lock per record (two
 * turns a run); `execgate run` and `execgate mcp` keep it as a lease (audit/lock.ts: a writer
 * keeps the lock while it goes on writing), which two rows show, back to back and each run after
 * a pause once its lease has lapsed (as when an agent's runs come seconds apart).
 *
 *   npm run build && node bench/exec-overhead.js [--quick]
 */
const { spawn } = require('node:child_process');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { DIST, benchEnv, getUnsandboxedPolicy, interleave, row, runFigure, unsandboxedPolicy, waitChild } = require('./lib');

const SECRET = 'bench-secret-value-0123456789abcdef';
const SHELL = '/bin/bash';

async function run({ quick, baseline, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { AuditLog } = require(join(DIST, 'audit', 'log.js'));
  const { preparePlan, createRunId } = require(join(DIST, 'plan', 'prepare.js'));
  const DEFAULT_POLICY = unsandboxedPolicy();
  const { execa } = await import('execa');
  const { home, env, cleanup } = benchEnv('execgate-bench-exec-');
  const gatewayEnv = { ...env, EXECGATE_SECRET_BENCH_TOKEN: SECRET };
  const command = 'true <<secret:bench-token>>';

  // The default gateway, its audit log wrapped to time the writes (the log itself is the default one).
  const log1 = new AuditLog({ path: join(home, 'default', 'audit.log'), home: join(home, 'default'), env: gatewayEnv });
  let auditMs = 0;
  const timed = {
    write(event, fields) { const s = performance.now(); log1.write(event, fields); auditMs += performance.now() - s; },
    // The write is timed; the fdatasync it starts runs off the event loop while the shell starts.
    writeAndSync(event, fields) { const s = performance.now(); const synced = log1.writeAndSync(event, fields); auditMs += performance.now() - s; return synced; },
    writeOrDefer(event, fields) { const s = performance.now(); const error = log1.writeOrDefer(event, fields); auditMs += performance.now() - s; return error; },
    // A run's request is held and goes out with its start (one turn of the lock); where the log
    // has no hold (an older tree's), it is written at once.
    ...(typeof log1.hold === 'function' ? { hold(event, fields) { const s = performance.now(); log1.hold(event, fields); auditMs += performance.now() - s; } } : {}),
    fingerprint(value) { const s = performance.now(); const f = log1.fingerprint(value); auditMs += performance.now() - s; return f; },
    close() { log1.close(); },
  };
  const gateways = {
    default: createGateway({ policy: DEFAULT_POLICY, home: join(home, 'default'), env: gatewayEnv, audit: timed }),
    noFsync: createGateway({ policy: DEFAULT_POLICY, home: join(home, 'nofsync'), env: gatewayEnv, audit: { fsync: 'never' } }),
    noAudit: createGateway({ policy: DEFAULT_POLICY, home: join(home, 'noaudit'), env: gatewayEnv, audit: false }),
    helper: createGateway({ policy: DEFAULT_POLICY, home: join(home, 'helper'), env: gatewayEnv, spawner: 'helper' }),
    // The defaults with the audit lock kept as a lease (as `execgate run` and `execgate mcp` keep
    // it: audit/lock.ts), back to back and each run after its lease has lapsed.
    lease: createGateway({ policy: DEFAULT_POLICY, home: join(home, 'lease'), env: gatewayEnv }),
    apart: createGateway({ policy: DEFAULT_POLICY, home: join(home, 'apart'), env: gatewayEnv }),
  };
  if (baseline) {
    const { createGateway: createBaseline } = require(join(baseline, 'gateway.js'));
    const policy = getUnsandboxedPolicy(baseline);
    gateways.baseline = createBaseline({ policy, home: join(home, 'baseline'), env: gatewayEnv });
    gateways.baselineNoAudit = createBaseline({ policy, home: join(home, 'baseline-noaudit'), env: gatewayEnv, audit: false });
  }

  // The raw baselines get what the shell gets from execgate: the same script and environment.
  const probe = await preparePlan({
    refs: gateways.noAudit.refs, policy: DEFAULT_POLICY, env: gatewayEnv, cwd: home, shell: SHELL, supportedModes: new Set(['sync']),
  }, { command });
  const childEnv = probe.env;
  const args = [...probe.args];

  let auditPerExec = [];
  let forkSamples = [];
  const variants = {
    // What a user would run: bash by name, `-c true`, outputs piped and read, this process's environment.
    bash: () => waitChild(spawn('bash', ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'] })),
    gatewayTrue: () => gateways.default.exec({ command: 'true' }),
    gatewayLease: () => withLeases(() => gateways.lease.exec({ command: 'true' })),
    gatewayApart: () => withLeases(() => gateways.apart.exec({ command: 'true' })),
    raw: () => {
      const s = performance.now();
      const child = spawn(SHELL, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
      forkSamples.push(performance.now() - s);
      return waitChild(child);
    },
    execa: () => execa(SHELL, args, { env: childEnv, extendEnv: false, stdin: 'ignore', detached: true, reject: false }),
    gateway: async () => {
      auditMs = 0;
      const result = await gateways.default.exec({ command });
      if (result.exitCode !== 0) throw new Error(`gateway run failed: ${result.output}`);
      auditPerExec.push(auditMs);
    },
    gatewayNoFsync: () => gateways.noFsync.exec({ command }),
    gatewayNoAudit: () => gateways.noAudit.exec({ command }),
    gatewayHelper: () => gateways.helper.exec({ command }),
    ...(baseline ? {
      baselineTrue: () => gateways.baseline.exec({ command: 'true' }),
      baseline: () => gateways.baseline.exec({ command }),
      baselineNoAudit: () => gateways.baselineNoAudit.exec({ command }),
    } : {}),
    prepare: () => preparePlan({
      refs: gateways.noAudit.refs, policy: DEFAULT_POLICY, env: gatewayEnv, cwd: home, shell: SHELL, supportedModes: new Set(['sync']),
    }, { command }, createRunId()),
  };
  const iterations = quick ? 15 : 400;
  log(`${iterations} interleaved iterations of ${Object.keys(variants).length} variants`);
  // Before each run of `gatewayApart`, its audit log's lease (fs/lock.ts) is waited out, untimed.
  const apartLock = join(home, 'apart', 'audit.log.lock');
  const before = async (name) => { if (name === 'gatewayApart') await lockGone(apartLock); };
  const samples = await interleave(variants, { iterations, warmup: quick ? 3 : 30, before });
  auditPerExec = auditPerExec.slice(-iterations);
  forkSamples = forkSamples.slice(-iterations);
  // Counted after the timed runs, not during them: the audit lock's symlink(2) (one per turn of
  // the lock) and the fdatasyncs of a run in the default durability, this tree and the baseline.
  const counts = await countAuditCalls({ mine: () => gateways.default.exec({ command: 'true' }), ...(baseline ? { baseline: () => gateways.baseline.exec({ command: 'true' }) } : {}) }, quick ? 5 : 50);
  const leaseCounts = await countAuditCalls({ lease: () => withLeases(() => gateways.lease.exec({ command: 'true' })) }, quick ? 5 : 50);
  const apartCounts = await countAuditCalls({ apart: async () => { await lockGone(apartLock); return withLeases(() => gateways.apart.exec({ command: 'true' })); } }, quick ? 3 : 20);
  for (const gateway of Object.values(gateways)) await gateway.close();
  cleanup();

  const bash = { name: 'bash -c true', samples: samples.bash };
  const raw = { name: 'raw spawn', samples: samples.raw };
  const rows = [
    row(1, 'spawn(\'bash\', [\'-c\', \'true\']), outputs piped', samples.bash),
    row(1, 'gateway.exec({ command: \'true\' }), unsandboxed, defaults', samples.gatewayTrue, { of: bash, goal: 'exec-unsandboxed' }),
    row(1, '  same, the audit lock kept as a lease (execgate run, execgate mcp)', samples.gatewayLease, { of: bash }),
    row(1, '  same, with the lease, each run after a pause (the lock taken anew)', samples.gatewayApart, { of: bash }),
    row(1, 'raw child_process.spawn of the plan\'s shell and script', samples.raw),
    row(1, 'execa, equivalent options', samples.execa, { of: raw }),
    row(1, 'gateway.exec (defaults: audit on, secret, env sanitized)', samples.gateway, { of: raw }),
    row(1, '  same, audit without fdatasync', samples.gatewayNoFsync, { of: raw }),
    row(1, '  same, audit off', samples.gatewayNoAudit, { of: raw }),
    row(1, '  same, spawner: helper', samples.gatewayHelper, { of: raw }),
    row(1, '  where it goes: prepare (resolve, env, redactor)', samples.prepare),
    row(1, '  where it goes: audit writes per exec', auditPerExec),
    row(1, '  where it goes: spawn() call (fork, loop blocked)', forkSamples),
  ];
  if (baseline) {
    const base = { name: 'baseline tree', samples: samples.baseline };
    const baseNoAudit = { name: 'baseline tree', samples: samples.baselineNoAudit };
    rows.push(
      row(1, 'baseline tree: gateway.exec({ command: \'true\' })', samples.baselineTrue, { of: bash }),
      row(1, 'baseline tree: gateway.exec (defaults)', samples.baseline, { of: raw }),
      row(1, 'baseline tree: gateway.exec, audit off', samples.baselineNoAudit, { of: raw }),
      row(1, 'this tree against the baseline: defaults', samples.gateway, { of: base }),
      row(1, 'this tree against the baseline: audit off', samples.gatewayNoAudit, { of: baseNoAudit }),
    );
  }
  for (const [tree, label] of [['mine', 'this tree'], ['baseline', 'baseline tree']]) {
    if (!counts[tree]) continue;
    rows.push(
      row(1, `  where it goes: turns of the audit lock per run, ${label}`, counts[tree].locks, { unit: 'n' }),
      row(1, `  where it goes: fdatasyncs per run, ${label}`, counts[tree].syncs, { unit: 'n' }),
    );
  }
  rows.push(
    row(1, '  where it goes: turns of the audit lock per run with the lease, back to back', leaseCounts.lease.locks, { unit: 'n' }),
    row(1, '  where it goes: turns of the audit lock per run with the lease, after a pause', apartCounts.apart.locks, { unit: 'n' }),
    row(1, '  where it goes: fdatasyncs per run with the lease, after a pause', apartCounts.apart.syncs, { unit: 'n' }),
  );
  const { hasInheritedDescriptors } = require(join(DIST, 'process', 'inherited-fds.js'));
  return {
    rows,
    notes: [
      ...(hasInheritedDescriptors() ? ['This process holds a descriptor above 2 without close-on-exec (inherited from whatever started it): every gateway run starts a bash that closes it first, which the raw `bash -c true` does not pay. Run the figure from a process without (see docs/performance.md) for the ratio a terminal or an MCP client gives.'] : []),
      'The default audit policy fdatasyncs the record written before each spawn (`fsync: before-spawn`); the sync runs off the event loop while an unsandboxed shell starts parked, and the command acts once the record is durable (audit writes per exec count the write only).',
    ],
  };
}

/** Runs `call` with this process's audit writers keeping leases (audit/lock.ts), as `execgate run` and `execgate mcp` do. */
async function withLeases(call) {
  const { useAuditLeases } = require(join(DIST, 'audit', 'lock.js'));
  useAuditLeases();
  try {
    return await call();
  } finally {
    useAuditLeases(0);
  }
}

/** Resolves once nothing is at `path` (an audit lock whose lease lapsed), or after 2 s. */
async function lockGone(path) {
  const { lstatSync } = require('node:fs');
  for (let waited = 0; waited < 2000; waited += 5) {
    try {
      lstatSync(path);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Turns of the audit lock (its symlink(2)) and fdatasyncs of each call of each function in
 * `runs`, counted by wrapping node:fs (the gateways' modules call through its exports).
 */
async function countAuditCalls(runs, iterations) {
  const fs = require('node:fs');
  const original = { symlinkSync: fs.symlinkSync, fdatasync: fs.fdatasync, fdatasyncSync: fs.fdatasyncSync };
  let locks = 0;
  let syncs = 0;
  fs.symlinkSync = (target, path, ...rest) => { if (String(path).endsWith('.lock')) locks++; return original.symlinkSync(target, path, ...rest); };
  fs.fdatasync = (...args) => { syncs++; return original.fdatasync(...args); };
  fs.fdatasyncSync = (...args) => { syncs++; return original.fdatasyncSync(...args); };
  const out = {};
  try {
    for (const [name, run] of Object.entries(runs)) {
      await run();
      out[name] = { locks: [], syncs: [] };
      for (let i = 0; i < iterations; i++) {
        locks = 0;
        syncs = 0;
        await run();
        // A sync that a run starts settles before its command acts, so before the run returns.
        out[name].locks.push(locks);
        out[name].syncs.push(syncs);
      }
    }
  } finally {
    Object.assign(fs, original);
  }
  return out;
}

const figure = { id: 1, title: 'Per-call overhead: gateway.exec vs raw spawn vs execa (small heap)', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
