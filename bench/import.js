'use strict';
/*
 * Figure 13: the front door. `require('execgate')` (the core: the gateway, policy loading,
 * errors) in a fresh Node, against `node -e 0`, and with --baseline=DIR against the same
 * require of another built tree; the modules each loads are counted once (the add-ons, the MCP
 * SDK, openai, node-pty, the keyring and libsodium must not be among them).
 *
 *   npm run build && node bench/import.js [--quick] [--baseline=DIR]
 */
const { spawn, spawnSync } = require('node:child_process');
const { join } = require('node:path');
const { DIST, benchEnv, interleave, row, runFigure } = require('./lib');

function time(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`node ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

function countModules(entry, env) {
  const script = `require(${JSON.stringify(entry)}); const files = Object.keys(require.cache);` +
    'process.stdout.write(JSON.stringify({ modules: files.length - 1, packages: [...new Set(files.map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean))] }))';
  const result = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`counting the modules of ${entry} failed: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

async function run({ quick, baseline, log }) {
  const { env, cleanup } = benchEnv('execgate-bench-import-');
  const entry = join(DIST, 'index.js');
  const variants = {
    node: () => time(['-e', '0'], env),
    execgate: () => time(['-e', `require(${JSON.stringify(entry)})`], env),
  };
  if (baseline) variants.baseline = () => time(['-e', `require(${JSON.stringify(join(baseline, 'index.js'))})`], env);
  const iterations = quick ? 3 : 60;
  log(`${iterations} interleaved iterations`);
  const samples = await interleave(variants, { iterations, warmup: quick ? 1 : 5 });
  const ours = countModules(entry, env);
  const notes = [`require('execgate') loads ${ours.modules} modules of execgate and its dependencies (packages: ${ours.packages.join(', ') || 'none'}).`];
  const node = { name: 'node -e 0', samples: samples.node };
  const rows = [
    row(13, 'node -e 0', samples.node),
    row(13, "node -e \"require('execgate')\"", samples.execgate, { of: node }),
  ];
  if (baseline) {
    const base = countModules(join(baseline, 'index.js'), env);
    notes.push(`The baseline's require loads ${base.modules} modules (packages: ${base.packages.join(', ') || 'none'}).`);
    rows.push(row(13, "node -e \"require('execgate')\", baseline tree", samples.baseline, { of: node }));
    rows.push(row(13, "require('execgate') against the baseline tree's", samples.execgate, { of: { name: 'the baseline tree', samples: samples.baseline } }));
  }
  cleanup();
  return { rows, notes };
}

const figure = { id: 13, title: "Front door: require('execgate')", run };
module.exports = figure;
if (require.main === module) runFigure(figure);
