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
const { mkdirSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { DIST, benchEnv, interleave, percentile, row, runFigure } = require('./lib');

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
  const variants = {
    mcp: call(client),
    ...(baseClient ? { mcpBaseline: call(baseClient) } : {}),
    direct: () => gateway.exec({ command: 'true' }),
    ...(sandbox ? {
      mcpSandboxed: call(sandboxedClient),
      directSandboxed: () => sandboxedGateway.exec({ command: 'true' }),
    } : {}),
  };
  const iterations = quick ? 10 : 300;
  log(`${iterations} interleaved calls of each`);
  let samples;
  try {
    samples = await interleave(variants, { iterations, warmup: quick ? 2 : 20 });
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
      ...(sandbox ? [
        row(7, 'gateway.exec({ command: "true" }), in process, sandbox on (default policy)', samples.directSandboxed),
        row(7, 'MCP `bash` tool call over stdio, sandbox on (default policy)', samples.mcpSandboxed, { of: { name: 'gateway.exec, sandbox on', samples: samples.directSandboxed }, target: 1.3 }),
      ] : []),
    ],
    notes: [`MCP call p90 ${percentile(samples.mcp, 90).toFixed(2)} ms, p99 ${percentile(samples.mcp, 99).toFixed(2)} ms.`],
  };
}

const figure = { id: 7, title: 'MCP tool-call latency', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
