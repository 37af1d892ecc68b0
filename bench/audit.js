'use strict';
/*
 * Audit log review at scale: writes N records (default 1,000,000) with the chain writer, rotated
 * into several files (64 MiB each), then measures, each in a fresh process so peak memory is its
 * own: verify (the whole chain), search (a run-level filter: denied runs that used a secret),
 * stats, and the HTML report (with its size and the runs it embeds). Prints records/s and peak
 * RSS per phase. A measurement, not a test.
 *
 *   npm run build && node bench/audit.js [records] [dir]
 *
 * The directory (default: a fresh one under the OS temp dir) is removed afterwards unless given.
 */
const { spawnSync } = require('node:child_process');
const { existsSync, mkdtempSync, rmSync, statSync } = require('node:fs');
const { tmpdir, cpus } = require('node:os');
const { join } = require('node:path');

const dist = join(__dirname, '..', 'dist');

function peakRssMiB() {
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

async function phase(name, dir, count) {
  const { listAuditFiles } = require(join(dist, 'audit', 'files.js'));
  const files = listAuditFiles(join(dir, 'audit.log'), existsSync);
  const started = process.hrtime.bigint();
  let detail;
  if (name === 'write') {
    const { AuditLog } = require(join(dist, 'audit', 'log.js'));
    // One writer, so the cross-process lock is left out; fsync is the kernel's business here.
    const log = new AuditLog({ home: dir, lock: false, fsync: 'never' });
    log.write('gateway.started', { pid: process.pid, policy: '<bench>', sources: ['memory', 'env', 'vault'] });
    let written = 1;
    for (let run = 0; written < count; run++) {
      const runId = `run_${run.toString(36).padStart(8, '0')}_${(run * 2654435761 >>> 0).toString(16).padStart(12, '0')}`;
      const actor = `mcp:client-${run % 7}/session-${run % 97}`;
      const command = run % 11 === 0 ? `curl -H "Authorization: Bearer <<secret:api-token>>" https://api.example.com/v1/items/${run}` : `git -C /srv/repo-${run % 13} log --oneline -n ${run % 50} && echo <<secret:deploy-key>>`;
      log.write('exec.request', { runId, actor, command, cwd: '/srv/app', mode: 'sync', timeout: 120000 });
      written++;
      if (run % 11 === 0) {
        log.write('exec.denied', { runId, actor, command, code: 'EXECGATE_ERR_POLICY_DENIED', rule: 'no-network', reason: 'network tools are not allowed', message: 'The policy refused this command.' });
        written++;
        continue;
      }
      log.write('exec.started', {
        runId, actor, command, cwd: '/srv/app', mode: 'sync',
        decision: { allowed: true, rule: 'rules.default', reason: 'no rule matched; the policy allows by default' },
        refs: [{ kind: 'secret', id: 'deploy-key', ref: '<<secret:deploy-key>>', found: true, source: 'env', fingerprint: log.fingerprint(`deploy-key-value-${run % 3}`) }],
        env: { removed: ['LD_PRELOAD'], withheld: ['EXECGATE_SECRET_DEPLOY_KEY', 'GITHUB_TOKEN'], reported: [] },
      });
      log.write('exec.finished', {
        runId, actor, command, exitCode: run % 17 === 0 ? 1 : 0, signal: null, timedOut: false, killed: false,
        durationMs: 3 + (run % 400), bytes: { stdout: 120 + run % 900, stderr: 0 }, truncated: { stdout: false, stderr: false, output: false }, redactions: run % 2,
      });
      written += 2;
    }
    log.close();
    detail = { records: written };
  } else if (name === 'verify') {
    const { loadAuditKeys, getAuditKeyPath } = require(join(dist, 'audit', 'key.js'));
    const { verifyAuditFiles } = require(join(dist, 'audit', 'verify.js'));
    const result = await verifyAuditFiles(files, loadAuditKeys({ env: {}, keyPath: getAuditKeyPath(dir) }));
    if (!result.ok) throw new Error(`verify failed: ${JSON.stringify(result.breaks[0])}`);
    detail = { records: result.records, ok: result.ok };
  } else if (name === 'search') {
    const { searchAudit } = require(join(dist, 'audit', 'query.js'));
    let matched = 0;
    const result = await searchAudit(files, { failed: true, ref: 'deploy-key', command: /repo-7 / }, () => { matched++; });
    detail = { records: result.records, runs: result.runs, matched };
  } else if (name === 'stats') {
    const { collectStats } = require(join(dist, 'audit', 'stats.js'));
    const stats = await collectStats(files);
    detail = { records: stats.records, runs: stats.runs, secrets: stats.secrets.length };
  } else if (name === 'report') {
    const { buildHtmlReport } = require(join(dist, 'audit', 'report.js'));
    const { loadAuditKeys, getAuditKeyPath } = require(join(dist, 'audit', 'key.js'));
    const result = await buildHtmlReport({ files, keys: loadAuditKeys({ env: {}, keyPath: getAuditKeyPath(dir) }) });
    // The page as a reviewer receives it: its size, and how many runs it embeds for filtering.
    detail = { records: result.stats.records, runs: result.stats.runs, embeddedRuns: result.embeddedRuns, htmlMiB: Number((Buffer.byteLength(result.html) / 1048576).toFixed(2)), verified: result.verify.ok };
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { phase: name, seconds: Number(seconds.toFixed(2)), recordsPerSecond: Math.round(detail.records / seconds), peakRssMiB: peakRssMiB(), ...detail };
}

async function main() {
  const [, , countArg, dirArg, phaseName] = process.argv;
  const count = Number(countArg ?? 1_000_000);
  if (phaseName !== undefined) {
    process.stdout.write(`${JSON.stringify(await phase(phaseName, dirArg, count))}\n`);
    return;
  }
  const dir = dirArg ?? mkdtempSync(join(tmpdir(), 'execgate-bench-audit-'));
  console.log(`node ${process.version}, ${cpus().length} CPUs, ${count} records in ${dir}`);
  try {
    for (const name of ['write', 'verify', 'search', 'stats', 'report']) {
      const child = spawnSync(process.execPath, [__filename, String(count), dir, name], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
      if (child.status !== 0) throw new Error(`${name} failed: ${child.stderr}`);
      const result = JSON.parse(child.stdout);
      if (name === 'write') {
        const { listAuditFiles } = require(join(dist, 'audit', 'files.js'));
        const files = listAuditFiles(join(dir, 'audit.log'), existsSync);
        result.files = files.length;
        result.mib = Math.round(files.reduce((sum, file) => sum + statSync(file).size, 0) / 1048576);
      }
      console.log(JSON.stringify(result));
    }
  } finally {
    if (dirArg === undefined) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
