/*
 * The proxy spoken to directly over its per-run Unix sockets (no sandbox): protocol edges,
 * per-run registration, response redaction of headers and bodies, audit records.
 */
import { request } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { gunzipSync } from 'node:zlib';
import { makeTempDir } from '../helpers/tmp';
import { EgressProxy, type EgressDecision, type EgressRun } from '../../src/egress/proxy';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { parseHostPatterns } from '../../src/egress/hosts';
import { createSentinel } from '../../src/egress/sentinel';
import { makeNames, publicCa, startService, type TestService } from './helpers';

const VALUE = 'sk-live-Qm9vYmFyQmF6UXV4MTIzNDU2';
const SENTINEL = createSentinel(VALUE);
const [HTTP_BODY_BINDING] = normalizeSecretBindings([{ ref: 'secret:api', hosts: ['allowed.test'], delivery: 'inject', http: ['allowed.test'], body: true }]);

let tmp: ReturnType<typeof makeTempDir>;
let allowed: TestService;
let proxy: EgressProxy;
let bound: EgressRun;
let other: EgressRun;
const decisions: EgressDecision[] = [];

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-proxy-');
  allowed = await startService('allowed');
  proxy = new EgressProxy({ ...makeNames({ 'allowed.test': allowed }), upstreamCa: [publicCa.certPem], onDecision: (d) => decisions.push(d), runtimeDir: tmp.dir });
  bound = await proxy.openRun({
    runId: 'run-a',
    network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test', '203.0.113.10:80'] }),
    // Plain HTTP and the body only because the binding says so by name (a local test service).
    injections: [{ ref: 'secret:api', value: VALUE, sentinel: SENTINEL, hosts: parseHostPatterns(['allowed.test'], 'hosts'), binding: HTTP_BODY_BINDING }],
  });
  other = await proxy.openRun({ runId: 'run-b', network: normalizeNetworkPolicy({ mode: 'none' }) });
});

afterAll(async () => {
  await proxy.close();
  await allowed.close();
  tmp.cleanup();
});

beforeEach(() => {
  decisions.length = 0;
  allowed.seen.length = 0;
});

function viaProxy(run: EgressRun, path: string, options: { headers?: Record<string, string>; body?: string[] } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: run.socketPath, path, method: options.body ? 'POST' : 'GET', headers: { host: 'allowed.test', ...options.headers } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => { body += chunk.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    for (const part of options.body ?? []) req.write(part);
    req.end();
  });
}

function rawExchange(run: EgressRun, bytes: Buffer, expect: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(run.socketPath);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      if (Buffer.concat(chunks).length >= expect) {
        socket.destroy();
        resolve(Buffer.concat(chunks));
      }
    });
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
    socket.write(bytes);
  });
}

