'use strict';
/*
 * Figure 6: CLI cold start. `execgate run -- true` (a whole run: load, gateway, policy decision,
 * audit records, spawn, exit) against `node -e 0` (Node's own start-up) and `sh -c true`,
 * interleaved, each timed from spawn to exit.
 *
 *   npm run build && node bench/cli-start.js [--quick]
 */
const { spawn } = require('node:child_process');
const { join } = require('node:path');
const { DIST, benchEnv, interleave, row, runFigure } = require('./lib');

function time(file, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${file} ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

async function run({ quick, log }) {
  const { env, cleanup } = benchEnv('execgate-bench-cli-');
  // The CLI as users get it: the embedded default policy (sandboxed where the platform allows).
  delete env.EXECGATE_POLICY;
  const cli = join(DIST, 'cli', 'main.js');
  const variants = {
    cli: () => time(process.execPath, [cli, 'run', '--', 'true'], env),
    node: () => time(process.execPath, ['-e', '0'], env),
    sh: () => time('/bin/sh', ['-c', 'true'], env),
  };
  const iterations = quick ? 3 : 60;
  log(`${iterations} interleaved iterations`);
  const samples = await interleave(variants, { iterations, warmup: quick ? 1 : 5 });
  cleanup();
  const node = { name: 'node -e 0', samples: samples.node };
  return {
    rows: [
      row(6, 'sh -c true', samples.sh),
      row(6, 'node -e 0', samples.node),
      row(6, 'execgate run -- true (node dist/cli/main.js)', samples.cli, { of: node, target: 3 }),
    ],
    notes: ['`execgate run` includes the audit records of the run (the default policy fdatasyncs the one before the spawn).'],
  };
}

const figure = { id: 6, title: 'CLI cold start', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
