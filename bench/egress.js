'use strict';
/*
 * Figure 8: the egress proxy. The same loopback request made directly and through the proxy's
 * Unix socket (the way the gateway's bridge reaches it), for a 1 KiB, a 10 MiB and a 100 MiB
 * response body, on each of the proxy's data paths:
 *
 *   - plain HTTP forward (an absolute-URL proxy request, no secret bound to the host);
 *   - a CONNECT tunnel, passed through unread (plain HTTP inside, so the ratio is the tunnel's);
 *   - plain HTTP with a secret injected (a binding that names the host for plain HTTP; sentinel
 *     swapped in Authorization, request read for misplaced sentinels, response cleaned);
 *   - HTTPS intercepted with the gateway CA (TLS terminated, sentinel swapped, response cleaned,
 *     TLS again upstream), against a direct HTTPS request to the same server.
 *
 * Then end to end: a real client (curl) in a sandboxed gateway run fetching 100 MiB (plain HTTP,
 * a CONNECT tunnel, HTTPS intercepted with an injected secret), against the same curl run
 * directly against the server, with the issue's goals beside the ratios.
 *
 * The upstream server and the proxy each run in a process of their own, as they do for real (an
 * upstream in the client's own process would give the direct request a path no real request
 * has). Variants interleave; the whole interleaved block is repeated, and each path's ratio is
 * the median over repetitions of the ratio of that repetition's medians, so one slow phase of a
 * shared machine cannot decide it. With `--baseline=DIR` (another built checkout) its proxy and
 * gateway are measured in the same interleaving, and each path gets a this-tree/baseline ratio.
 *
 * How much a proxy's process pays its garbage collector depends on what else that process holds:
 * alone in a small process (a heap of 7-9 MB), V8 may run a full mark-compact every few MiB of
 * body (the young Buffers count against the old generation's limit) or hardly any, and a few
 * hundred KiB of heap more or less decides which (docs/performance.md). So the full collections
 * are counted, and two options take that lottery out of a comparison:
 *   --one-process  (with --baseline) both builds' proxies in one process: one heap, one collector;
 *   --in-gateway   each proxy's process also creates its build's gateway (never used), so that the
 *                  proxy runs in a heap a gateway's process has, as it does for real.
 *
 * Beside the time, the CPU each request cost: the proxy's process is asked for its CPU time
 * (process.cpuUsage: user + system, every thread, GC included) before and after each request,
 * outside its timing; end to end, this process (where the gateways and their proxies run) and
 * every process under it (bubblewrap, the bridge, curl) but the server's. CPU time is what a
 * busy machine makes least noisy, and what the proxy takes from the machine whatever its speed.
 *
 * Then what egress costs a run: a sandboxed gateway.exec of `true` with `network: none`, `open`
 * and an allowlist (the proxy socket, the bridge inside the sandbox, no request made).
 *
 *   npm run build && node bench/egress.js [--quick] [--baseline=DIR] [--one-process] [--in-gateway] [--end-to-end]
 */
