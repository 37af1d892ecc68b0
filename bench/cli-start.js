'use strict';
/*
 * Figure 6: CLI start. `execgate run -- true` as a user types it (a whole run: load, gateway,
 * policy, decision, audit records, sandbox, spawn, exit) against `node -e 0` (Node's own start),
 * each in a clean environment (`env -i PATH=/usr/bin:/bin HOME=<an empty directory>`: an inherited
 * NODE_EXTRA_CA_CERTS alone adds tens of milliseconds of CPU to every Node start and would hide
 * execgate's own cost), interleaved, wall time and CPU time (user + system of the command and
 * every process it waited for). Two policies: the embedded default (sandboxed where bubblewrap
 * runs, network open through the egress proxy) and a policy file that says `network: none`.
 * The goal, from the README's table: at most 2x `node -e 0`, wall and CPU, for both.
 *
 *   npm run build && node bench/cli-start.js [--quick] [--baseline=DIR]
 *
 * Each command is timed by bash's `time` (getrusage of the children bash waited for, in ms):
 * what execgate leaves running after it exits (the watchdog that outlives a run, the shared
 * network namespace's holder) is not in its CPU figure; the notes say what the sandbox was.
 */
const { spawn } = require('node:child_process');
const { mkdirSync, mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { DIST, interleave, row, runFigure } = require('./lib');

const GOAL = 2;

/** Runs `argv` under bash's `time` in `cwd` with `env`; resolves { wall, cpu } in ms. */
function timed(argv, env, cwd) {
  const script = 'TIMEFORMAT="%3R %3U %3S"; time "$@" >/dev/null 2>"$EXECGATE_BENCH_ERR"';
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', script, 'bench', ...argv], { cwd, env: { ...env, EXECGATE_BENCH_ERR: join(cwd, '..', 'stderr') }, stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    child.stderr.on('data', (chunk) => { said += chunk; });
    child.once('error', reject);
    child.once('close', (code) => {
      const match = /(\d+\.\d+) (\d+\.\d+) (\d+\.\d+)\s*$/.exec(said);
      if (code !== 0 || !match) {
        reject(new Error(`${argv.join(' ')} failed (status ${code}): ${said}`));
        return;
      }
      resolve({ wall: Number(match[1]) * 1000, cpu: (Number(match[2]) + Number(match[3])) * 1000 });
    });
  });
}

async function run({ quick, baseline, log }) {
  const root = mkdtempSync(join(tmpdir(), 'execgate-bench-cli-'));
  const home = join(root, 'home');
  const work = join(root, 'work');
  mkdirSync(home);
  mkdirSync(work);
  const noNetwork = join(root, 'network-none.yaml');
  writeFileSync(noNetwork, 'version: 1\nsandbox:\n  network: none\n');
  // The clean environment the ratio means: the variables the CLI's own bin line would need, nothing else.
  const env = { PATH: '/usr/bin:/bin', HOME: home };
  // bash's own environment must not leak into the command: the command runs under `env -i`.
  const clean = (...argv) => ['/usr/bin/env', '-i', `PATH=${env.PATH}`, `HOME=${home}`, ...argv];
  const trees = { '': join(DIST, 'cli', 'main.js') };
  if (baseline) trees[', baseline tree'] = join(baseline, 'cli', 'main.js');
  const variants = { node: () => timed(clean(process.execPath, '-e', '0'), env, work) };
  for (const [suffix, cli] of Object.entries(trees)) {
    variants[`default${suffix}`] = () => timed(clean(process.execPath, cli, 'run', '--', 'true'), env, work);
    variants[`none${suffix}`] = () => timed(clean(process.execPath, cli, 'run', '--policy', noNetwork, '--', 'true'), env, work);
  }
  const iterations = quick ? 3 : 40;
  log(`${iterations} interleaved iterations of ${Object.keys(variants).length} commands`);
  const wall = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  const cpu = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  let last;
  const runners = Object.fromEntries(Object.entries(variants).map(([name, fn]) => [name, async () => { last = await fn(); }]));
  await interleave(runners, {
    iterations,
    warmup: quick ? 1 : 3,
    after: (name, kept) => {
      if (!kept) return;
      wall[name].push(last.wall);
      cpu[name].push(last.cpu);
    },
  });
  const platform = require(join(DIST, 'sandbox', 'detect.js')).checkPlatform();
  rmSync(root, { recursive: true, force: true });
  const rows = [
    row(6, 'node -e 0, wall', wall.node),
    row(6, 'node -e 0, CPU', cpu.node),
  ];
  for (const suffix of Object.keys(trees)) {
    for (const [key, what] of [['default', 'execgate run -- true (default policy)'], ['none', 'execgate run -- true (network: none)']]) {
      rows.push(row(6, `${what}${suffix}, wall`, wall[`${key}${suffix}`], { of: { name: 'node -e 0', samples: wall.node }, ...(suffix ? {} : key === 'default' ? { goal: 'cli-start' } : { target: GOAL }) }));
      rows.push(row(6, `${what}${suffix}, CPU`, cpu[`${key}${suffix}`], { of: { name: 'node -e 0', samples: cpu.node }, target: suffix ? undefined : GOAL }));
    }
  }
  if (baseline) {
    for (const [key, what] of [['default', 'default policy'], ['none', 'network: none']]) {
      rows.push(row(6, `${what}: this tree against the baseline, wall`, wall[key], { of: { name: 'the baseline tree', samples: wall[`${key}, baseline tree`] } }));
      rows.push(row(6, `${what}: this tree against the baseline, CPU`, cpu[key], { of: { name: 'the baseline tree', samples: cpu[`${key}, baseline tree`] } }));
    }
  }
  return {
    rows,
    notes: [
      'Clean environment: env -i PATH=/usr/bin:/bin HOME=<empty directory>; CPU is user + system of the command and the processes it waited for (bash `time`).',
      'The sandbox is on for both policies where bubblewrap runs (the default policy is sandbox.mode: auto); the default policy also starts the egress proxy for the run.',
      platform.ok ? `bubblewrap runs here (${platform.helper}): both policies ran sandboxed.` : `No sandbox here (${platform.reason}): both policies ran unsandboxed.`,
    ],
  };
}

const figure = { id: 6, title: 'CLI start, clean environment', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
