/*
 * The egress bridge of a run with a network namespace of its own (node, inside the sandbox): it
 * listens on the run's loopback, carries each connection to the proxy's socket bound into the
 * sandbox, sets the run's proxy variables (it alone knows the port it got) and starts the run's
 * shell, whose end is its own. (src/egress/bridge.ts)
 *
 *   node -e "$(cat egress-run-bridge.js)" -- SOCKET PORT PROGRAM [ARG...]
 */
'use strict';
const net = require('net'), cp = require('child_process');
const [socketPath, port, ...argv] = process.argv.slice(1);
const fail = (code, message) => { process.stderr.write('execgate egress bridge: ' + message + '\n'); process.exit(code); };
const server = net.createServer((c) => {
  const u = net.connect(socketPath);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
  c.pipe(u); u.pipe(c);
});
server.on('error', (e) => fail(125, 'cannot listen on 127.0.0.1:' + port + ': ' + e.message));
server.listen(Number(port), '127.0.0.1', () => {
  const env = { ...process.env };
  const extra = env.EXECGATE_EGRESS_NODE_OPTIONS; delete env.EXECGATE_EGRESS_NODE_OPTIONS;
  if (extra) env.NODE_OPTIONS = env.NODE_OPTIONS ? env.NODE_OPTIONS + ' ' + extra : extra;
  const auth = env.EXECGATE_EGRESS_AUTH; delete env.EXECGATE_EGRESS_AUTH;
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
});
