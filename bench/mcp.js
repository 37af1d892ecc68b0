'use strict';
/*
 * Figure 7: latency of one MCP `bash` tool call over stdio, end to end: the official SDK client
 * sends tools/call, `execgate mcp` runs `true` through its gateway (policy, environment, spawn,
 * audit, sentinel), and the result comes back; against gateway.exec({ command: 'true' }) in
 * this process (the cost without MCP and stdio). Calls alternate. Two pairs: sandbox off
 * (`sandbox.mode: off` for both the server and the in-process gateway) and sandbox on (the
 * default policy for both), where the platform has the sandbox.
 *
 *   npm run build && node bench/mcp.js [--quick]
 */
const { execFileSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { mkdirSync, readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { DIST, benchEnv, interleave, percentile, readOwnCpu, row, runFigure } = require('./lib');

/** CPU time (ms, user + system, all threads) of one process, from /proc; undefined off Linux. */
let tickMs;
function processCpu(pid) {
  try {
    tickMs ??= 1000 / (Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100);
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * tickMs;
  } catch {
    return undefined;
  }
}

// A fixed seed: the same orders in every run of the figure.
let seed = 0x9e3779b9;
function random() {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 0x100000000;
}

/** interleave() one iteration at a time, the variants in an order drawn anew for each (Fisher-Yates). */
async function shuffled(variants, { iterations, warmup, before, after }) {
  const names = Object.keys(variants);
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < warmup + iterations; i++) {
    const order = [...names];
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [order[k], order[j]] = [order[j], order[k]];
    }
    const kept = i >= warmup;
    const one = await interleave(Object.fromEntries(order.map((name) => [name, variants[name]])), {
      iterations: 1,
      before,
      after: after && ((name) => after(name, kept)),
    });
    if (kept) for (const name of names) samples[name].push(...one[name]);
  }
  return samples;
}