const { spawn, spawnSync } = require('node:child_process');
const { request } = require('node:http');
const { request: httpsRequest } = require('node:https');
const { connect } = require('node:net');
const { connect: tlsConnect } = require('node:tls');
const { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { DIST, benchEnv, interleave, readDescendantsCpu, readOwnCpu, row, runFigure, summarize } = require('./lib');

const VALUE = 'bench-secret-value-0123456789abcdef';
const SIZES = { '1 KiB': 1024, '10 MiB': 10 * 1024 * 1024, '100 MiB': 100 * 1024 * 1024 };

/** The upstream service: HTTP and HTTPS (a certificate from a CA of its own, handed to the proxy). */
const SERVER_PROCESS = `
const [dist] = process.argv.slice(1);
const { createEgressCa } = require(dist + '/egress/ca');
const sizes = ${JSON.stringify(SIZES)};
const bodies = Object.fromEntries(Object.entries(sizes).map(([name, n]) => [name, Buffer.alloc(n, 'a')]));
const ca = createEgressCa({ keyBits: 2048 });
const handler = (req, res) => {
  req.resume();
  const body = bodies[decodeURIComponent(req.url.slice(1))];
  if (!body) { res.writeHead(404); return res.end(); }
  res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' });
  res.end(body);
};
const http = require('http').createServer(handler);
const https = require('https').createServer({ SNICallback: (name, cb) => cb(null, ca.getSecureContext(name)) }, handler);
let left = 2;
const ready = () => { if (--left === 0) process.stdout.write(JSON.stringify({ http: http.address().port, https: https.address().port, ca: ca.certPem }) + '\\n'); };
http.listen(0, '127.0.0.1', ready);
https.listen(0, '127.0.0.1', ready);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

/** The proxy (or, with several builds, one proxy of each in this one process): its runs' sockets on stdout. */
const PROXY_PROCESS = `
const [dists, dir, ports, inGateway] = process.argv.slice(1);
const { http, https, ca } = JSON.parse(ports);
(async () => {
  const proxies = [];
  const runs = [];
  const gateways = [];
  for (const dist of JSON.parse(dists)) {
    if (inGateway === 'yes') {
      // What else a gateway's process holds (its modules, a gateway with its policy and audit log;
      // never used here): the proxy runs inside one for real.
      const { DEFAULT_POLICY } = require(dist + '/policy/effective.js');
      const home = require('node:fs').mkdtempSync(require('node:path').join(dir, 'home-'));
      gateways.push(require(dist + '/gateway.js').createGateway({ home, policy: { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' } } }));
    }
    const { EgressProxy } = require(dist + '/egress/proxy.js');
    const { parseHostPatterns } = require(dist + '/egress/hosts.js');
    const { createSentinel } = require(dist + '/egress/sentinel.js');
    const settings = dist + '/policy/egress-settings.js';
    const { normalizeNetworkPolicy, normalizeSecretBindings } = require(require('node:fs').existsSync(settings) ? settings : dist + '/egress');
    const proxy = new EgressProxy({
      runtimeDir: dir,
      resolver: async () => ['203.0.113.10'],
      dial: (_address, port) => ({ host: '127.0.0.1', port: port === 443 ? https : http }),
      upstreamCa: [ca],
    });
    proxies.push(proxy);
    const network = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bench.test'] });
    const plain = await proxy.openRun({ runId: 'plain', network });
    const sentinel = createSentinel(${JSON.stringify(VALUE)});
    // Plain HTTP by name, as a binding for a local service would say (a tree without placements ignores it).
    const [binding] = normalizeSecretBindings([{ ref: 'secret:bench', hosts: ['bench.test'], delivery: 'inject', http: ['bench.test'] }]);
    const bound = await proxy.openRun({ runId: 'bound', network, injections: [{ ref: 'secret:bench', value: ${JSON.stringify(VALUE)}, sentinel, hosts: parseHostPatterns(['bench.test'], 'hosts'), binding }] });
    runs.push({ plain: plain.socketPath, bound: bound.socketPath, sentinel, gatewayCa: proxy.getCaCertificate() });
  }
  process.stdout.write(JSON.stringify({ runs }) + '\\n');
  // Asked between requests (outside their timing): this process's CPU time, every thread, in ms,
  // and how many full (mark-compact) garbage collections it has run.
  let majorGcs = 0;
  const { PerformanceObserver, constants } = require('node:perf_hooks');
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorGcs += 1;
  }).observe({ entryTypes: ['gc'] });
  let asked = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (text) => {
    asked += text;
    for (let end = asked.indexOf('\\n'); end >= 0; end = asked.indexOf('\\n')) {
      asked = asked.slice(end + 1);
      const { user, system } = process.cpuUsage();
      process.stdout.write(JSON.stringify({ cpu: (user + system) / 1000, majorGcs }) + '\\n');
    }
  });
  process.stdin.on('end', () => Promise.all([...proxies, ...gateways].map((closable) => closable.close())).then(() => process.exit(0)));
})();
`;

/** A helper process: `ready` is its first line (JSON), `ask(line)` resolves its next line. */
function startProcess(source, args) {
  const child = spawn(process.execPath, ['-e', source, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = [];
  let text = '';
  child.stdout.on('data', (chunk) => {
    text += chunk;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n')) {
      const line = text.slice(0, end);
      text = text.slice(end + 1);
      waiting.shift()?.resolve(JSON.parse(line));
    }
  });
  child.once('exit', (code) => {
    for (const waiter of waiting.splice(0)) waiter.reject(new Error(`a bench helper process exited with ${code}`));
  });
  const next = () => new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  const ready = next();
  const ask = (line) => {
    const reply = next();
    child.stdin.write(`${line}\n`);
    return reply;
  };
  const stop = () => {
    child.stdin.end();
    return new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
  };
  return { ready, ask, stop, pid: child.pid };
}

function readAll(expected, resolve, reject) {
  return (res) => {
    let bytes = 0;
    res.on('data', (chunk) => { bytes += chunk.length; });
    res.on('error', reject);
    res.on('end', () => (res.statusCode === 200 && bytes === expected ? resolve(bytes) : reject(new Error(`status ${res.statusCode}, ${bytes} of ${expected} bytes`))));
  };
}

function fetchBody(options, expected, client = request) {
  return new Promise((resolve, reject) => {
    const req = client(options, readAll(expected, resolve, reject));
    req.on('error', reject);
    req.end();
  });
}

/** A CONNECT through the run's socket; resolves the tunnelled socket once the proxy said 200. */
function openTunnel(socketPath, authority) {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let head = Buffer.alloc(0);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      if (!/^HTTP\/1\.1 200/.test(head.toString('latin1'))) return reject(new Error(`CONNECT refused: ${head.toString('latin1').split('\r\n')[0]}`));
      if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
      resolve(socket);
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  });
}


/** The policy's egress settings from a built tree: policy/egress-settings.js, or an older tree's egress/index.js. */
function loadEgressSettings(dist) {
  const settings = join(dist, 'policy', 'egress-settings.js');
  return require(existsSync(settings) ? settings : join(dist, 'egress'));
}
async function viaTunnel(socketPath, port, path, expected, tls) {
  const tunnel = await openTunnel(socketPath, `bench.test:${port}`);
  const socket = tls ? tlsConnect({ socket: tunnel, servername: 'bench.test', ca: tls.ca }) : tunnel;
  return fetchBody({ createConnection: () => socket, path, headers: { host: 'bench.test', ...(tls ? tls.headers : {}) } }, expected);
}

async function measureProxy({ quick, baseline, oneProcess, inGateway, log }) {
  const dir = mkdtempSync(join(tmpdir(), 'execgate-bench-egress-'));
  const server = startProcess(SERVER_PROCESS, [DIST]);
  const ports = await server.ready;
  const trees = baseline ? { this: DIST, baseline } : { this: DIST };
  const proxies = {};
  if (oneProcess && baseline) {
    // Both builds' proxies in one process: one heap and one garbage collector for both, so that
    // neither build's figures depend on the state V8's heuristics happened to leave its own
    // process in (see docs/performance.md: a proxy alone in a small process can run a
    // mark-compact every few MiB, or not, by a few hundred KiB of heap).
    const child = startProcess(PROXY_PROCESS, [JSON.stringify(Object.values(trees)), dir, JSON.stringify(ports), inGateway ? 'yes' : 'no']);
    const { runs } = await child.ready;
    Object.keys(trees).forEach((tree, index) => { proxies[tree] = { child, ...runs[index] }; });
  } else {
    for (const [tree, dist] of Object.entries(trees)) {
      const child = startProcess(PROXY_PROCESS, [JSON.stringify([dist]), dir, JSON.stringify(ports), inGateway ? 'yes' : 'no']);
      const { runs } = await child.ready;
      proxies[tree] = { child, ...runs[0] };
    }
  }
  const label = { direct: 'direct HTTP', plain: 'proxy: plain HTTP forward', tunnel: 'proxy: CONNECT tunnel (not intercepted)', injected: 'proxy: plain HTTP, secret injected + response redacted', directTls: 'direct HTTPS', intercepted: 'proxy: HTTPS intercepted, secret injected + response redacted' };
  const paths = ['plain', 'tunnel', 'injected', 'intercepted'];
  const name = (path, tree) => (tree === 'this' ? path : `${path}@${tree}`);
  const title = (path, tree) => `${label[path]}${baseline ? (tree === 'this' ? ' [this tree]' : ' [baseline]') : ''}`;

  const rows = [];
  const cpuRows = [];
  const ratioRows = [];
  for (const [sizeName, size] of Object.entries(SIZES)) {
    const large = size > 1024 * 1024;
    const huge = size > 64 * 1024 * 1024;
    const path = `/${encodeURIComponent(sizeName)}`;
    const variants = {
      direct: () => fetchBody({ host: '127.0.0.1', port: ports.http, path, agent: false }, size),
      directTls: () => fetchBody({ host: '127.0.0.1', port: ports.https, servername: 'bench.test', path, ca: ports.ca, agent: false, headers: { host: 'bench.test' } }, size, httpsRequest),
    };
    for (const [tree, proxy] of Object.entries(proxies)) {
      const inject = { authorization: `Bearer ${proxy.sentinel}` };
      variants[name('plain', tree)] = () => fetchBody({ socketPath: proxy.plain, path: `http://bench.test${path}`, headers: { host: 'bench.test' } }, size);
      variants[name('tunnel', tree)] = () => viaTunnel(proxy.plain, 80, path, size);
      variants[name('injected', tree)] = () => fetchBody({ socketPath: proxy.bound, path: `http://bench.test${path}`, headers: { host: 'bench.test', ...inject } }, size);
      variants[name('intercepted', tree)] = () => viaTunnel(proxy.bound, 443, path, size, { ca: proxy.gatewayCa, headers: inject });
    }
    for (const [v, fn] of Object.entries(variants)) variants[v] = () => fn().catch((error) => { throw new Error(`${sizeName}, ${v}: ${error.message}`); });
    // The proxy's CPU time per request: its process is asked before and after each one.
    const proxyOf = Object.fromEntries(Object.entries(proxies).flatMap(([tree, proxy]) => paths.map((p) => [name(p, tree), proxy.child])));
    const cpu = Object.fromEntries(Object.keys(proxyOf).map((v) => [v, []]));
    // Full garbage collections each proxy process ran, per repetition (they are most of what a
    // path costs beyond its own work when V8 runs them every few MiB).
    const majorGcs = Object.fromEntries(Object.keys(trees).map((tree) => [tree, []]));
    const lastGcs = {};
    for (const [tree, proxy] of Object.entries(proxies)) lastGcs[tree] = (await proxy.child.ask('cpu')).majorGcs;
    let cpuBefore;
    const before = async (v) => { cpuBefore = proxyOf[v] ? (await proxyOf[v].ask('cpu')).cpu : undefined; };
    const after = async (v, kept) => {
      if (!proxyOf[v]) return;
      const { cpu: now } = await proxyOf[v].ask('cpu');
      if (kept) cpu[v].push(now - cpuBefore);
    };
    const repetitions = quick ? 2 : huge ? 3 : 5;
    const iterations = quick ? (huge ? 1 : 3) : huge ? 3 : large ? 8 : 60;
    log(`${sizeName}: ${repetitions} repetitions of ${iterations} interleaved requests per path`);
    const all = Object.fromEntries(Object.keys(variants).map((v) => [v, []]));
    const perRep = Object.fromEntries(Object.keys(variants).filter((v) => v !== 'direct' && v !== 'directTls').map((v) => [v, []]));
    const againstBaseline = Object.fromEntries(paths.map((p) => [p, []]));
    const cpuAgainstBaseline = Object.fromEntries(paths.map((p) => [p, []]));
    for (let rep = 0; rep < repetitions; rep++) {
      const kept = Object.fromEntries(Object.keys(cpu).map((v) => [v, cpu[v].length]));
      const samples = await interleave(variants, { iterations, warmup: rep === 0 ? (huge ? 1 : 2) : huge ? 0 : 1, before, after });
      for (const [v, list] of Object.entries(samples)) all[v].push(...list);
      const median = (v) => summarize(samples[v]).median;
      const cpuMedian = (v) => summarize(cpu[v].slice(kept[v])).median;
      // CPU ratio (lower is better) = this tree's proxy CPU / the baseline's, per request.
      if (baseline) for (const p of paths) cpuAgainstBaseline[p].push(cpuMedian(p) / cpuMedian(name(p, 'baseline')));
      for (const [tree, proxy] of Object.entries(proxies)) {
        const { majorGcs: count } = await proxy.child.ask('cpu');
        majorGcs[tree].push(count - lastGcs[tree]);
        lastGcs[tree] = count;
      }
      // Throughput ratio (higher is better) = direct time / proxied time.
      for (const v of Object.keys(perRep)) perRep[v].push(median(v.startsWith('intercepted') ? 'directTls' : 'direct') / median(v));
      if (baseline) for (const p of paths) againstBaseline[p].push(median(name(p, 'baseline')) / median(p));
    }
    const unit = large ? 'MB/s' : 'ms';
    const value = (list) => (large ? list.map((ms) => size / 1e6 / (ms / 1000)) : list);
    rows.push(row(8, `${sizeName}: direct HTTP (${unit})`, value(all.direct), { unit }));
    rows.push(row(8, `${sizeName}: direct HTTPS (${unit})`, value(all.directTls), { unit }));
    for (const tree of Object.keys(trees)) {
      for (const p of paths) {
        const base = p === 'intercepted' ? 'directTls' : 'direct';
        rows.push(row(8, `${sizeName}: ${title(p, tree)} (${unit})`, value(all[name(p, tree)]), {
          unit, of: { name: label[base], samples: value(all[base]) }, ...(large ? { higherIsBetter: true } : {}),
        }));
      }
    }
    for (const tree of Object.keys(trees)) {
      for (const p of paths) {
        // The target applies to the large bodies' paths; the others are shown against the same bar.
        ratioRows.push(row(8, `${sizeName}: ${title(p, tree)}, throughput / direct, per repetition`, perRep[name(p, tree)], {
          unit: 'x',
          ...(large ? { target: 0.5, higherIsBetter: true, of: { name: 'parity', samples: { median: 1, min: 1, max: 1, n: 1 } } } : {}),
        }));
      }
    }
    // CPU of the proxy's process (user + system, all its threads) per MiB, or per request for the small body.
    const cpuUnit = large ? 'ms/MiB' : 'ms/req';
    const cpuValue = (list) => (large ? list.map((ms) => ms / (size / 1048576)) : list);
    for (const tree of Object.keys(trees)) {
      for (const p of paths) {
        cpuRows.push(row(8, `${sizeName}: ${title(p, tree)}, proxy CPU (${cpuUnit})`, cpuValue(cpu[name(p, tree)]), {
          unit: cpuUnit, ...(p !== 'plain' ? { of: { name: 'plain forward', samples: cpuValue(cpu[name('plain', tree)]) } } : {}),
        }));
      }
    }
    for (const tree of oneProcess && baseline ? ['this'] : Object.keys(trees)) {
      const whose = oneProcess && baseline ? ' (both trees\' proxies, one process)' : baseline ? (tree === 'this' ? ' [this tree]' : ' [baseline]') : '';
      cpuRows.push(row(8, `${sizeName}: full garbage collections in the proxy process${whose}, per repetition`, majorGcs[tree], { unit: 'GCs' }));
    }
    if (baseline) {
      for (const p of paths) {
        ratioRows.push(row(8, `${sizeName}: ${label[p]}, this tree's throughput / the baseline's, per repetition`, againstBaseline[p], { unit: 'x' }));
      }
      for (const p of paths) {
        ratioRows.push(row(8, `${sizeName}: ${label[p]}, this tree's proxy CPU / the baseline's, per repetition`, cpuAgainstBaseline[p], { unit: 'x' }));
      }
    }
  }
  for (const child of new Set(Object.values(proxies).map((proxy) => proxy.child))) await child.stop();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  return [...rows, ...cpuRows, ...ratioRows];
}

