/*
 * Plain-HTTP responses passed through as bytes (src/egress/passthrough.ts): every framing an
 * upstream may use arrives whole and exact, the client's kept-alive connection stays in step
 * whatever the upstream sends after its body, and response heads that are ambiguous or malformed
 * are refused rather than passed on. The upstream is a raw TCP server answering each request with
 * the bytes a test scripts for its path, so it can send what no well-behaved server would.
 */
import { once } from 'node:events';
import { Agent, request, type IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { EgressProxy, type EgressRun } from '../../src/egress/proxy';
import type { EgressDecision } from '../../src/egress/proxy-types';
import { parseHostPatterns } from '../../src/egress/hosts';
import { createSentinel } from '../../src/egress/sentinel';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { makeTempDir } from '../helpers/tmp';

const VALUE = 'sk-live-UGFzc1Rocm91Z2hWYWx1ZTEyMzQ1';
const [BINDING] = normalizeSecretBindings([{ ref: 'secret:api', hosts: ['bound.test'], delivery: 'inject' }]);
const BIG = Buffer.from(Array.from({ length: 3 * 1024 * 1024 + 17 }, (_, i) => (i * 7919) % 251));

/** Write `bytes` in pieces of the given sizes, each on its own turn of the event loop. */
async function writeInPieces(socket: Socket, bytes: Buffer, sizes: readonly number[]): Promise<void> {
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    socket.write(bytes.subarray(at, at + size));
    at += size;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function chunked(body: Buffer, size: number): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) {
    const piece = body.subarray(at, at + size);
    parts.push(Buffer.from(`${piece.length.toString(16)};ext=1\r\n`), piece, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\nX-Trailer: t\r\n\r\n'));
  return Buffer.concat(parts);
}

/** What the upstream answers for a path: the bytes, then whether it closes the connection. */
const ANSWERS: Record<string, { bytes: Buffer; close?: boolean; pieces?: number[] }> = {
  '/length': { bytes: Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG.length}\r\nX-Kept: yes\r\n\r\n`), BIG]), pieces: [1, 3, 70_000, 5] },
  '/chunked': { bytes: Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'), chunked(BIG, 100_003)]), pieces: [2, 7, 65_536, 1, 13] },
  '/close': { bytes: Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n'), BIG]), close: true },
  '/continue': { bytes: Buffer.from('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nmade!') },
  '/no-content': { bytes: Buffer.from('HTTP/1.1 204 No Content\r\n\r\n') },
  '/not-modified': { bytes: Buffer.from('HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n') },
  '/head': { bytes: Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG.length}\r\n\r\n`) },
  // A body followed by a whole forged response: the client's next request must not get it.
  '/smuggle': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nrealHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged') },
  '/te-and-length': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\nforged') },
  // A value a run holds, sent back by a host it was never injected into (stored there, say).
  '/echo-value': { bytes: Buffer.from(`HTTP/1.1 200 OK\r\nX-Echo: ${VALUE}\r\nContent-Length: ${VALUE.length + 1}\r\n\r\n${VALUE}\n`) },
  '/lengths-agree': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\nContent-Length: 4\r\n\r\nrealHTTP/1.1 200 OK\r\n\r\n') },
  '/lengths-disagree': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 10\r\n\r\nreal') },
  '/folded': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 4\r\n\r\nreal') },
  '/bare-lf': { bytes: Buffer.from('HTTP/1.1 200 OK\nContent-Length: 4\r\n\r\nreal') },
  '/overlong-head': { bytes: Buffer.from(`HTTP/1.1 200 OK\r\nX-Long: ${'a'.repeat(20_000)}\r\nContent-Length: 4\r\n\r\nreal`) },
  '/bad-chunk': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nreal\r\nzz\r\nmore\r\n0\r\n\r\n') },
  '/short': { bytes: Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this'), close: true },
  '/switch': { bytes: Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw bytes') },
};

describe('plain-HTTP responses passed through as bytes', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let server: Server;
  let proxy: EgressProxy;
  let run: EgressRun;
  let holding: EgressRun;
  const heads: string[] = [];
  const decisions: EgressDecision[] = [];

  beforeAll(async () => {
    tmp = makeTempDir('execgate-egress-passthrough-');
    server = createServer((socket) => {
      socket.on('error', () => socket.destroy());
      let head = '';
      const onData = (chunk: Buffer): void => {
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) return;
        socket.off('data', onData);
        heads.push(head.slice(0, end));
        const path = /^[A-Z]+ (\S+) /.exec(head)![1]!;
        const answer = ANSWERS[path] ?? { bytes: Buffer.from('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n') };
        void writeInPieces(socket, answer.bytes, answer.pieces ?? [answer.bytes.length]).then(() => { if (answer.close) socket.end(); });
      };
      socket.on('data', onData);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    proxy = new EgressProxy({ runtimeDir: tmp.dir, resolver: async () => ['203.0.113.10'], dial: () => ({ host: '127.0.0.1', port }), onDecision: (d) => decisions.push(d) });
    run = await proxy.openRun({ runId: 'run-passthrough', network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bulk.test', 'other.test'] }) });
    holding = await proxy.openRun({
      runId: 'run-holding',
      network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bulk.test', 'bound.test'] }),
      injections: [{ ref: 'secret:api', value: VALUE, sentinel: createSentinel(VALUE), hosts: parseHostPatterns(['bound.test'], 'hosts'), binding: BINDING! }],
    });
  });

  afterAll(async () => {
    await proxy.close();
    server.close();
    tmp.cleanup();
  });

  interface Answer { status: number; headers: IncomingMessage['headers']; body: Buffer; complete: boolean }

  /** `cut`: a connection that ends before any response is an answer too (status 0), not a failure. */
  function fetch(url: string, options: { method?: string; agent?: Agent; slow?: boolean; cut?: boolean; through?: EgressRun } = {}): Promise<Answer & { reused: boolean }> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: (options.through ?? run).socketPath, path: url, method: options.method ?? 'GET', headers: { host: new URL(url).host }, ...(options.agent ? { agent: options.agent } : {}) }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          parts.push(chunk);
          if (options.slow) {
            res.pause();
            setTimeout(() => res.resume(), 1);
          }
        });
        const done = (): void => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts), complete: res.complete, reused: req.reusedSocket });
        res.once('end', done);
        res.once('aborted', done);
        res.once('error', done);
      });
      req.on('error', (error) => (options.cut ? resolve({ status: 0, headers: {}, body: Buffer.alloc(0), complete: false, reused: false }) : reject(error)));
      req.end();
    });
  }

  test.each(['/length', '/chunked', '/close'])('%s: every byte arrives, in order, to a fast and a slow reader', async (path) => {
    for (const slow of [false, true]) {
      const answer = await fetch(`http://bulk.test${path}`, { slow });
      expect(answer.status).toBe(200);
      expect(answer.complete).toBe(true);
      expect(answer.body.equals(BIG)).toBe(true);
    }
    expect(decisions.at(-1)).toMatchObject({ host: 'bulk.test', allowed: true, status: 200, method: 'GET' });
  });

  test('the request head sent upstream is the decided one, on a connection of its own', async () => {
    await fetch('http://bulk.test/length');
    const head = heads.at(-1)!;
    expect(head.startsWith('GET /length HTTP/1.1\r\n')).toBe(true);
    expect(head).toMatch(/\r\nhost: bulk\.test\r\n/i);
    expect(head).toMatch(/\r\nConnection: close$/);
    expect(head).not.toMatch(/proxy-authorization|keep-alive/i);
    const answer = await fetch('http://bulk.test/length', { method: 'POST' });
    expect(answer.status).toBe(200);
    expect(heads.at(-1)).toMatch(/^POST \/length HTTP\/1\.1\r\n[^]*\r\nContent-Length: 0\r\n/);
  });

  test('a run that holds an injected value still has every response read and cleaned, from any host', async () => {
    const passed = await fetch('http://bulk.test/echo-value');
    expect(passed.body.toString()).toBe(`${VALUE}\n`);
    const cleaned = await fetch('http://bulk.test/echo-value', { through: holding });
    expect(cleaned.status).toBe(200);
    expect(cleaned.body.toString()).not.toContain(VALUE);
    expect(String(cleaned.headers['x-echo'])).not.toContain(VALUE);
    expect(cleaned.body.toString()).toMatch(/secret:api/);
  });

  test('lengths that agree are passed on as one', async () => {
    const answer = await fetch('http://bulk.test/lengths-agree');
    expect(answer).toMatchObject({ status: 200, complete: true, body: Buffer.from('real') });
    expect(answer.headers['content-length']).toBe('4');
  });

  test('responses without a body, and interim responses before the final one', async () => {
    expect(await fetch('http://bulk.test/continue')).toMatchObject({ status: 201, complete: true, body: Buffer.from('made!') });
    expect(await fetch('http://bulk.test/no-content')).toMatchObject({ status: 204, complete: true, body: Buffer.alloc(0) });
    expect(await fetch('http://bulk.test/not-modified')).toMatchObject({ status: 304, complete: true, body: Buffer.alloc(0) });
    const head = await fetch('http://bulk.test/head', { method: 'HEAD' });
    expect(head).toMatchObject({ status: 200, complete: true, body: Buffer.alloc(0) });
    expect(head.headers['content-length']).toBe(String(BIG.length));
  });

  test('a kept-alive client never gets bytes an upstream sent after its response as the answer to its next request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await fetch('http://bulk.test/smuggle', { agent });
      expect(first).toMatchObject({ status: 200, body: Buffer.from('real') });
      const second = await fetch('http://other.test/continue', { agent });
      expect(second.reused).toBe(true);
      expect(second).toMatchObject({ status: 201, body: Buffer.from('made!') });
      // Each request was read and decided on its own.
      expect(decisions.slice(-2).map((d) => d.host)).toEqual(['bulk.test', 'other.test']);
    } finally {
      agent.destroy();
    }
  });

  test.each(['/te-and-length', '/lengths-disagree', '/folded', '/bare-lf', '/overlong-head', '/switch'])('%s: an ambiguous or malformed response head is refused with 502, none of it passed on', async (path) => {
    const answer = await fetch(`http://bulk.test${path}`);
    expect(answer.status).toBe(502);
    expect(answer.body.toString()).toMatch(/^execgate egress proxy: refused bulk\.test:80 /);
    expect(answer.body.toString()).not.toMatch(/real|forged|raw bytes/);
    expect(decisions.at(-1)).toMatchObject({ host: 'bulk.test', allowed: false, rule: 'upstream-failed:malformed-response' });
  });

  test.each(['/bad-chunk', '/short'])('%s: a body that breaks off or breaks its framing is cut off at the client, not ended as whole', async (path) => {
    const answer = await fetch(`http://bulk.test${path}`, { cut: true });
    expect([0, 200]).toContain(answer.status);
    expect(answer.complete).toBe(false);
    expect(answer.body.toString()).not.toMatch(/more/);
  });
});
