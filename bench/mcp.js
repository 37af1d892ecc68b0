'use strict';
/*
 * Figure 7: latency of one MCP `bash` tool call over stdio, end to end: the official SDK client
 * sends tools/call, `execgate mcp` runs `true` through its gateway (policy, environment, spawn,
 * audit, sentinel), and the result comes back; against gateway.exec({ command: 'true' }) in
 * this process (the cost without MCP and stdio). Calls of the two alternate.
 *
 *   npm run build && node bench/mcp.js [--quick]
 */
const { dirname, join } = require('node:path');
const { DIST, benchEnv, interleave, percentile, row, runFigure } = require('./lib');

async function run({ quick, log }) {
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { home, env, cleanup } = benchEnv('execgate-bench-mcp-');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(DIST, 'cli', 'main.js'), 'mcp', '--workdir', home],
    env: { ...env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, EXECGATE_HOME: join(home, 'mcp') },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'execgate-bench', version: '1' });
  await client.connect(transport);
  await client.listTools();
  const gateway = createGateway({ policy: require('./lib').unsandboxedPolicy(), home: join(home, 'direct'), env });
  const variants = {
    mcp: async () => {
      const result = await client.callTool({ name: 'bash', arguments: { command: 'true' } });
      if (result.isError || result.structuredContent.exit_code !== 0) throw new Error(`call failed: ${JSON.stringify(result)}`);
    },
    direct: () => gateway.exec({ command: 'true' }),
  };
  const iterations = quick ? 10 : 300;
  log(`${iterations} interleaved calls of each`);
  let samples;
  try {
    samples = await interleave(variants, { iterations, warmup: quick ? 2 : 20 });
  } finally {
    await client.close();
    await gateway.close();
    cleanup();
  }
  const direct = { name: 'gateway.exec', samples: samples.direct };
  return {
    rows: [
      row(7, 'gateway.exec({ command: "true" }), in process', samples.direct),
      row(7, 'MCP `bash` tool call over stdio (SDK client -> execgate mcp)', samples.mcp, { of: direct }),
    ],
    notes: [`MCP call p90 ${percentile(samples.mcp, 90).toFixed(2)} ms, p99 ${percentile(samples.mcp, 99).toFixed(2)} ms.`],
  };
}

const figure = { id: 7, title: 'MCP tool-call latency', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
