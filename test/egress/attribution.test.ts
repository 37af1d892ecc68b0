/*
 * Attribution of a raw TCP connection (egress/attribution.ts) on real sockets and the real /proc:
 * the accepted socket's peer is found in the socket table, its inode in the descriptor table of
 * the process that holds it, and that process in a run's tree. Exactly one run holding it is the
 * connection's run; none, or two (a descriptor passed between runs), is no run's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { attributeConnection } from '../../src/egress/attribution';
import type { RunContext } from '../../src/egress/proxy-core';

let server: Server;
let port = 0;
const accepted: Socket[] = [];
let client: ChildProcess | undefined;

beforeAll(async () => {
  server = createServer((socket) => accepted.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  client?.kill('SIGKILL');
  for (const socket of accepted) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

const run = (pids: number[]): RunContext => ({ pids: new Set(pids), options: { runId: `run-${pids.join('-')}` } }) as unknown as RunContext;

test('the connection is the run whose process tree holds it; no run, or two, is refused', async () => {
  // A child process (a "run") connects and holds the connection open.
  client = spawn(process.execPath, ['-e', `require('net').connect(${port}, '127.0.0.1', () => process.stdout.write('up')); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise((resolve) => client!.stdout!.once('data', resolve));
  while (accepted.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const socket = accepted[0];
  const peer = { address: socket.remoteAddress!, port: socket.remotePort! };
  const local = { address: socket.localAddress!, port: socket.localPort! };
  const mine = run([client.pid!]);
  const other = run([process.pid + 1_000_000]);
  expect(await attributeConnection(process.pid, peer, local, [other, mine])).toEqual({ context: mine });
  // A run whose tree is an ancestor of the client (this process spawned it) holds it too: the tree is followed down.
  const ancestor = run([process.pid]);
  expect(await attributeConnection(process.pid, peer, local, [ancestor])).toEqual({ context: ancestor });
  // Two runs holding it: no run's.
  expect(await attributeConnection(process.pid, peer, local, [mine, ancestor])).toEqual({ refusal: 'no-run:held-by-several-runs' });
  // No run holding it.
  expect(await attributeConnection(process.pid, peer, local, [other])).toEqual({ refusal: 'no-run:not-a-run' });
  // A peer that is not in the table (the client gone), or no namespace.
  expect(await attributeConnection(process.pid, { ...peer, port: 1 }, local, [mine])).toEqual({ refusal: 'no-run:socket-gone' });
  expect(await attributeConnection(undefined, peer, local, [mine])).toEqual({ refusal: 'no-run:namespace-gone' });
});
