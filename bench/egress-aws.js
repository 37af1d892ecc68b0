'use strict';
/*
 * Figure 16: what SigV4 re-signing costs at the egress proxy (`delivery: aws-sigv4`). The same
 * PUT through the same run's proxy socket, TLS intercepted with the gateway CA both ways:
 *
 *   - intercepted, a bearer token injected (the proxy's usual work on a bound host: read, place,
 *     scan, clean the response): the baseline;
 *   - signed with the run's placeholder AWS key and signed again by the proxy, `UNSIGNED-PAYLOAD`
 *     (what the CLI sends for S3 over HTTPS): the signature checked, the request signed again;
 *   - the same with an explicit SHA-256 payload hash: the body hashed as it streams too.
 *
 * A 1 KiB body gives the cost per request, a 16 MiB body the cost per MiB. Requests are signed
 * once before the timing (the client's signing is not the proxy's cost) and replayed: the proxy
 * checks and signs each one again. Upstream is a server in a process of its own; the proxy and the
 * client share this process, so the CPU rows (this process's user + system time per request) hold
 * the client's TLS as well, the same in every variant: the difference between rows is the proxy's.
 *
 *   npm run build && node bench/egress-aws.js [--quick]
 */
const { spawn } = require('node:child_process');
const { createHash } = require('node:crypto');
const { request } = require('node:http');
const { connect } = require('node:net');
const { connect: tlsConnect } = require('node:tls');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Hash } = require('@smithy/hash-node');
const { SignatureV4 } = require('@smithy/signature-v4');
const { DIST, interleave, row, runFigure, summarize } = require('./lib');

const TOKEN = 'bench-secret-value-0123456789abcdef';
const REAL = { accessKeyId: 'AKIABENCHREALKEY0001', secretAccessKey: 'bEnChReAlSeCrEtKeY0123456789abcdefGHIJKL' };
const SIZES = { '1 KiB': 1024, '16 MiB': 16 * 1024 * 1024 };

