'use strict';
/*
 * Figure 12: audit records written per second, with the log's defaults (the cross-process lock
 * taken for each record, `fsync: before-spawn`), by one writer and by several processes writing
 * to one log at once. Each "run" writes the three records a run writes (exec.request,
 * exec.started with its fdatasync, exec.finished). Each sample is a fresh log and fresh writer
 * processes; this tree and the --baseline tree alternate.
 *
 *   npm run build && node bench/audit-write.js [--quick] [--baseline=DIR]
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { DIST, row, runFigure } = require('./lib');

const WRITER = `
  const [dist, dir, runs] = process.argv.slice(1);
  const { AuditLog } = require(dist + '/audit/log.js');
  const log = new AuditLog({ home: dir, env: { EXECGATE_AUDIT_KEY: Buffer.alloc(32, 7).toString('base64') } });
  for (let run = 0; run < Number(runs); run++) {
    const runId = 'run_' + process.pid + '_' + run;
    log.write('exec.request', { runId, actor: 'bench', command: 'true', cwd: '/', mode: 'sync', timeout: 30000 });
    log.write('exec.started', { runId, actor: 'bench', command: 'true', cwd: '/', mode: 'sync', refs: [] });
    log.write('exec.finished', { runId, actor: 'bench', command: 'true', exitCode: 0, signal: null, durationMs: 1 });
  }
  log.close();
`;

function writers(dist, count, runsEach) {
  const dir = mkdtempSync(join(tmpdir(), 'execgate-bench-audit-write-'));
  const started = process.hrtime.bigint();
  const children = Array.from({ length: count }, () => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', WRITER, dist, dir, String(runsEach)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exited ${code}`))));
  }));
  return Promise.all(children).then(() => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    rmSync(dir, { recursive: true, force: true });
    return (count * runsEach * 3) / seconds;
  });
}

async function run({ quick, baseline, log }) {
  const trees = { this: DIST, ...(baseline ? { baseline } : {}) };
  const shapes = [['one writer', 1, quick ? 100 : 1000], ['8 writers', 8, quick ? 25 : 250]];
  const iterations = quick ? 1 : 5;
  log(`${iterations} samples per tree and shape${baseline ? `, against ${baseline}` : ''}`);
  const samples = {};
  for (let i = 0; i < iterations; i++) {
    for (const [shape, count, runsEach] of shapes) {
      const names = Object.keys(trees);
      for (let k = 0; k < names.length; k++) {
        const tree = names[(i + k) % names.length];
        const key = `${tree}|${shape}`;
        (samples[key] ??= []).push(await writers(trees[tree], count, runsEach));
      }
    }
  }
  const rows = [];
  for (const [shape] of shapes) {
    const base = samples[`baseline|${shape}`];
    if (base) rows.push(row(12, `baseline tree: ${shape}`, base, { unit: 'records/s' }));
    rows.push(row(12, `${shape} (lock + fsync before-spawn)`, samples[`this|${shape}`], {
      unit: 'records/s',
      ...(base ? { of: { name: 'baseline', samples: base } } : {}),
    }));
  }
  return { sandbox: 'no run (the audit log alone)', rows, notes: ['Records per second, higher is better; 3 records per run, the second fdatasynced (the default `fsync: before-spawn`).'] };
}

const figure = { id: 12, title: 'Audit records per second (one and many writers)', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
