'use strict';
// Runs at the end of the build (postbuild.js): the CLI's code cache (src/cli/code-cache.ts).
// Runs the built CLI as a user would, `execgate run -- true` with the embedded default policy and
// with a policy file (which loads the YAML reader), and an `execgate mcp` session, each in a clean
// environment with an empty HOME, and keeps what V8 compiled in each run in dist/cli/code-cache.bin. A run that cannot be made
// here (no sandbox, say) still leaves the modules it loaded; no cache at all only makes the CLI
// compile from source, as without this step.
//
//   node scripts/code-cache.js              (as a preload: node -r scripts/code-cache.js, recording)
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist');
const OUT_VARIABLE = 'EXECGATE_CODE_CACHE_OUT';

function writeCodeCache() {
  const { CODE_CACHE_FILE, MCP_CODE_CACHE_FILE, mergeCodeCaches } = require(path.join(dist, 'cli', 'code-cache.js'));
  fs.rmSync(CODE_CACHE_FILE, { force: true });
  fs.rmSync(MCP_CODE_CACHE_FILE, { force: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-code-cache-'));
  try {
    const home = path.join(root, 'home');
    const work = path.join(root, 'work');
    fs.mkdirSync(home);
    fs.mkdirSync(work);
    const policy = path.join(root, 'network-none.yaml');
    fs.writeFileSync(policy, 'version: 1\nsandbox:\n  network: none\n');
    const recorded = {};
    // `execgate mcp` as a client starts it: initialize, the tool list, one `bash` call, then the
    // end of its input (the server ends with it). Its modules (the MCP SDK, zod) are a server's
    // start, which a client waits for before its first call.
    const session = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'execgate-build', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'bash', arguments: { command: 'true' } } },
    ].map((message) => `${JSON.stringify(message)}\n`).join('');
    const runs = [
      [['run', '--', 'true']],
      [['run', '--policy', policy, '--', 'true']],
      [['mcp', '--workdir', work], session, 'mcp'],
    ];
    for (const [index, [argv, input, file = 'run']] of runs.entries()) {
      const out = path.join(root, `cache-${index}.bin`);
      const result = spawnSync(process.execPath, ['-r', __filename, path.join(dist, 'cli', 'main.js'), ...argv], {
        cwd: work,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', EXECGATE_HOME: path.join(home, '.execgate'), EXECGATE_KEYRING: 'off', [OUT_VARIABLE]: out },
        ...(input === undefined ? { stdio: ['ignore', 'ignore', 'pipe'] } : { input, stdio: ['pipe', 'ignore', 'pipe'] }),
        timeout: 60_000,
      });
      if (result.status !== 0) process.stderr.write(`code cache: \`execgate ${argv.join(' ')}\` ended with ${result.status ?? result.signal}: ${String(result.stderr).trim()}\n`);
      if (fs.existsSync(out)) (recorded[file] ??= []).push(out);
    }
    for (const [file, target] of [['run', CODE_CACHE_FILE], ['mcp', MCP_CODE_CACHE_FILE]]) {
      if (!recorded[file]) continue;
      const count = mergeCodeCaches(recorded[file], target);
      process.stdout.write(`code cache${file === 'mcp' ? ' (execgate mcp)' : ''}: ${count} modules, ${fs.statSync(target).size} bytes\n`);
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

module.exports = { writeCodeCache };

if (require.main === module) {
  writeCodeCache();
} else if (process.env[OUT_VARIABLE]) {
  // Preloaded into a recording run: every module from here on is compiled through V8's API.
  const out = process.env[OUT_VARIABLE];
  delete process.env[OUT_VARIABLE];
  require(path.join(dist, 'cli', 'code-cache.js')).recordCodeCache(out);
}