/** Upstream: HTTPS, reads the body, answers a small 200 (a certificate from a CA of its own). */
const SERVER_PROCESS = `
const { createEgressCa } = require(process.argv[1] + '/egress/ca');
const ca = createEgressCa({ keyBits: 2048 });
const server = require('https').createServer({ SNICallback: (name, cb) => cb(null, ca.getSecureContext(name)) }, (req, res) => {
  let bytes = 0;
  req.on('data', (chunk) => { bytes += chunk.length; });
  req.on('end', () => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end(String(bytes)); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port, ca: ca.certPem }) + '\\n'));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

function startServer() {
  const child = spawn(process.execPath, ['-e', SERVER_PROCESS, DIST], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve({ ...JSON.parse(text), stop: () => child.stdin.end() });
    });
  });
}

function openTunnel(socketPath) {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let head = Buffer.alloc(0);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      if (!/^HTTP\/1\.1 200/.test(head.toString('latin1'))) return reject(new Error(head.toString('latin1').split('\r\n')[0]));
      resolve(socket);
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write('CONNECT bench.test:443 HTTP/1.1\r\nHost: bench.test:443\r\n\r\n');
  });
}

async function put(run, ca, headers, body) {
  const tunnel = await openTunnel(run.socketPath);
  const socket = tlsConnect({ socket: tunnel, servername: 'bench.test', ca });
  return new Promise((resolve, reject) => {
    const req = request({ createConnection: () => socket, method: 'PUT', path: '/bucket/key', headers: { host: 'bench.test', 'content-length': String(body.length), ...headers } }, (res) => {
      let text = '';
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => (res.statusCode === 200 && Number(text) === body.length ? resolve() : reject(new Error(`status ${res.statusCode}: ${text.slice(0, 300)}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function run({ quick, log }) {
  const server = await startServer();
  const dir = mkdtempSync(join(tmpdir(), 'execgate-bench-aws-'));
  const { EgressProxy } = require(join(DIST, 'egress', 'proxy.js'));
  const { parseHostPatterns } = require(join(DIST, 'egress', 'hosts.js'));
  const { createSentinel } = require(join(DIST, 'egress', 'sentinel.js'));
  const { createAwsInjections, createAwsPlaceholder } = require(join(DIST, 'egress', 'aws.js'));
  const { normalizeNetworkPolicy, normalizeSecretBindings } = require(join(DIST, 'policy', 'egress-settings.js'));
  const proxy = new EgressProxy({ runtimeDir: dir, resolver: async () => ['203.0.113.10'], dial: () => ({ host: '127.0.0.1', port: server.port }), upstreamCa: [server.ca] });
  const network = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bench.test'] });
  const [inject, aws] = normalizeSecretBindings([
    { ref: 'secret:token', hosts: ['bench.test'], delivery: 'inject' },
    { ref: 'secret:aws', hosts: ['bench.test'], delivery: 'aws-sigv4' },
  ]);
  const sentinel = createSentinel(TOKEN);
  const placeholder = createAwsPlaceholder(REAL);
  const injections = [
    { ref: 'secret:token', value: TOKEN, sentinel, hosts: parseHostPatterns(['bench.test'], 'hosts'), binding: inject },
    ...createAwsInjections(aws, REAL, placeholder),
  ];
  const bound = await proxy.openRun({ runId: 'bench', network, injections });
  const ca = proxy.getCaCertificate();
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', sha256: Hash.bind(null, 'sha256'), credentials: placeholder, uriEscapePath: false, applyChecksum: false });
  const sign = async (payload, body) => {
    const signed = await signer.sign({ method: 'PUT', protocol: 'https:', hostname: 'bench.test', path: '/bucket/key', query: {}, headers: { host: 'bench.test', 'x-amz-content-sha256': payload, 'content-length': String(body.length) } });
    const { host: _host, ...headers } = signed.headers;
    return headers;
  };

  const rows = [];
  const cpuRows = [];
  for (const [sizeName, size] of Object.entries(SIZES)) {
    const body = Buffer.alloc(size, 'a');
    const large = size > 1024 * 1024;
    const headers = {
      injected: { authorization: `Bearer ${sentinel}` },
      unsigned: await sign('UNSIGNED-PAYLOAD', body),
      hashed: await sign(createHash('sha256').update(body).digest('hex'), body),
    };
    const label = { injected: 'intercepted, token injected', unsigned: 're-signed, UNSIGNED-PAYLOAD', hashed: 're-signed, SHA-256 payload checked' };
    const variants = Object.fromEntries(Object.keys(headers).map((v) => [v, () => put(bound, ca, headers[v], body)]));
    const cpu = Object.fromEntries(Object.keys(variants).map((v) => [v, []]));
    let before;
    const iterations = quick ? (large ? 3 : 20) : large ? 12 : 200;
    log(`${sizeName}: ${iterations} interleaved PUTs per variant`);
    const samples = await interleave(variants, {
      iterations,
      warmup: large ? 1 : 10,
      before: () => { const { user, system } = process.cpuUsage(); before = (user + system) / 1000; },
      after: (v, kept) => { const { user, system } = process.cpuUsage(); if (kept) cpu[v].push((user + system) / 1000 - before); },
    });
    const unit = large ? 'MB/s' : 'ms';
    const value = (list) => (large ? list.map((ms) => size / 1e6 / (ms / 1000)) : list);
    const cpuUnit = large ? 'ms/MiB' : 'ms/req';
    const cpuValue = (list) => (large ? list.map((ms) => ms / (size / 1048576)) : list);
    for (const v of Object.keys(variants)) {
      rows.push(row(16, `${sizeName} PUT: ${label[v]} (${unit})`, value(samples[v]), {
        unit, ...(v !== 'injected' ? { of: { name: label.injected, samples: value(samples.injected) } } : {}), ...(large ? { higherIsBetter: true } : {}),
      }));
      cpuRows.push(row(16, `${sizeName} PUT: ${label[v]}, CPU (${cpuUnit})`, cpuValue(cpu[v]), {
        unit: cpuUnit, ...(v !== 'injected' ? { of: { name: label.injected, samples: cpuValue(cpu.injected) } } : {}),
      }));
    }
    if (!large) {
      const extra = summarize(cpu.unsigned).median - summarize(cpu.injected).median;
      cpuRows.push(row(16, '  re-signing\'s own CPU per request (re-signed less injected, medians)', { median: extra, min: extra, max: extra, n: 1 }, { unit: 'ms/req' }));
    }
  }
  await bound.close();
  await proxy.close();
  server.stop();
  rmSync(dir, { recursive: true, force: true });
  return {
    rows: [...rows, ...cpuRows],
    notes: ['Loopback; a new tunnel and TLS session per request in every variant; the proxy and the client share one process (CPU rows hold both), the upstream server has its own.'],
  };
}

const figure = { id: 16, title: 'SigV4 re-signing at the egress proxy: a re-signed PUT against an intercepted one with a token injected', run };
module.exports = figure;

if (require.main === module) runFigure(figure);
