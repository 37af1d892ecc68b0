'use strict';
/*
 * Figure 11: what a file tool call costs when it crosses the sandbox. `read_file` of a small
 * file through a default tool registry whose gateway sandboxes its runs (the call goes to the
 * file server inside the sandbox: the plan made again, the server's mounts checked again, a
 * request and an answer over its pipe) against the same registry with the sandbox off (the tool
 * runs in this process), and against a bare `fs.promises.readFile` of the same file. Also the
 * first call's cost: starting the server (bubblewrap, then node) once.
 *
 *   npm run build && node bench/files.js [--quick]
 */
const { mkdirSync, writeFileSync } = require('node:fs');
const { readFile } = require('node:fs/promises');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { DIST, benchEnv, interleave, row, runFigure, unsandboxedPolicy } = require('./lib');

async function run({ quick, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { createDefaultToolRegistry } = require(join(DIST, 'tools', 'defaults.js'));
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const platform = checkPlatform();
  if (!platform.ok) return { rows: [], notes: [`skipped: ${platform.reason}`] };
  const { home, env, cleanup } = benchEnv('execgate-bench-files-');
  const work = join(home, 'work');
  mkdirSync(work);
  const file = join(work, 'notes.txt');
  writeFileSync(file, 'a line of notes\n'.repeat(64));
  const sandboxedPolicy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } };
  const sandboxedGateway = createGateway({ policy: sandboxedPolicy, home: join(home, 'state'), env, cwd: work });
  const plainGateway = createGateway({ policy: unsandboxedPolicy(), home: join(home, 'plain'), env, cwd: work });
  const sandboxed = createDefaultToolRegistry({ gateway: sandboxedGateway, workdir: work });
  const inProcess = createDefaultToolRegistry({ gateway: plainGateway, workdir: work });
  const check = (text) => {
    if (!text.startsWith('a line of notes')) throw new Error(`read_file failed: ${text.slice(0, 200)}`);
  };

  // The first call starts the server.
  const firstStarted = performance.now();
  check(await sandboxed.execute('read_file', { path: 'notes.txt' }));
  const first = performance.now() - firstStarted;

  const iterations = quick ? 20 : 500;
  log(`${iterations} interleaved iterations of 3 variants`);
  const samples = await interleave({
    sandboxed: async () => check(await sandboxed.execute('read_file', { path: 'notes.txt' })),
    inProcess: async () => check(await inProcess.execute('read_file', { path: 'notes.txt' })),
    readFile: async () => check(await readFile(file, 'utf8')),
  }, { iterations, warmup: quick ? 2 : 20 });
  await sandboxed.close();
  await inProcess.close();
  await sandboxedGateway.close();
  await plainGateway.close();
  cleanup();
  const here = { name: 'the tool in this process (sandbox off)', samples: samples.inProcess };
  return {
    sandbox: 'on and off (each row says)',
    rows: [
      row(11, 'fs.promises.readFile of the file', samples.readFile),
      row(11, 'read_file, sandbox off (in this process)', samples.inProcess, { of: { name: 'readFile', samples: samples.readFile } }),
      row(11, 'read_file, sandboxed (the file server inside the sandbox)', samples.sandboxed, { of: here }),
      row(11, 'first sandboxed call (starts the file server)', [first]),
    ],
    notes: [
      'Each sandboxed call plans the sandbox again (the paths of the plan stat-ed), checks the server\'s mount table against it, then sends the call over the server\'s stdin and reads the answer from its stdout.',
    ],
  };
}

const figure = { id: 11, title: 'File tools: a call inside the sandbox vs in the gateway\'s process', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