/*
 * End to end, the way a run pays for it: curl in a sandboxed gateway run (the shared network
 * namespace, its way to the proxy, the proxy) fetching 100 MiB, against the same curl run directly
 * against the same server, on three paths:
 *   - plain HTTP to a host with no secret bound (an absolute-URL proxy request), against direct HTTP;
 *   - a CONNECT tunnel (`curl -p`, plain HTTP inside, so the ratio is the tunnel's), against direct HTTP;
 *   - HTTPS intercepted with an injected secret (TLS terminated, sentinel swapped, response
 *     cleaned, TLS again upstream), against direct HTTPS.
 * Throughput is curl's own transfer time (`%{time_total}`: connect to last byte, through the
 * proxy for the sandboxed run), so the sandbox's set-up, the same for any body, is not counted
 * against the data path. CPU per MiB: the gateway's process (where the gateway and its proxy run:
 * everything execgate spends on the data path when no process relays), and that process with every
 * process under it (bubblewrap, a relay if the tree has one, curl) less the server's, beside the
 * direct curl's own. Goals from the issue are printed beside the ratios.
 */
const END_TO_END_GOALS = { plain: 0.5, tunnel: 0.8, intercepted: 0.5 };

async function measureEndToEnd({ quick, baseline, log }) {
  const size = SIZES['100 MiB'];
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  if (!checkPlatform().ok) return { rows: [], note: 'end-to-end figure skipped: no sandbox here' };
  const curl = spawnSync('curl', ['--version'], { encoding: 'utf8' });
  if (curl.status !== 0) return { rows: [], note: 'end-to-end figure skipped: no curl' };
  const server = startProcess(SERVER_PROCESS, [DIST]);
  const ports = await server.ready;
  const { home, env, cleanup } = benchEnv('execgate-bench-egress-e2e-');
  const work = join(home, 'work');
  mkdirSync(work);
  const caFile = join(home, 'server-ca.pem');
  writeFileSync(caFile, ports.ca);
  const trees = baseline ? { this: DIST, baseline } : { this: DIST };
  const gateways = {};
  for (const [tree, dist] of Object.entries(trees)) {
    const { createGateway } = require(join(dist, 'gateway.js'));
    const { DEFAULT_POLICY } = require(join(dist, 'policy', 'effective.js'));
    const { normalizeNetworkPolicy, normalizeSecretBindings } = loadEgressSettings(dist);
    const network = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bench.test', 'open.test'] });
    const policy = {
      ...DEFAULT_POLICY,
      network,
      sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required', network: 'none' },
      secrets: { ...DEFAULT_POLICY.secrets, bind: normalizeSecretBindings([{ ref: 'secret:bench', hosts: ['bench.test'], delivery: 'inject' }]) },
    };
    gateways[tree] = createGateway({
      policy, home: join(home, tree), env, cwd: work,
      sources: [{ name: 'bench', kinds: ['secret'], lookup: (_kind, id) => (id === 'bench' ? { found: true, value: VALUE } : { found: false }) }],
      egress: { resolver: async () => ['203.0.113.10'], dial: (_address, port) => ({ host: '127.0.0.1', port: port === 443 ? ports.https : ports.http }), upstreamCa: [ports.ca] },
    });
  }
  const body = encodeURIComponent('100 MiB');
  const write = ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download} %{time_total}'];
  const inside = 'curl -sS --fail -o /dev/null -w "%{size_download} %{time_total}"';
  const paths = {
    plain: { label: 'plain HTTP', direct: 'http', sandboxed: `${inside} http://open.test/${body}` },
    tunnel: { label: 'CONNECT tunnel (plain HTTP inside)', direct: 'http', sandboxed: `${inside} -p http://open.test/${body}` },
    intercepted: { label: 'HTTPS intercepted, secret injected', direct: 'https', sandboxed: `${inside} -H "Authorization: Bearer <<secret:bench>>" https://bench.test/${body}` },
  };
  const directArgs = {
    http: [...write, `http://127.0.0.1:${ports.http}/${body}`],
    https: [...write, '--cacert', caFile, '--resolve', `bench.test:${ports.https}:127.0.0.1`, '-H', `Authorization: Bearer ${VALUE}`, `https://bench.test:${ports.https}/${body}`],
  };
  /** curl's own transfer time (ms) from its `-w` line, checked for the whole body. */
  const transfer = (text, what) => {
    const [bytes, seconds] = String(text).trim().split(' ');
    if (Number(bytes) !== size) throw new Error(`${what}: curl got ${bytes} bytes of ${size}`);
    return Number(seconds) * 1000;
  };
  const times = {};
  const variants = {};
  for (const scheme of ['http', 'https']) {
    const name = `direct ${scheme}`;
    times[name] = [];
    variants[name] = () => new Promise((resolve, reject) => {
      const child = spawn('curl', directArgs[scheme], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk) => { out += chunk; });
      child.once('error', reject);
      child.once('exit', () => { try { times[name].push(transfer(out, name)); resolve(); } catch (error) { reject(error); } });
    });
  }
  for (const [path, { sandboxed }] of Object.entries(paths)) {
    for (const [tree, gateway] of Object.entries(gateways)) {
      const name = `${path} ${tree}`;
      times[name] = [];
      variants[name] = async () => {
        const result = await gateway.exec({ command: sandboxed, timeout: 120_000 });
        if (result.exitCode !== 0) throw new Error(`${name}: ${result.output}`);
        times[name].push(transfer(result.stdout, name));
      };
    }
  }
  const iterations = quick ? 2 : 8;
  log(`end to end: ${iterations} interleaved 100 MiB downloads by curl per variant (${Object.keys(variants).join(', ')})`);
  /*
   * CPU per sample: this process (the gateways and their proxies live here), and it with every
   * process under it (bubblewrap, a relay, curl; or the direct curl), less the server's. Read in
   * that order before and the other way round after, so that reading /proc falls outside the window.
   */
  const own = Object.fromEntries(Object.keys(variants).map((v) => [v, []]));
  const all = Object.fromEntries(Object.keys(variants).map((v) => [v, []]));
  const measured = readDescendantsCpu() !== undefined;
  let ownBefore;
  let allBefore;
  const before = () => {
    if (!measured) return;
    const descendants = readDescendantsCpu([server.pid]);
    ownBefore = readOwnCpu();
    allBefore = descendants + ownBefore;
  };
  const after = (v, kept) => {
    if (!measured) return;
    const ownNow = readOwnCpu();
    const allNow = ownNow + readDescendantsCpu([server.pid]);
    if (kept) {
      own[v].push(ownNow - ownBefore);
      all[v].push(allNow - allBefore);
    }
  };
  // The interleaving's own times (a whole exec) are not the figure: curl's transfer times are.
  await interleave(variants, { iterations, warmup: 1, before, after });
  for (const gateway of Object.values(gateways)) await gateway.close();
  await server.stop();
  cleanup();
  // The warm-up sample is in `times` too (interleave runs it first): drop it.
  for (const list of Object.values(times)) list.splice(0, list.length - iterations);
  const mbps = (list) => list.map((ms) => size / 1e6 / (ms / 1000));
  const perMiB = (list) => list.map((ms) => ms / (size / 1048576));
  const label = (tree) => (baseline ? (tree === 'this' ? ' [this tree]' : ' [baseline]') : '');
  const rows = [];
  for (const scheme of ['http', 'https']) rows.push(row(8, `100 MiB end to end: curl direct, ${scheme.toUpperCase()} (MB/s)`, mbps(times[`direct ${scheme}`]), { unit: 'MB/s' }));
  for (const [path, { label: what, direct }] of Object.entries(paths)) {
    const of = { name: `curl direct ${direct.toUpperCase()}`, samples: mbps(times[`direct ${direct}`]) };
    for (const tree of Object.keys(trees)) {
      rows.push(row(8, `100 MiB end to end: curl in a sandboxed gateway run, ${what}${label(tree)} (MB/s)`, mbps(times[`${path} ${tree}`]), { unit: 'MB/s', of, ...(path === 'intercepted' && tree === 'this' ? { goal: 'proxy-intercept' } : { target: END_TO_END_GOALS[path], higherIsBetter: true }) }));
    }
    if (baseline) rows.push(row(8, `100 MiB end to end, ${what}: this tree against the baseline (MB/s)`, mbps(times[`${path} this`]), { unit: 'MB/s', of: { name: 'baseline', samples: mbps(times[`${path} baseline`]) }, higherIsBetter: true }));
  }
  if (measured) {
    for (const scheme of ['http', 'https']) rows.push(row(8, `100 MiB end to end: curl direct, ${scheme.toUpperCase()}, CPU of curl (ms/MiB)`, perMiB(all[`direct ${scheme}`]), { unit: 'ms/MiB' }));
    for (const [path, { label: what }] of Object.entries(paths)) {
      for (const tree of Object.keys(trees)) {
        rows.push(row(8, `100 MiB end to end, ${what}${label(tree)}: CPU of the gateway's process (the proxy) (ms/MiB)`, perMiB(own[`${path} ${tree}`]), { unit: 'ms/MiB' }));
        rows.push(row(8, `100 MiB end to end, ${what}${label(tree)}: CPU of the gateway's process and everything under it (ms/MiB)`, perMiB(all[`${path} ${tree}`]), { unit: 'ms/MiB' }));
      }
      if (baseline) rows.push(row(8, `100 MiB end to end, ${what}: CPU of everything, this tree against the baseline (ms/MiB)`, perMiB(all[`${path} this`]), { unit: 'ms/MiB', of: { name: 'baseline', samples: perMiB(all[`${path} baseline`]) } }));
    }
  }
  return { rows };
}

