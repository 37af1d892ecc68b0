'use strict';
/*
 * Latency of one MCP `bash` tool call over stdio, end to end: the official SDK client sends
 * tools/call, `execgate mcp` runs `true` through the gateway (policy, environment, spawn,
 * sentinel), and the result comes back. Prints the median and percentiles of N calls, next to
 * the same command through gateway.exec() in this process (the cost without MCP and stdio).
 *
 *   npm run build && node bench/mcp.js [calls]
 */
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const CALLS = Number(process.argv[2] || 200);
const WARMUP = 10;

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function main() {
  const home = mkdtempSync(join(tmpdir(), 'execgate-bench-mcp-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(__dirname, '..', 'dist', 'cli', 'main.js'), 'mcp', '--workdir', home],
    env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: home, EXECGATE_HOME: home, EXECGATE_KEYRING: 'off' },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  await client.listTools();
  const times = [];
  try {
    for (let i = 0; i < WARMUP + CALLS; i += 1) {
      const started = performance.now();
      const result = await client.callTool({ name: 'bash', arguments: { command: 'true' } });
      const elapsed = performance.now() - started;
      if (result.isError || result.structuredContent.exit_code !== 0) throw new Error(`call failed: ${JSON.stringify(result)}`);
      if (i >= WARMUP) times.push(elapsed);
    }
  } finally {
    await client.close();
    rmSync(home, { recursive: true, force: true });
  }
  report(`MCP bash \`true\` over stdio, ${CALLS} calls (after ${WARMUP} warm-up)`, times);
  report(`gateway.exec({ command: 'true' }) in-process, ${CALLS} calls`, await direct());
}

async function direct() {
  const { createGateway } = require('../dist/gateway');
  const home = mkdtempSync(join(tmpdir(), 'execgate-bench-direct-'));
  const gateway = createGateway({ home, env: { PATH: '/usr/bin:/bin', HOME: home, EXECGATE_KEYRING: 'off' } });
  const times = [];
  try {
    for (let i = 0; i < WARMUP + CALLS; i += 1) {
      const started = performance.now();
      await gateway.exec({ command: 'true' });
      if (i >= WARMUP) times.push(performance.now() - started);
    }
  } finally {
    await gateway.close();
    rmSync(home, { recursive: true, force: true });
  }
  return times;
}

function report(title, times) {
  times.sort((a, b) => a - b);
  const fmt = (ms) => `${ms.toFixed(2)} ms`;
  console.log(`${title}:`);
  console.log(`  median ${fmt(percentile(times, 50))}  p90 ${fmt(percentile(times, 90))}  p99 ${fmt(percentile(times, 99))}  min ${fmt(times[0])}  max ${fmt(times[times.length - 1])}`);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
