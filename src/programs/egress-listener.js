/*
 * The egress listeners of a gateway's shared network namespace (node, started inside it with an
 * IPC channel to the gateway): opens a TCP listener on each address and port named in its
 * argument (JSON `[[host, port], ...]`; port 0: one the kernel picks; default the proxy's one on
 * 127.0.0.1), hands each to the gateway with the namespace it was opened in (or the error that
 * kept it from listening), and exits. The gateway accepts the runs' connections on them itself:
 * no process relays their bytes. Several in one go: one process per run's set of raw TCP
 * destinations and host services, not one per address. `execgate-egress-listener` names it in
 * `ps`. (src/egress/bridge.ts)
 *
 *   node -e "$(cat egress-listener.js)" [JSON]     (stdio: ignore, ignore, pipe, ipc)
 */
'use strict'; /* execgate-egress-listener */
const net = require('net'), fs = require('fs');
const fail = (message) => { process.stderr.write('execgate egress listener: ' + message + '\n'); process.exit(125); };
if (typeof process.send !== 'function') fail('no channel to the gateway');
let namespace = '';
try { namespace = fs.readlinkSync('/proc/self/ns/net'); } catch (e) { fail('cannot read its network namespace: ' + e.message); }
let wanted = [['127.0.0.1', 0]];
try { if (process.argv[1]) wanted = JSON.parse(process.argv[1]); } catch (e) { fail('cannot read the addresses: ' + e.message); }
const open = (index) => {
  if (index >= wanted.length) return process.exit(0);
  const [host, port] = wanted[index];
  const server = net.createServer();
  const sent = (error) => { if (error) fail('cannot hand the listener over: ' + error.message); open(index + 1); };
  server.once('error', (e) => process.send({ namespace, index, error: e.code || e.message }, sent));
  server.listen({ host, port, exclusive: true }, () => process.send({ namespace, index, port: server.address().port }, server, sent));
};
open(0);
process.on('disconnect', () => process.exit(0));