test('plain HTTP to a host the binding names in `http`, body allowed: sentinel swapped in Authorization and a body written in pieces; echoed value redacted in headers and body', async () => {
  const half = Math.floor(SENTINEL.length / 2);
  const result = await viaProxy(bound, 'http://allowed.test/echo', {
    headers: { authorization: `Bearer ${SENTINEL}`, 'content-length': String(`k=${SENTINEL}`.length) },
    body: [`k=${SENTINEL.slice(0, half)}`, SENTINEL.slice(half)],
  });
  expect(result.status).toBe(200);
  expect(allowed.seen[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
  expect(allowed.seen[0]!.body).toBe(`k=${VALUE}`);
  expect(result.headers['x-echo-auth']).toBe('Bearer [REDACTED:secret:api]');
  expect(result.body).not.toContain(VALUE);
  expect(JSON.parse(result.body).body).toBe('k=[REDACTED:secret:api]');
  expect(decisions).toEqual([expect.objectContaining({ runId: 'run-a', via: 'http', host: 'allowed.test', port: 80, allowed: true, rule: 'allow:allowed.test', injected: ['secret:api'], status: 200 })]);
  expect(JSON.stringify(decisions)).not.toContain(VALUE);
  expect(JSON.stringify(decisions)).not.toContain(SENTINEL);
});

/** A GET (no body: the response is read without Node's client, passthrough.ts) through the run's socket, the body as bytes. */
function getViaProxy(run: EgressRun, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: run.socketPath, path, headers: { host: 'allowed.test', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

test('a request without a body, its response read without Node\'s client: the echoed value redacted in headers and in identity and gzip bodies, the length dropped, an unreadable encoding refused; every decision recorded', async () => {
  const identity = await getViaProxy(bound, 'http://allowed.test/echo', { authorization: `Bearer ${SENTINEL}` });
  expect(identity.status).toBe(200);
  expect(allowed.seen[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
  expect(identity.headers['x-echo-auth']).toBe('Bearer [REDACTED:secret:api]');
  // The masked body is another length than the upstream's: sent chunked, no stale Content-Length.
  expect(identity.headers['content-length']).toBeUndefined();
  expect(identity.headers['transfer-encoding']).toBe('chunked');
  expect(JSON.parse(identity.body.toString()).headers.authorization).toBe('Bearer [REDACTED:secret:api]');

  const gzip = await getViaProxy(bound, 'http://allowed.test/echo?gzip', { authorization: `Bearer ${SENTINEL}`, 'accept-encoding': 'gzip, zstd' });
  expect(gzip.status).toBe(200);
  // Only what the masker reads through is asked for; the body comes back in its encoding, masked.
  expect(allowed.seen[1]!.headers['accept-encoding']).toBe('gzip');
  expect(gzip.headers['content-encoding']).toBe('gzip');
  const unzipped = gunzipSync(gzip.body).toString();
  expect(unzipped).not.toContain(VALUE);
  expect(JSON.parse(unzipped).headers.authorization).toBe('Bearer [REDACTED:secret:api]');

  const weird = await getViaProxy(bound, 'http://allowed.test/weird-encoding', { authorization: `Bearer ${SENTINEL}` });
  expect(weird.status).toBe(502);
  expect(weird.body.toString()).not.toContain(VALUE);

  const head = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const req = request({ socketPath: bound.socketPath, path: 'http://allowed.test/echo', method: 'HEAD', headers: { host: 'allowed.test', authorization: `Bearer ${SENTINEL}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers));
    });
    req.on('error', reject);
    req.end();
  });
  expect(head['x-echo-auth']).toBe('Bearer [REDACTED:secret:api]');

  expect(decisions).toEqual([
    expect.objectContaining({ runId: 'run-a', via: 'http', method: 'GET', allowed: true, injected: ['secret:api'], status: 200 }),
    expect.objectContaining({ runId: 'run-a', via: 'http', method: 'GET', allowed: true, injected: ['secret:api'], status: 200 }),
    expect.objectContaining({ runId: 'run-a', via: 'http', method: 'GET', allowed: false, rule: 'response-unreadable', injected: ['secret:api'], status: 502 }),
    expect.objectContaining({ runId: 'run-a', via: 'http', method: 'HEAD', allowed: true, injected: ['secret:api'], status: 200 }),
  ]);
  expect(JSON.stringify(decisions)).not.toContain(VALUE);
});

test('a cleaned body of many reads comes through byte for byte, each value masked where it stands (no read buffer changed under the masker)', async () => {
  // Long runs without a line break (the wrap gate holds those chunks by reference), a break now and then, the value in between.
  const parts: string[] = [];
  for (let i = 0; i < 20_000; i += 1) {
    // Records that differ, with the value now and then: a view of a read buffer used again would show.
    parts.push(`~${i}~`.repeat(20 + (i % 30)));
    parts.push(i === 0 ? `\n${VALUE}\n` : i % 4999 === 0 ? ` ${VALUE} ` : ' ');
  }
  const stored = parts.join('');
  await new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: allowed.httpPort, path: '/store', method: 'POST' }, (res) => { res.resume(); res.on('end', resolve); });
    req.on('error', reject);
    req.end(stored);
  });
  const result = await getViaProxy(bound, 'http://allowed.test/read', { authorization: `Bearer ${SENTINEL}` });
  expect(result.status).toBe(200);
  expect(result.body.length).toBeGreaterThan(3 * 1024 * 1024);
  expect(result.body.toString('latin1') === stored.split(VALUE).join('[REDACTED:secret:api]')).toBe(true);
});

test('each run is decided by its own socket: the same request is refused on a `none` run', async () => {
  const result = await viaProxy(other, 'http://allowed.test/echo');
  expect(result.status).toBe(403);
  expect(result.headers['x-execgate-egress']).toBe('refused mode:none');
  expect(result.body).toBe('execgate egress proxy: refused allowed.test:80 (sandbox.network is none: nothing leaves the run).\n');
  expect(allowed.seen).toHaveLength(0);
  expect(decisions).toEqual([expect.objectContaining({ runId: 'run-b', allowed: false, rule: 'mode:none' })]);
});

test('a Host header that disagrees with the URL is refused (no fronting through the plain proxy)', async () => {
  const result = await viaProxy(bound, 'http://allowed.test/echo', { headers: { host: 'attacker.test' } });
  expect(result.status).toBe(403);
  expect(decisions[0]).toMatchObject({ allowed: false, rule: 'host-mismatch', reason: expect.stringContaining('attacker.test') });
  expect(allowed.seen).toHaveLength(0);
});

test('an origin-form request (not a proxy request) gets 400; a bad CONNECT target 403', async () => {
  expect((await viaProxy(bound, '/just-a-path')).status).toBe(400);
  const reply = await rawExchange(bound, Buffer.from('CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n'), 12);
  expect(reply.toString()).toMatch(/^HTTP\/1\.1 403 execgate refused allowed.test \(not a host and port the proxy can read\)\r\n/);
  expect(decisions).toEqual([
    expect.objectContaining({ via: 'http', allowed: false, rule: 'bad-target', status: 400 }),
    expect.objectContaining({ via: 'connect', allowed: false, rule: 'bad-target' }),
  ]);
});

test('SOCKS5: an IP literal only when a pattern names it, with its port', async () => {
  const socksConnect = (a: number[], port: number): Buffer => Buffer.from([0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, ...a, port >> 8, port & 0xff]);
  const ok = await rawExchange(bound, socksConnect([203, 0, 113, 10], 80), 12);
  expect([...ok.subarray(0, 4)]).toEqual([0x05, 0x00, 0x05, 0x00]);
  const refused = await rawExchange(bound, socksConnect([203, 0, 113, 10], 81), 12);
  expect([...refused.subarray(0, 4)]).toEqual([0x05, 0x00, 0x05, 0x02]);
  const domain = Buffer.from('metadata.test');
  const rebind = await rawExchange(
    await proxy.openRun({ runId: 'run-c', network: normalizeNetworkPolicy({ mode: 'open' }) }),
    Buffer.from([0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x03, domain.length, ...domain, 0, 80]),
    12,
  );
  expect([...rebind.subarray(0, 4)]).toEqual([0x05, 0x00, 0x05, 0x04]);
  expect(decisions.map((d) => [d.runId, d.via, d.host, d.port, d.allowed, d.rule])).toEqual([
    ['run-a', 'socks', '203.0.113.10', 80, true, 'allow:203.0.113.10:80'],
    ['run-a', 'socks', '203.0.113.10', 81, false, 'not-allowlisted'],
    ['run-c', 'socks', 'metadata.test', 80, false, 'address:metadata'],
  ]);
});

test('closing a run removes its socket; the proxy refuses new runs after close', async () => {
  const run = await proxy.openRun({ runId: 'run-d', network: normalizeNetworkPolicy({ mode: 'open' }) });
  await run.close();
  await expect(viaProxy(run, 'http://allowed.test/')).rejects.toMatchObject({ code: 'ENOENT' });
  const closed = new EgressProxy({ runtimeDir: tmp.dir });
  await closed.close();
  await expect(closed.openRun({ runId: 'x', network: normalizeNetworkPolicy({ mode: 'open' }) })).rejects.toMatchObject({ code: 'EXECGATE_ERR_GATEWAY_CLOSED' });
});

test('a runtime directory that cannot be used is a coded error', () => {
  expect(() => new EgressProxy({ runtimeDir: '/nonexistent/dir' })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_EGRESS_PROXY_FAILED' }));
});

test('a destination that accepts but never completes TLS gets a 502 after the connect limit, not a hang', async () => {
  const silent = createServer(() => { /* accepts and never speaks */ });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const seen: EgressDecision[] = [];
  const slow = new EgressProxy({
    runtimeDir: tmp.dir,
    resolver: async () => ['203.0.113.99'],
    dial: () => ({ host: '127.0.0.1', port: (silent.address() as AddressInfo).port }),
    connectTimeout: 300,
    onDecision: (d) => seen.push(d),
  });
  try {
    const run = await slow.openRun({
      runId: 'run-e',
      network: normalizeNetworkPolicy({ mode: 'open' }),
      injections: [{ ref: 'secret:api', value: VALUE, sentinel: SENTINEL, hosts: parseHostPatterns(['silent.test'], 'hosts') }],
    });
    const socket = connect(run.socketPath);
    socket.write('CONNECT silent.test:443 HTTP/1.1\r\nHost: silent.test:443\r\n\r\n');
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest({ createConnection: () => tlsConnect({ socket, servername: 'silent.test', ca: slow.getCaCertificate() }), host: 'silent.test', port: 443, path: '/' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(502);
    expect(seen.at(-1)).toMatchObject({ via: 'https-intercepted', host: 'silent.test', allowed: false, rule: 'upstream-failed:ETIMEDOUT' });
  } finally {
    await slow.close();
    silent.close();
  }
});

describe('the shared socket: a connection belongs to the run whose credentials it presents', () => {
  const auth = (username: string, password: string): string => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const credsA = { username: 'run-sharedA', password: 'pw-A-0123456789abcdef' };
  const credsB = { username: 'run-sharedB', password: 'pw-B-0123456789abcdef' };
  let a: EgressRun;
  let b: EgressRun;

  beforeAll(async () => {
    a = await proxy.openRun({
      runId: 'shared-a', shared: true, credentials: credsA,
      network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test'] }),
      injections: [{ ref: 'secret:api', value: VALUE, sentinel: SENTINEL, hosts: parseHostPatterns(['allowed.test'], 'hosts'), binding: HTTP_BODY_BINDING }],
    });
    b = await proxy.openRun({ runId: 'shared-b', shared: true, credentials: credsB, network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test'] }) });
  });

  test('both runs have the one socket; each request gets its own run\'s rules and injections', async () => {
    expect(a.socketPath).toBe(b.socketPath);
    expect(a.socketPath).toBe(await proxy.sharedSocketPath());
    const viaA = await viaProxy(a, 'http://allowed.test/a', { headers: { 'proxy-authorization': auth(credsA.username, credsA.password), authorization: `Bearer ${SENTINEL}` } });
    const viaB = await viaProxy(b, 'http://allowed.test/b', { headers: { 'proxy-authorization': auth(credsB.username, credsB.password), authorization: `Bearer ${SENTINEL}` } });
    expect([viaA.status, viaB.status]).toEqual([200, 200]);
    // To run B, A's sentinel is text: B has no injection (and no detector) for it.
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/a', `Bearer ${VALUE}`], ['/b', `Bearer ${SENTINEL}`]]);
    expect(decisions.map((d) => [d.runId, d.injected])).toEqual([['shared-a', ['secret:api']], ['shared-b', []]]);
  });

  test('no credentials, an unknown user, or a known user with another run\'s password: 407, nothing sent', async () => {
    for (const header of [undefined, auth('run-nobody', credsA.password), auth(credsA.username, credsB.password)]) {
      const result = await viaProxy(a, 'http://allowed.test/x', { headers: header ? { 'proxy-authorization': header } : {} });
      expect(result.status).toBe(407);
    }
    const connect = await rawExchange(a, Buffer.from(`CONNECT allowed.test:443 HTTP/1.1\r\nProxy-Authorization: ${auth(credsA.username, 'wrong')}\r\n\r\n`), 12);
    expect(connect.toString()).toMatch(/^HTTP\/1\.1 407/);
    const u = Buffer.from(credsA.username);
    const p = Buffer.from('wrong');
    const socks = await rawExchange(a, Buffer.from([0x05, 0x01, 0x02, 0x01, u.length, ...u, p.length, ...p]), 4);
    expect([...socks.subarray(0, 4)]).toEqual([0x05, 0x02, 0x01, 0x01]);
    expect(allowed.seen).toHaveLength(0);
    expect(decisions.every((d) => d.allowed === false && d.rule === 'proxy-auth')).toBe(true);
  });

  test('closing a run revokes its credentials and ends its open tunnels; the other run goes on', async () => {
    const run = await proxy.openRun({ runId: 'shared-c', shared: true, credentials: { username: 'run-sharedC', password: 'pw-C' }, network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test'] }) });
    const tunnel = connect(run.socketPath);
    tunnel.write(`CONNECT allowed.test:80 HTTP/1.1\r\nProxy-Authorization: ${auth('run-sharedC', 'pw-C')}\r\n\r\n`);
    const established = await new Promise<string>((resolve) => tunnel.once('data', (chunk: Buffer) => resolve(chunk.toString())));
    expect(established).toMatch(/^HTTP\/1\.1 200/);
    const ended = new Promise<void>((resolve) => tunnel.once('close', () => resolve()));
    await run.close();
    await ended;
    const late = await viaProxy(run, 'http://allowed.test/late', { headers: { 'proxy-authorization': auth('run-sharedC', 'pw-C') } });
    expect(late.status).toBe(407);
    const still = await viaProxy(b, 'http://allowed.test/still', { headers: { 'proxy-authorization': auth(credsB.username, credsB.password) } });
    expect(still.status).toBe(200);
    expect(allowed.seen.map((s) => s.url)).toEqual(['/still']);
  });

  test('a shared run without credentials is refused (it could not be told apart)', async () => {
    await expect(proxy.openRun({ runId: 'shared-d', shared: true, network: normalizeNetworkPolicy({ mode: 'open' }) })).rejects.toMatchObject({ code: 'EXECGATE_ERR_EGRESS_PROXY_FAILED' });
  });
});

test('close() ends connections on the shared socket that never said which run they are for', async () => {
  const own = new EgressProxy({ runtimeDir: tmp.dir });
  const path = await own.sharedSocketPath();
  const idle = connect(path);
  await new Promise<void>((resolve) => idle.once('connect', () => resolve()));
  const ended = new Promise<void>((resolve) => idle.once('close', () => resolve()));
  await own.close();
  await ended;
});
