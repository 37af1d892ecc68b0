'use strict';
/*
 * Figure 15: raw TCP egress (`sandbox.network.tcp`). One client program (Node: connect, read to
 * the end, report its own timings) reads 100 MiB from a server on this host's loopback twice per
 * repetition, interleaved: once direct (the client run on the host, unsandboxed, at
 * 127.0.0.1:PORT), once by name from inside a sandboxed gateway run (the name resolves to its
 * 127.77 address, the gateway's listener in the shared namespace accepts, traces the connection
 * to its run, decides, dials and relays). The client's own clock is the figure, not the run's:
 * process start and sandbox set-up are not in it. Also the connection's set-up: connect to the
 * first byte the server sent.
 *
 * The relay is a Node stream pipe of two sockets with 256 KiB buffers (egress/tunnel.ts
 * joinSockets, as the CONNECT tunnel): no process between, so each byte is copied once through
 * the gateway. The figure says what it costs.
 *
 *   npm run build && node bench/tcp.js [--quick]
 */
const { spawn } = require('node:child_process');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { DIST, benchEnv, interleave, row, runFigure } = require('./lib');

const SIZE = 100 * 1024 * 1024;

const SERVER = `
const net = require('net');
const size = Number(process.argv[1]);
const chunk = Buffer.alloc(1024 * 1024, 0x61);
const server = net.createServer({ highWaterMark: 256 * 1024 }, (socket) => {
  socket.on('error', () => socket.destroy());
  let left = size / chunk.length;
  const write = () => {
    while (left > 0) {
      left -= 1;
      if (!socket.write(chunk)) return void socket.once('drain', write);
    }
    socket.end();
  };
  write();
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

const CLIENT = `
const net = require('net');
const [host, port, size] = process.argv.slice(2);
const start = process.hrtime.bigint();
let first = 0n, got = 0;
const s = net.connect({ host, port: Number(port), highWaterMark: 256 * 1024 });
s.on('data', (c) => { if (got === 0) first = process.hrtime.bigint(); got += c.length; });
s.on('end', () => {
  const end = process.hrtime.bigint();
  if (got !== Number(size)) { console.error('short read: ' + got); process.exit(1); }
  console.log(JSON.stringify({ setupMs: Number(first - start) / 1e6, transferMs: Number(end - first) / 1e6 }));
});
s.on('error', (e) => { console.error(e.message); process.exit(1); });
`;

async function run({ quick, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { normalizeNetworkPolicy } = require(join(DIST, 'policy', 'egress-settings.js'));
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const platform = checkPlatform();
  if (!platform.ok) return { rows: [], notes: [`skipped: ${platform.reason}`] };
  const { home, env, cleanup } = benchEnv('execgate-bench-tcp-');
  // The server is a process of its own, as the client is: the gateway's relay (in this process)
  // then shares a core with neither.
  const server = spawn(process.execPath, ['-e', SERVER, String(SIZE)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    server.stdout.once('data', (c) => resolve(Number(String(c).trim())));
    server.once('exit', (code) => reject(new Error(`the server exited ${code}`)));
  });
  const work = join(home, 'work');
  mkdirSync(work);
  const client = join(work, 'client.js');
  writeFileSync(client, CLIENT);
  const policy = {
    ...DEFAULT_POLICY,
    sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' },
    network: normalizeNetworkPolicy({ mode: 'allowlist', tcp: [`bulk.test:${port}`] }),
  };
  const egress = {
    resolver: async (host) => (host === 'bulk.test' ? ['203.0.113.9'] : []),
    dial: (address, p) => (address === '203.0.113.9' ? { host: '127.0.0.1', port } : { host: address, port: p }),
  };
  const gateway = createGateway({ policy, home: join(home, 'state'), env, cwd: work, egress });
  const relayGateway = createGateway({ policy, home: join(home, 'state-relay'), env, cwd: work, egress: { ...egress, connectHandoff: false } });
  const direct = () => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [client, '127.0.0.1', String(port), String(SIZE)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`direct client exited ${code}`))));
  });
  const inRun = async (through) => {
    const result = await through.exec({ command: `'${process.execPath}' client.js bulk.test ${port} ${SIZE}`, cwd: work });
    if (result.exitCode !== 0) throw new Error(`sandboxed client failed: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  const named = () => inRun(gateway);
  const relayed = () => inRun(relayGateway);
  try {
    await named(); // the listeners, the supervisor and the warm sandbox, once
    await relayed();
    const reps = quick ? 3 : 8;
    log(`100 MiB x ${reps}, direct, by name (handed over) and by name relayed, interleaved`);
    const samples = { direct: [], named: [], relayed: [] };
    await interleave({
      direct: async () => samples.direct.push(await direct()),
      named: async () => samples.named.push(await named()),
      relayed: async () => samples.relayed.push(await relayed()),
    }, { iterations: reps });
    const mbps = (list) => list.map((s) => SIZE / 1e6 / (s.transferMs / 1000));
    return {
      rows: [
        row(15, '100 MiB raw TCP: the client direct at 127.0.0.1 (MB/s)', mbps(samples.direct), { unit: 'MB/s' }),
        row(15, '100 MiB raw TCP: the same client in a sandboxed run, by name, defaults (the connect handed over connected) (MB/s)', mbps(samples.named), { unit: 'MB/s', of: { name: 'direct', samples: mbps(samples.direct) }, goal: 'tcp-relay' }),
        row(15, '100 MiB raw TCP: the same, relayed by the gateway (connectHandoff: false) (MB/s)', mbps(samples.relayed), { unit: 'MB/s', of: { name: 'direct', samples: mbps(samples.direct) } }),
        row(15, 'raw TCP set-up: connect to first byte, direct (ms)', samples.direct.map((s) => s.setupMs)),
        row(15, 'raw TCP set-up: connect to first byte, by name, handed over (decision, dial outside, hand-over) (ms)', samples.named.map((s) => s.setupMs), { of: { name: 'direct', samples: samples.direct.map((s) => s.setupMs) } }),
        row(15, 'raw TCP set-up: connect to first byte, by name, relayed (attribution, decision, dial) (ms)', samples.relayed.map((s) => s.setupMs), { of: { name: 'direct', samples: samples.direct.map((s) => s.setupMs) } }),
      ],
      notes: ['The client\'s own clock (connect to first byte, first byte to end); process start and the sandbox are not in it.'],
    };
  } finally {
    await gateway.close();
    await relayGateway.close();
    server.kill();
    cleanup();
  }
}

const figure = { id: 15, title: 'Raw TCP egress: 100 MiB by name through the gateway against the same client direct', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