async function run({ quick, baseline, log }) {
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { home, env, cleanup } = benchEnv('execgate-bench-mcp-');
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const connect = async (serverEnv, workdir, dist = DIST) => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(dist, 'cli', 'main.js'), 'mcp', '--workdir', workdir],
      env: { ...serverEnv, PATH: `${dirname(process.execPath)}:/usr/bin:/bin` },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'execgate-bench', version: '1' });
    await client.connect(transport);
    await client.listTools();
    client.serverPid = transport.pid;
    return client;
  };
  const call = (client) => async () => {
    const result = await client.callTool({ name: 'bash', arguments: { command: 'true' } });
    if (result.isError || result.structuredContent.exit_code !== 0) throw new Error(`call failed: ${JSON.stringify(result)}`);
  };
  // Sandbox off: the policy file benchEnv names (EXECGATE_POLICY).
  const client = await connect({ ...env, EXECGATE_HOME: join(home, 'mcp') }, home);
  const gateway = createGateway({ policy: require('./lib').unsandboxedPolicy(), home: join(home, 'direct'), env });
  // Sandbox on: the default policy, a workspace of its own (the state directories lie outside it).
  const sandbox = checkPlatform().ok;
  const work = join(home, 'work');
  mkdirSync(work);
  const { EXECGATE_POLICY: _policy, ...defaultEnv } = env;
  const sandboxedClient = sandbox ? await connect({ ...defaultEnv, EXECGATE_HOME: join(home, 'mcp-sandboxed') }, work) : undefined;
  const sandboxedGateway = sandbox ? createGateway({ policy: { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' } }, home: join(home, 'direct-sandboxed'), env: defaultEnv, cwd: work }) : undefined;
  // --baseline=DIR: another built tree's server, sandbox off, interleaved with these.
  const baseClient = baseline ? await connect({ ...env, EXECGATE_HOME: join(home, 'mcp-baseline') }, home, baseline) : undefined;
  // Sandbox off and sandbox on are measured apart, each pair in an order drawn anew every
  // iteration. In one rotation of all five, each variant always came right after the same other
  // one, and the MCP call came after the sandboxed gateway.exec, whose next warm sandbox is set up
  // after the run, on the same two cores: the MCP call paid for it (the same server read 1.12x and
  // 1.18x the baseline tree's, the call right after it, with both trees alike).
  const unsandboxed = {
    mcp: call(client),
    ...(baseClient ? { mcpBaseline: call(baseClient) } : {}),
    direct: () => gateway.exec({ command: 'true' }),
  };
  const sandboxed = sandbox ? {
    mcpSandboxed: call(sandboxedClient),
    directSandboxed: () => sandboxedGateway.exec({ command: 'true' }),
  } : undefined;
  const iterations = quick ? 10 : 300;
  log(`${iterations} interleaved calls of each, sandbox off then sandbox on, in an order drawn each iteration`);
  // CPU per call, sandbox off: the server process's own (its runs' bash not counted, nor a spawn
  // helper it may start once its resident set passes the spawner's threshold) against this
  // process's for gateway.exec (its bash not counted either). What the server spends beyond the
  // in-process call is its own work: the protocol, the bash tool's sentinel and result, the pipes.
  const cpuOf = { mcp: () => processCpu(client.serverPid), direct: readOwnCpu };
  const cpu = { mcp: 0, direct: 0 };
  let cpuStarted;
  const before = (name) => { cpuStarted = cpuOf[name]?.(); };
  const after = (name, counted) => {
    if (!counted || cpuStarted === undefined) return;
    const now = cpuOf[name]();
    if (now !== undefined) cpu[name] += now - cpuStarted;
  };
  let samples;
  // The first call of a session: a fresh `execgate mcp` each time (connected and its tools
  // listed, as a client does before calling), its first `bash` call and the one after it; with
  // --baseline, that tree's server alternating with this one's. Sandbox off.
  const fresh = { first: [], second: [], baseFirst: [], baseSecond: [] };
  const servers = quick ? 2 : 12;
  try {
    samples = {
      ...await shuffled(unsandboxed, { iterations, warmup: quick ? 2 : 20, before, after }),
      ...(sandboxed ? await shuffled(sandboxed, { iterations, warmup: quick ? 2 : 20 }) : {}),
    };
    log(`${servers} fresh servers${baseline ? ' of each tree, alternating' : ''}: the first call of a session`);
    for (let i = 0; i < servers; i++) {
      for (const [dist, into] of baseline ? [[DIST, 'first'], [baseline, 'baseFirst']] : [[DIST, 'first']]) {
        const freshClient = await connect({ ...env, EXECGATE_HOME: join(home, `fresh-${into}-${i}`) }, home, dist);
        try {
          for (const at of [into, into === 'first' ? 'second' : 'baseSecond']) {
            const started = performance.now();
            await call(freshClient)();
            fresh[at].push(performance.now() - started);
          }
        } finally {
          await freshClient.close();
        }
      }
    }
  } finally {
    await client.close();
    await sandboxedClient?.close();
    await baseClient?.close();
    await gateway.close();
    await sandboxedGateway?.close();
    cleanup();
  }
  const direct = { name: 'gateway.exec', samples: samples.direct };
  return {
    rows: [
      row(7, 'gateway.exec({ command: "true" }), in process, sandbox off', samples.direct),
      row(7, 'MCP `bash` tool call over stdio (SDK client -> execgate mcp), sandbox off', samples.mcp, { of: direct, goal: 'mcp-call' }),
      ...(baseClient ? [
        row(7, 'baseline tree: MCP `bash` tool call, sandbox off', samples.mcpBaseline, { of: direct }),
        row(7, 'this tree against the baseline: MCP call, sandbox off', samples.mcp, { of: { name: 'baseline tree', samples: samples.mcpBaseline } }),
      ] : []),
      row(7, 'first `bash` call of a fresh `execgate mcp` session, sandbox off', fresh.first),
      row(7, '  the call after it', fresh.second, { of: { name: 'first call', samples: fresh.first } }),
      ...(baseline ? [
        row(7, 'baseline tree: first `bash` call of a fresh session', fresh.baseFirst),
        row(7, 'this tree against the baseline: first call of a session', fresh.first, { of: { name: 'baseline tree', samples: fresh.baseFirst } }),
      ] : []),
      ...(sandbox ? [
        row(7, 'gateway.exec({ command: "true" }), in process, sandbox on (default policy)', samples.directSandboxed),
        row(7, 'MCP `bash` tool call over stdio, sandbox on (default policy)', samples.mcpSandboxed, { of: { name: 'gateway.exec, sandbox on', samples: samples.directSandboxed }, target: 1.3 }),
      ] : []),
    ],
    notes: [
      `MCP call p90 ${percentile(samples.mcp, 90).toFixed(2)} ms, p99 ${percentile(samples.mcp, 99).toFixed(2)} ms.`,
      ...(processCpu(process.pid) !== undefined ? [
        `CPU per call, sandbox off: the MCP server process ${(cpu.mcp / iterations).toFixed(2)} ms, gateway.exec in this process ${(cpu.direct / iterations).toFixed(2)} ms; ` +
        `the server's own work beyond the run about ${((cpu.mcp - cpu.direct) / iterations).toFixed(2)} ms a call (/proc clock ticks, summed over the ${iterations} calls).`,
      ] : []),
    ],
  };
}

const figure = { id: 7, title: 'MCP tool-call latency', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
