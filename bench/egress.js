'use strict';
/*
 * Figure 8: the egress proxy. The same loopback HTTP request made directly and through the proxy
 * (a plain-HTTP proxy request over the run's Unix socket, the way the in-sandbox bridge forwards
 * it), for a 1 KiB and a 10 MiB response body; plus the proxy with a secret bound to the host, so
 * that the response goes through the redactor on its way back. Variants interleave.
 *
 *   npm run build && node bench/egress.js [--quick]
 */
const { spawn } = require('node:child_process');
const { createServer, request } = require('node:http');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { DIST, interleave, row, runFigure } = require('./lib');

const PROXY_PROCESS = `
const [dist, dir, port] = process.argv.slice(1);
const { EgressProxy, normalizeNetworkPolicy, parseHostPatterns, createSentinel } = require(dist + '/egress');
(async () => {
  const proxy = new EgressProxy({ runtimeDir: dir, resolver: async () => ['203.0.113.10'], dial: () => ({ host: '127.0.0.1', port: Number(port) }) });
  const network = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bench.test'] });
  const plain = await proxy.openRun({ runId: 'plain', network });
  const value = 'bench-secret-value-0123456789abcdef';
  const bound = await proxy.openRun({ runId: 'bound', network, injections: [{ ref: 'secret:bench', value, sentinel: createSentinel(value), hosts: parseHostPatterns(['bench.test'], 'hosts') }] });
  process.stdout.write(JSON.stringify({ plain: plain.socketPath, bound: bound.socketPath }) + '\\n');
  process.stdin.resume();
  process.stdin.on('end', () => proxy.close().then(() => process.exit(0)));
})();
`;

function fetchBody(options) {
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      let bytes = 0;
      res.on('data', (chunk) => { bytes += chunk.length; });
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

async function run({ quick, log }) {
  const bodies = { '1 KiB': Buffer.alloc(1024, 'a'), '10 MiB': Buffer.alloc(10 * 1024 * 1024, 'a') };
  const server = createServer((req, res) => {
    const body = bodies[decodeURIComponent(req.url.slice(1))];
    res.writeHead(200, { 'content-length': body.length });
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  // The proxy runs in a process of its own, as it does in the gateway: client, server and proxy
  // then do not share one event loop (which would charge the proxy for the client's work).
  const dir = mkdtempSync(join(tmpdir(), 'execgate-bench-egress-'));
  const child = spawn(process.execPath, ['-e', PROXY_PROCESS, DIST, dir, String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const sockets = await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(JSON.parse(text));
    });
    child.once('exit', (code) => reject(new Error(`the proxy process exited with ${code}`)));
  });
  const plain = { socketPath: sockets.plain };
  const bound = { socketPath: sockets.bound };
  const direct = (name) => fetchBody({ host: '127.0.0.1', port, path: `/${encodeURIComponent(name)}`, agent: false });
  const via = (egressRun, name) => fetchBody({ socketPath: egressRun.socketPath, path: `http://bench.test/${encodeURIComponent(name)}`, headers: { host: 'bench.test' } });

  const rows = [];
  for (const name of Object.keys(bodies)) {
    const large = name === '10 MiB';
    const iterations = quick ? 5 : large ? 30 : 300;
    log(`${name}: ${iterations} interleaved requests per variant`);
    const samples = await interleave({
      direct: () => direct(name),
      proxy: () => via(plain, name),
      bound: () => via(bound, name),
    }, { iterations, warmup: quick ? 1 : 5 });
    if (!large) {
      rows.push(row(8, `${name}: direct request (ms)`, samples.direct));
      rows.push(row(8, `${name}: through the proxy (ms)`, samples.proxy, { of: { name: 'direct', samples: samples.direct } }));
      rows.push(row(8, `${name}: through the proxy, secret bound: response redacted (ms)`, samples.bound, { of: { name: 'direct', samples: samples.direct } }));
    } else {
      const rate = (list) => list.map((ms) => bodies[name].length / 1e6 / (ms / 1000));
      rows.push(row(8, `${name}: direct (MB/s)`, rate(samples.direct), { unit: 'MB/s' }));
      rows.push(row(8, `${name}: through the proxy (MB/s)`, rate(samples.proxy), { unit: 'MB/s', of: { name: 'direct', samples: rate(samples.direct) }, target: 0.5, higherIsBetter: true }));
      rows.push(row(8, `${name}: through the proxy, secret bound: response redacted (MB/s)`, rate(samples.bound), { unit: 'MB/s', of: { name: 'direct', samples: rate(samples.direct) } }));
    }
  }
  child.stdin.end();
  await new Promise((resolve) => child.once('exit', resolve));
  server.close();
  rmSync(dir, { recursive: true, force: true });
  rows.push(...await runOverhead({ quick, log }));
  return {
    rows,
    notes: [
      'Loopback HTTP, a new connection per request in every variant; the proxy runs in its own process and is reached over its per-run Unix socket, as the in-sandbox bridge reaches it.',
      'A bound secret makes the proxy redact the response (streaming matcher over every byte), which unbound hosts skip.',
    ],
  };
}

/*
 * What a run pays for its egress before and after the command: registering with the proxy under
 * its own credentials (the shared socket, what gateway runs do) against opening a socket of its
 * own (a directory, links, a listening Unix socket), each followed by close.
 */
async function runOverhead({ quick, log }) {
  const { EgressProxy, normalizeNetworkPolicy } = require(join(DIST, 'egress'));
  const dir = mkdtempSync(join(tmpdir(), 'execgate-bench-egress-runs-'));
  const proxy = new EgressProxy({ runtimeDir: dir });
  const network = normalizeNetworkPolicy({ mode: 'open' });
  let n = 0;
  const credentials = () => ({ username: `run-${n}`, password: `pw-${n++}` });
  const iterations = quick ? 20 : 500;
  log(`run registration: ${iterations} interleaved open + close per variant`);
  const samples = await interleave({
    shared: async () => (await proxy.openRun({ runId: `s${n}`, network, credentials: credentials(), shared: true })).close(),
    own: async () => (await proxy.openRun({ runId: `o${n}`, network, credentials: credentials() })).close(),
  }, { iterations, warmup: quick ? 2 : 20 });
  await proxy.close();
  rmSync(dir, { recursive: true, force: true });
  return [
    row(8, 'a run\'s proxy registration, own socket: open + close (ms)', samples.own),
    row(8, 'a run\'s proxy registration, shared socket (gateway runs): open + close (ms)', samples.shared, { of: { name: 'own socket', samples: samples.own } }),
  ];
}

const figure = { id: 8, title: 'Egress proxy: a request through the proxy against the same request direct', run };
module.exports = figure;
if (require.main === module) runFigure(figure);
