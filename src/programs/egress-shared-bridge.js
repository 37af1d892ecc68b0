/*
 * The egress bridge shared by a gateway's runs (node, in the gateway's network namespace): says
 * its port on stdout once listening, carries each connection to the proxy's socket, and exits
 * when its stdin closes (the gateway is gone, however it died). `execgate-shared-egress-bridge`
 * names it in `ps`. (src/egress/bridge.ts)
 *
 *   node -e "$(cat egress-shared-bridge.js)" SOCKET
 */
'use strict'; /* execgate-shared-egress-bridge */
const net = require('net');
const socketPath = process.argv[1];
const server = net.createServer((c) => {
  const u = net.connect(socketPath);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
  c.pipe(u); u.pipe(c);
});
server.on('error', (e) => { process.stderr.write('execgate egress bridge: ' + e.message + '\n'); process.exit(125); });
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\n'));
process.stdin.on('end', () => process.exit(0)); process.stdin.on('error', () => process.exit(0)); process.stdin.resume();