/** What egress costs a sandboxed run that makes no request: none vs open vs an allowlist. */
async function measureRunOverhead({ quick, log }) {
  const { createGateway } = require(join(DIST, 'gateway.js'));
  const { DEFAULT_POLICY } = require(join(DIST, 'policy', 'effective.js'));
  const { checkPlatform } = require(join(DIST, 'sandbox', 'index.js'));
  const platform = checkPlatform();
  if (!platform.ok) return { rows: [], note: `run overhead skipped: ${platform.reason}` };
  const { home, env, cleanup } = benchEnv('execgate-bench-egress-run-');
  const work = join(home, 'work');
  mkdirSync(work);
  const { normalizeNetworkPolicy } = loadEgressSettings(DIST);
  const policyOf = (network) => {
    const normalized = normalizeNetworkPolicy(network);
    return { ...DEFAULT_POLICY, network: normalized, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required', network: normalized.mode } };
  };
  const gateways = {
    none: createGateway({ policy: policyOf({ mode: 'none' }), home: join(home, 'none'), env, cwd: work }),
    open: createGateway({ policy: policyOf({ mode: 'open' }), home: join(home, 'open'), env, cwd: work }),
    allowlist: createGateway({ policy: policyOf({ mode: 'allowlist', allow: ['example.com'] }), home: join(home, 'allowlist'), env, cwd: work }),
  };
  const check = (result) => {
    if (result.exitCode !== 0) throw new Error(`run failed: ${result.output}`);
  };
  const iterations = quick ? 5 : 100;
  log(`run overhead: ${iterations} interleaved gateway.exec('true') per network mode`);
  const samples = await interleave(Object.fromEntries(Object.entries(gateways).map(([mode, gateway]) => [mode, async () => check(await gateway.exec({ command: 'true' }))])), { iterations, warmup: quick ? 1 : 10 });
  for (const gateway of Object.values(gateways)) await gateway.close();
  cleanup();
  return {
    rows: [
      row(8, 'sandboxed gateway.exec(\'true\'), network: none (ms)', samples.none),
      row(8, 'sandboxed gateway.exec(\'true\'), network: open (ms)', samples.open, { of: { name: 'none', samples: samples.none } }),
      row(8, 'sandboxed gateway.exec(\'true\'), network: allowlist (ms)', samples.allowlist, { of: { name: 'none', samples: samples.none } }),
    ],
  };
}

async function run(options) {
  const rows = await measureProxy(options);
  const endToEnd = await measureEndToEnd(options);
  const overhead = await measureRunOverhead(options);
  const registration = await runOverhead(options);
  return {
    rows: [...rows, ...endToEnd.rows, ...overhead.rows, ...registration],
    notes: [
      'Loopback, a new connection per request in every variant; upstream server, proxy and client are three processes; the proxy is reached over a Unix socket, as the gateway\'s bridge reaches it (the bridge itself is not in these figures).',
      'Ratio rows: each repetition\'s median direct time over its median proxied time (throughput ratio, 1.0 = parity); median and min .. max over repetitions. The intercepted path is against direct HTTPS.',
      'A bound secret makes the proxy swap sentinels in the request and redact the response (streaming matcher over every byte), which unbound hosts skip.',
      'Run overhead: open and allowlist register the run with the proxy under its own credentials and use the gateway\'s one listener in the shared namespace (opened by the first proxied run); none does neither.',
      'End to end: curl in a sandboxed gateway run (shared network namespace, the proxy reached the way a run reaches it) against the same curl spawned directly; throughput is curl\'s own transfer time (connect to last byte), so the sandbox\'s set-up is not counted against the data path. Goals beside the ratios: plain HTTP >= 0.5x, CONNECT tunnel >= 0.8x, HTTPS intercepted with injection >= 0.5x.',
      'CPU rows: the proxy process\'s CPU time (user + system, all threads, GC included) per MiB of body (per request for 1 KiB), read before and after each request; end to end, the gateway\'s process and every process under it but the server.',
      ...(endToEnd.note ? [endToEnd.note] : []),
      ...(overhead.note ? [overhead.note] : []),
    ],
  };
}

/*
 * What a run pays for its egress before and after the command: registering with the proxy under
 * its own credentials (the shared socket, what gateway runs do) against opening a socket of its
 * own (a directory, links, a listening Unix socket), each followed by close.
 */
async function runOverhead({ quick, log }) {
  const { EgressProxy } = require(join(DIST, 'egress', 'proxy.js'));
  const { normalizeNetworkPolicy } = loadEgressSettings(DIST);
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

const figure = { id: 8, title: 'Egress proxy: a request through the proxy against the same request direct, per data path; what egress costs a run', run };
module.exports = figure;
// `--end-to-end`: the end-to-end rows alone (curl from a sandboxed run against curl direct).
const endToEndOnly = { ...figure, run: async (options) => ({ rows: (await measureEndToEnd(options)).rows, notes: [] }) };
if (require.main === module) runFigure(process.argv.includes('--end-to-end') ? endToEndOnly : figure);
