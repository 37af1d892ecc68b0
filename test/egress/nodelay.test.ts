/*
 * The proxy's TCP sockets send small writes at once (TCP_NODELAY), on both sides of every path:
 * the connection a client made to the proxy's TCP listener (as runs reach the gateway's shared
 * one) and the proxy's connection upstream, for a CONNECT tunnel and a plain-HTTP request passed
 * through. With Nagle's algorithm on either, a relayed write waits for the peer's ACK of the one
 * before it, which a peer delaying its ACKs holds for 40 ms (a tunnelled HTTPS request's first
 * byte, a download's last bytes).
 *
 * What is checked is the kernel's own setting, not the proxy's wish: the sockets are found in
 * this process's descriptors (by their ports in /proc/self/net/tcp) and handed to a python3
 * process that reads the option with getsockopt(2). A socket the test opens without the option
 * is read the same way and must say 0, so the reading itself is shown to tell the two apart.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { EgressProxy } from '../../src/egress/proxy';
import { normalizeNetworkPolicy } from '../../src/policy/egress-settings';
import { makeTempDir } from '../helpers/tmp';

/** This process's TCP sockets (IPv4 loopback): local port, remote port, descriptor. */
function listSockets(): Array<{ local: number; remote: number; fd: number }> {
  const inodes = new Map<string, number>();
  for (const name of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${name}`);
    } catch {
      continue;
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.set(inode, Number(name));
  }
  const sockets: Array<{ local: number; remote: number; fd: number }> = [];
  for (const line of readFileSync('/proc/self/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    const fd = inodes.get(fields[9]!);
    if (fd === undefined) continue;
    sockets.push({ local: parseInt(fields[1]!.split(':')[1]!, 16), remote: parseInt(fields[2]!.split(':')[1]!, 16), fd });
  }
  return sockets;
}

/** TCP_NODELAY of each descriptor, as the kernel has it (read by python3 from copies of them). */
async function readNoDelay(fds: readonly number[]): Promise<number[]> {
  const script = [
    'import socket, sys',
    'n = int(sys.argv[1])',
    'print(" ".join(str(socket.socket(fileno=3 + i).getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)) for i in range(n)))',
  ].join('\n');
  const child = spawn('python3', ['-c', script, String(fds.length)], { stdio: ['ignore', 'pipe', 'pipe', ...fds] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString(); });
  const [code] = await once(child, 'close') as [number];
  if (code !== 0) throw new Error(`python3 exited ${code}: ${err}`);
  return out.trim().split(' ').map(Number);
}

function findOne(sockets: ReturnType<typeof listSockets>, match: (s: { local: number; remote: number }) => boolean, what: string): number {
  const found = sockets.filter(match);
  if (found.length !== 1) throw new Error(`${found.length} sockets for ${what}: ${JSON.stringify(sockets)}`);
  return found[0]!.fd;
}

/** Reads until the head's blank line; resolves the head's text. */
function readHead(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      resolve(text.slice(0, end));
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

describe('the proxy\'s TCP sockets have TCP_NODELAY', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let upstream: Server;
  let listener: Server;
  let proxy: EgressProxy;
  let upstreamPort: number;
  let listenerPort: number;
  /** The upstream's accepted connections, held open until the test ends. */
  const held: Socket[] = [];
  const auth = `Proxy-Authorization: Basic ${Buffer.from('run-nd:secret-nd').toString('base64')}\r\n`;

  beforeAll(async () => {
    tmp = makeTempDir('execgate-egress-nodelay-');
    // Answers nothing: each connection stays open while its sockets are read.
    upstream = createServer((socket) => {
      socket.on('error', () => socket.destroy());
      held.push(socket);
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamPort = (upstream.address() as AddressInfo).port;
    proxy = new EgressProxy({ runtimeDir: tmp.dir, resolver: async () => ['203.0.113.10'], dial: () => ({ host: '127.0.0.1', port: upstreamPort }) });
    await proxy.openRun({ runId: 'run-nd', network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['slow.test'] }), credentials: { username: 'run-nd', password: 'secret-nd' }, shared: true });
    // Served as the gateway serves its listener in the shared network namespace.
    listener = createServer();
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    listenerPort = (listener.address() as AddressInfo).port;
    proxy.serveShared(listener);
  });

  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await proxy.close();
    upstream.close();
    tmp.cleanup();
  });

  /** A client connection to the proxy's listener (without TCP_NODELAY), once the upstream has accepted the proxy's. */
  async function open(request: string, waitForReply: boolean): Promise<Socket> {
    const accepted = held.length;
    const client = connect({ host: '127.0.0.1', port: listenerPort, noDelay: false });
    await once(client, 'connect');
    client.write(request);
    if (waitForReply) expect(await readHead(client)).toMatch(/^HTTP\/1\.1 200/);
    while (held.length === accepted) await new Promise((resolve) => setTimeout(resolve, 5));
    return client;
  }

  test('a CONNECT tunnel: the client\'s connection and the upstream one', async () => {
    const client = await open(`CONNECT slow.test:443 HTTP/1.1\r\nHost: slow.test:443\r\n${auth}\r\n`, true);
    const sockets = listSockets();
    const accepted = findOne(sockets, (s) => s.local === listenerPort && s.remote === client.localPort, 'the proxy\'s side of the client connection');
    const dialled = findOne(sockets, (s) => s.remote === upstreamPort && s.local === held.at(-1)!.remotePort, 'the proxy\'s upstream connection');
    const own = findOne(sockets, (s) => s.local === client.localPort, 'the test\'s client socket');
    expect(await readNoDelay([accepted, dialled, own])).toEqual([1, 1, 0]);
    client.destroy();
  });

  test('a plain-HTTP request passed through: the upstream connection', async () => {
    const client = await open(`GET http://slow.test/ HTTP/1.1\r\nHost: slow.test\r\n${auth}\r\n`, false);
    const sockets = listSockets();
    const accepted = findOne(sockets, (s) => s.local === listenerPort && s.remote === client.localPort, 'the proxy\'s side of the client connection');
    const dialled = findOne(sockets, (s) => s.remote === upstreamPort && s.local === held.at(-1)!.remotePort, 'the proxy\'s upstream connection');
    expect(await readNoDelay([accepted, dialled])).toEqual([1, 1]);
    client.destroy();
  });
});
