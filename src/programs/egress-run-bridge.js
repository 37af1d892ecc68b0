/*
 * The egress bridge of a run with a network namespace of its own (node, inside the sandbox): it
 * listens on the run's loopback, carries each connection to the proxy's socket bound into the
 * sandbox, sets the run's proxy variables (it alone knows the port it got) and starts the run's
 * shell, whose end is its own. (src/egress/bridge.ts)
 *
 * With raw TCP destinations or host services (EXECGATE_EGRESS_TCP, JSON `[[address, port], ...]`:
 * 127.77.X.Y and the host services' 127.0.0.1 and ::1) it also listens on each of those, before
 * the shell starts, and carries each connection to the proxy's socket after one line naming the
 * run's proxy credentials and the address and port the client connected to
 * (`\0execgate-tcp USER PASS ADDRESS PORT\n`): the proxy reads what that address stands for from
 * the run's policy (src/egress/connections.ts). ::1 is skipped where the namespace has no IPv6,
 * and a port below 1024 (SSH's 22) where the sandbox holds no capability to open it, with a line
 * on the run's stderr.
 *
 *   node -e "$(cat egress-run-bridge.js)" -- SOCKET PORT PROGRAM [ARG...]
 */
'use strict';
const net = require('net'), cp = require('child_process');
const [socketPath, port, ...argv] = process.argv.slice(1);
const fail = (code, message) => { process.stderr.write('execgate egress bridge: ' + message + '\n'); process.exit(code); };
const HWM = 256 * 1024;
const relay = (c, preamble) => {
  // Raw TCP (a preamble) passes each side's end on alone (half-close), as the gateway does.
  const u = net.connect({ path: socketPath, highWaterMark: HWM, allowHalfOpen: Boolean(preamble) });
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
  if (preamble) u.write(preamble);
  c.pipe(u); u.pipe(c);
};
const env = { ...process.env };
const auth = env.EXECGATE_EGRESS_AUTH; delete env.EXECGATE_EGRESS_AUTH;
let raw = [];
try { raw = JSON.parse(env.EXECGATE_EGRESS_TCP || '[]'); } catch (e) { fail(125, 'cannot read EXECGATE_EGRESS_TCP: ' + e.message); }
delete env.EXECGATE_EGRESS_TCP;
const [user = '', pass = ''] = (auth || '').split(':').map(decodeURIComponent);
const skipped = [];
const listenRaw = (index, then) => {
  if (index >= raw.length) {
    if (skipped.length > 0) process.stderr.write('execgate: raw TCP to ' + skipped.join(', ') + ' is not available in a run with a network namespace of its own (one holding a delivery: env secret): ports below 1024 cannot be opened there\n');
    return then();
  }
  const [host, p] = raw[index];
  const server = net.createServer({ highWaterMark: HWM, allowHalfOpen: true }, (c) => relay(c, '\0execgate-tcp ' + user + ' ' + pass + ' ' + host + ' ' + p + '\n'));
  server.once('error', (e) => {
    if (host === '::1' && (e.code === 'EADDRNOTAVAIL' || e.code === 'EAFNOSUPPORT')) return listenRaw(index + 1, then);
    // A port below 1024 needs a capability no sandboxed process keeps: that destination is not
    // reachable from a namespace of its own (said once, on the run's stderr), the others are.
    if (e.code === 'EACCES' && Number(p) < 1024) {
      skipped.push(host.includes(':') ? '[' + host + ']:' + p : host + ':' + p);
      return listenRaw(index + 1, then);
    }
    fail(125, 'cannot listen on ' + host + ':' + p + ': ' + e.message);
  });
  server.listen({ host, port: Number(p), exclusive: true }, () => listenRaw(index + 1, then));
};
const server = net.createServer((c) => relay(c));
server.on('error', (e) => fail(125, 'cannot listen on 127.0.0.1:' + port + ': ' + e.message));
server.listen(Number(port), '127.0.0.1', () => listenRaw(0, () => {
  const extra = env.EXECGATE_EGRESS_NODE_OPTIONS; delete env.EXECGATE_EGRESS_NODE_OPTIONS;
  if (extra) env.NODE_OPTIONS = env.NODE_OPTIONS ? env.NODE_OPTIONS + ' ' + extra : extra;
  const at = (auth ? auth + '@' : '') + '127.0.0.1:' + server.address().port;
  for (const n of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy']) env[n] = 'http://' + at;
  for (const n of ['ALL_PROXY', 'all_proxy']) env[n] = 'socks5h://' + at;
  const child = cp.spawn(argv[0], argv.slice(1), { stdio: 'inherit', env });
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH']) process.on(s, () => { try { child.kill(s); } catch {} });
  child.on('error', (e) => fail(127, 'cannot start ' + argv[0] + ': ' + e.message));
  child.on('exit', (code, signal) => {
    if (signal) { process.removeAllListeners(signal); process.kill(process.pid, signal); setTimeout(() => process.exit(128), 100); }
    else process.exit(code === null ? 1 : code);
  });
}));
