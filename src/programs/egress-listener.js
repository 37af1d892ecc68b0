/*
 * The egress listener of a gateway's shared network namespace (node, started inside it with an
 * IPC channel to the gateway): opens a TCP listener on the namespace's 127.0.0.1 (a port the
 * kernel picks), hands it to the gateway with the namespace it was opened in, and exits. The
 * gateway accepts the runs' connections on it itself: no process relays their bytes.
 * `execgate-egress-listener` names it in `ps`. (src/egress/bridge.ts)
 *
 *   node -e "$(cat egress-listener.js)"     (stdio: ignore, ignore, pipe, ipc)
 */
'use strict'; /* execgate-egress-listener */
const net = require('net'), fs = require('fs');
const fail = (message) => { process.stderr.write('execgate egress listener: ' + message + '\n'); process.exit(125); };
if (typeof process.send !== 'function') fail('no channel to the gateway');
let namespace = '';
try { namespace = fs.readlinkSync('/proc/self/ns/net'); } catch (e) { fail('cannot read its network namespace: ' + e.message); }
const server = net.createServer();
server.on('error', (e) => fail('cannot listen on 127.0.0.1: ' + e.message));
server.listen(0, '127.0.0.1', () => {
  process.send({ namespace, port: server.address().port }, server, (error) => {
    if (error) fail('cannot hand the listener over: ' + error.message);
    process.exit(0);
  });
});
process.on('disconnect', () => process.exit(0));
