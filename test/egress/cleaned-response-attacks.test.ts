/*
 * Adversarial tests of the cleaned response path: a request without a body, into which the proxy
 * injected a value, whose response is read without Node's HTTP client (passthrough.ts with a
 * ResponseCleaner, forward.ts) and cleaned (redact-response.ts). The upstream is a raw TCP server
 * that has the value (it reads it from the request, or serves one it stored earlier) and tries to
 * hand it back through the response's framing, its interim responses, its fields and its
 * encodings. Whatever the client receives (fields and body, decoded as its encoding says) must not
 * hold the value, its base64 or its hex. Where a finding was shared with the response read by
 * Node's client (a request with a body), that path is tried too; the last test goes through curl
 * in a sandboxed run.
 */
import { request } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { constants as zlibConstants, createGzip, gunzipSync, gzipSync } from 'node:zlib';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { EgressProxy, type EgressDecision, type EgressRun } from '../../src/egress/proxy';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { parseHostPatterns } from '../../src/egress/hosts';
import { createSentinel } from '../../src/egress/sentinel';
import { makeNames, publicCa, type TestService } from './helpers';

const VALUE = 'sk-live-Zr4Qm9vYmFyQmF6UXV4MTIzNDU2';
const SENTINEL = createSentinel(VALUE);
const [BINDING] = normalizeSecretBindings([{ ref: 'secret:api', hosts: ['evil.test'], delivery: 'inject', http: ['evil.test'] }]);
const FORMS = [VALUE, Buffer.from(VALUE).toString('base64').slice(0, 40), Buffer.from(VALUE).toString('hex')];

type Scenario = (socket: Socket, value: string, method: string) => void;

/** Responses by path: each gets the value the proxy injected into the request's Authorization. */
const SCENARIOS: Record<string, Scenario> = {
  // Every byte its own chunk, with the value in each chunk extension.
  '/chunk-split': (s, v) => {
    const body = `{"auth":"Bearer ${v}"}`;
    let out = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
    for (const c of body) out += `1;x=${v}\r\n${c}\r\n`;
    s.end(`${out}0\r\n\r\n`);
  },
  '/trailer': (s, v) => s.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Leak\r\n\r\n2\r\nok\r\n0\r\nX-Leak: ${v}\r\n\r\n`),
  // A length shorter than the body, then a second response on the same connection.
  '/short-length': (s, v) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok${v}HTTP/1.1 200 OK\r\nContent-Length: ${v.length}\r\n\r\n${v}`),
  // A length longer than the body: the value whole, then the connection closes.
  '/long-length': (s, v) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nx ${v} y`),
  '/length-and-chunked': (s, v) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${v.length.toString(16)}\r\n${v}\r\n0\r\n\r\n`),
  '/interim': (s, v) => s.end(`HTTP/1.1 100 Continue\r\nX-Leak: ${v}\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </${v}>; rel=preload\r\nX-Leak: ${v}\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: ${v.length}\r\n\r\n${v}`),
  '/http10': (s, v) => s.end(`HTTP/1.0 200 OK\r\nX-A: ${v}\r\n\r\nbody ${v} end`),
  '/head-body': (s, v) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${v.length}\r\nX-A: ${v}\r\n\r\n${v}`),
  '/obs-fold': (s, v) => s.end(`HTTP/1.1 200 OK\r\nX-A: Bearer\r\n ${v}\r\nContent-Length: 2\r\n\r\nok`),
  // The value as a field's name (a token, as the value is).
  '/field-name': (s, v) => s.end(`HTTP/1.1 200 OK\r\nX-${v}: 1\r\nContent-Length: 2\r\n\r\nok`),
  // Written as UTF-8 (the value has a character beyond ASCII): the field's bytes are the value's UTF-8 bytes.
  '/utf8-field': (s, v) => s.end(`HTTP/1.1 200 OK\r\nX-A: Bearer ${v}\r\nContent-Length: 2\r\n\r\nok`),
  '/repeated': (s, v) => s.end(`HTTP/1.1 200 OK\r\nX-A: ${v}\r\nX-A: ${v}\r\nSet-Cookie: a=${v}\r\nSet-Cookie: b=${v}\r\nLocation: /${v}\r\nContent-Length: 2\r\n\r\nok`),
  // Encoding lies: gzip declared, plain sent; repeated fields that join to an unreadable coding.
  '/gzip-lie': (s, v) => s.end(`HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${v.length}\r\n\r\n${v}`),
  '/encoding-repeated': (s, v) => s.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n'), gzipSync(gzipSync(v))])),
  '/encoding-spelled': (s, v) => s.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Encoding:  GZip \r\nConnection: close\r\n\r\n'), gzipSync(`a ${v} b`)])),
  // gzip flushed after every byte, each output its own 1-byte chunk: the value and its base64 and hex cross every boundary.
  '/gzip-bytewise': (s, v) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n');
    const text = `a ${v} b ${Buffer.from(v).toString('base64')} c ${Buffer.from(v).toString('hex')} d`;
    const zip = createGzip();
    zip.on('data', (chunk: Buffer) => { for (const byte of chunk) s.write(`1\r\n${String.fromCharCode(byte)}\r\n`, 'latin1'); });
    zip.on('end', () => s.end('0\r\n\r\n'));
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += 1) zip.write(bytes.subarray(i, i + 1), () => zip.flush(zlibConstants.Z_SYNC_FLUSH));
    zip.end();
  },
  // Two gzip members back to back, the value split between them.
  '/gzip-members': (s, v) => s.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n'), gzipSync(`first ${v.slice(0, 12)}`), gzipSync(v.slice(12))])),
  '/reason-phrase': (s, v) => s.end(`HTTP/1.1 200 ${v}\r\nContent-Length: 2\r\n\r\nok`),
  // A 204 or 304 has no body: what follows its head is not read.
  '/no-content': (s, v) => s.end(`HTTP/1.1 204 No Content\r\nContent-Length: ${v.length}\r\n\r\n${v}`),
  // A small gzip that inflates to 64 MiB of zeros, the value at its end.
  '/gzip-bomb': (s, v) => s.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n'), gzipSync(Buffer.concat([Buffer.alloc(64 << 20), Buffer.from(v)]))])),
  // base64 of the value wrapped at 60 columns inside JSON, one byte per read.
  '/wrapped': (s, v) => {
    const encoded = Buffer.from(`xx${v}yy`).toString('base64').replace(/.{60}/g, '$&\\n');
    const body = `{"content":"${encoded}"}`;
    s.write('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n');
    let i = 0;
    const next = (): void => {
      if (i >= body.length) return void s.end();
      s.write(body[i++], next);
    };
    next();
  },
  // The value whole in one chunk, then the connection closes in the middle of the next.
  '/close-mid-chunk': (s, v) => s.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${(v.length + 2).toString(16)}\r\n<${v}>\r\n20\r\n${v.slice(0, 10)}`),
};

let tmp: ReturnType<typeof makeTempDir>;
let names: ReturnType<typeof makeNames>;
let upstream: Server;
let proxy: EgressProxy;
let run: EgressRun;
/** A run whose value has a character beyond ASCII. */
let wide: EgressRun;
const WIDE = 'sk-live-7Hq2x9Zr\u00e9Kp4Qm9vYmFy';
const WIDE_SENTINEL = createSentinel(WIDE);
let stored = '';
/** Upstream connections still open. */
const open = new Set<Socket>();
const decisions: EgressDecision[] = [];

function startUpstream(): Promise<Server> {
  const server = createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    let spoken = false;
    socket.on('data', (chunk) => {
      if (spoken) return;
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      spoken = true;
      const [method, path] = head.split(' ');
      const value = /\r\nauthorization: Bearer ([^\r]*)/i.exec(head)?.[1] ?? '';
      if (value) stored = value;
      if (path === '/never-ends') {
        // A 10 GB length, a little of it, then nothing more: the connection must not outlive the client.
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n${'z\n'.repeat(500)}`);
        return;
      }
      const scenario = SCENARIOS[path!];
      if (!scenario) return void socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      scenario(socket, value, method!);
    });
    // Serves the value stored from an earlier request before reading this one (a server that speaks first).
    if (stored && first) {
      first = false;
      socket.write(`HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nstored ${stored} `);
      socket.end();
    }
  });
  let first = false;
  speakFirst = (): void => { first = true; };
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
let speakFirst: () => void = () => undefined;

beforeAll(async () => {
  tmp = makeTempDir('execgate-cleaned-attacks-');
  upstream = await startUpstream();
  const port = (upstream.address() as AddressInfo).port;
  const service: TestService = { name: 'evil', httpPort: port, httpsPort: port, seen: [], connections: 0, close: async () => undefined };
  names = makeNames({ 'evil.test': service });
  proxy = new EgressProxy({ ...names, upstreamCa: [publicCa.certPem], onDecision: (d) => decisions.push(d), runtimeDir: tmp.dir });
  run = await proxy.openRun({
    runId: 'run-evil',
    network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['evil.test'] }),
    injections: [{ ref: 'secret:api', value: VALUE, sentinel: SENTINEL, hosts: parseHostPatterns(['evil.test'], 'hosts'), binding: BINDING }],
  });
  wide = await proxy.openRun({
    runId: 'run-wide',
    network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['evil.test'] }),
    injections: [{ ref: 'secret:api', value: WIDE, sentinel: WIDE_SENTINEL, hosts: parseHostPatterns(['evil.test'], 'hosts'), binding: BINDING }],
  });
});

afterAll(async () => {
  await proxy.close();
  for (const socket of open) socket.destroy();
  await new Promise((resolve) => upstream.close(resolve));
  tmp.cleanup();
});

beforeEach(() => {
  decisions.length = 0;
});

interface Got { status: number; raw: string[]; body: Buffer; complete: boolean }

/** A bodiless request through the run's socket with the sentinel in Authorization; what came back, whole or cut off. */
function fetchVia(path: string, method = 'GET', headers: Record<string, string> = {}, body?: string, through = run, sentinel = SENTINEL): Promise<Got> {
  return new Promise((resolve) => {
    const got: Got = { status: 0, raw: [], body: Buffer.alloc(0), complete: false };
    const chunks: Buffer[] = [];
    const done = (): void => resolve({ ...got, body: Buffer.concat(chunks) });
    const req = request({ socketPath: through.socketPath, path: `http://evil.test${path}`, method, headers: { host: 'evil.test', authorization: `Bearer ${sentinel}`, ...headers } }, (res) => {
      got.status = res.statusCode ?? 0;
      got.raw = [...res.rawHeaders];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => { got.complete = res.complete; done(); });
      res.on('error', done);
      res.on('aborted', done);
    });
    req.on('error', done);
    req.end(body);
  });
}

/** Everything the client got, its body also decoded when it says gzip and decodes. */
function seen(got: Got): string {
  let text = `${got.raw.join('\n')}\n${got.body.toString('latin1')}`;
  const gzip = got.raw.some((field, i) => i % 2 === 0 && field.toLowerCase() === 'content-encoding' && /gzip/i.test(got.raw[i + 1]!));
  if (gzip) {
    try {
      text += gunzipSync(got.body, { finishFlush: zlibConstants.Z_SYNC_FLUSH }).toString('latin1');
    } catch {
      // A body cut off whose gzip does not decode: its raw bytes were checked above.
    }
  }
  return text;
}

function expectNoValue(got: Got): void {
  const text = seen(got);
  for (const form of FORMS) expect(text).not.toContain(form);
}

describe('framing', () => {
  test('a value split over one-byte chunks, each chunk extension holding it: masked; extensions dropped', async () => {
    const got = await fetchVia('/chunk-split');
    expect(got.status).toBe(200);
    expectNoValue(got);
    expect(got.body.toString()).toBe('{"auth":"Bearer [REDACTED:secret:api]"}');
  });

  test('a value in a trailer: dropped (trailers are not passed on)', async () => {
    const got = await fetchVia('/trailer');
    expect(got.body.toString()).toBe('ok');
    expectNoValue(got);
  });

  test('a Content-Length shorter than the body, a second response pipelined after it: only the length is read', async () => {
    const got = await fetchVia('/short-length');
    expect(got.body.toString()).toBe('ok');
    expectNoValue(got);
  });

  test('a Content-Length longer than the body: the value whole masked, the response cut off', async () => {
    const got = await fetchVia('/long-length');
    expect(got.complete).toBe(false);
    expectNoValue(got);
  });

  test('both Content-Length and chunked: refused with 502', async () => {
    const got = await fetchVia('/length-and-chunked');
    expect(got.status).toBe(502);
    expectNoValue(got);
  });

  test('100 Continue and 103 Early Hints with the value in their fields: dropped, the final body masked', async () => {
    const got = await fetchVia('/interim');
    expect(got.status).toBe(200);
    expect(got.body.toString()).toBe('[REDACTED:secret:api]');
    expectNoValue(got);
  });

  test('HTTP/1.0 with a close-delimited body: fields and body masked', async () => {
    const got = await fetchVia('/http10');
    expect(got.body.toString()).toBe('body [REDACTED:secret:api] end');
    expectNoValue(got);
  });

  test('a response to HEAD with a body: the body is not read', async () => {
    const got = await fetchVia('/head-body', 'HEAD');
    expect(got.status).toBe(200);
    expect(got.body.length).toBe(0);
    expectNoValue(got);
  });

  test('an upstream that closes in the middle of a chunk: cut off, nothing of the value', async () => {
    const got = await fetchVia('/close-mid-chunk');
    expect(got.complete).toBe(false);
    expectNoValue(got);
  });

  test('a server that speaks first, serving the value it stored from an earlier request: masked', async () => {
    await fetchVia('/http10');
    speakFirst();
    const got = await fetchVia('/anything');
    expect(got.body.toString()).toContain('stored [REDACTED:secret:api]');
    expectNoValue(got);
  });

  for (const method of ['GET', 'POST']) {
    test(`${method}: a 10 GB Content-Length that never comes: the client gets what came, and the upstream connection closes when the client goes`, async () => {
      const before = open.size;
      let stage = 'no response';
      await new Promise<void>((resolve) => {
        const req = request({ socketPath: run.socketPath, path: 'http://evil.test/never-ends', method, headers: { host: 'evil.test', authorization: `Bearer ${SENTINEL}`, ...(method === 'POST' ? { 'content-length': '2' } : {}) } }, (res) => {
          stage = 'head';
          res.once('data', () => {
            stage = 'data';
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => undefined);
        req.end(method === 'POST' ? 'hi' : undefined);
        setTimeout(() => { if (stage !== 'data') { req.destroy(); resolve(); } }, 8000).unref();
      });
      expect(stage).toBe('data');
      // The proxy's side closes its upstream connection: waited for by event, not by time.
      await new Promise<void>((resolve) => {
        const check = (): void => (open.size <= before ? resolve() : void setTimeout(check, 5));
        check();
      });
      expect(open.size).toBeLessThanOrEqual(before);
    }, 20_000);
  }
});

describe('fields', () => {
  test('the value as the status line\'s reason phrase: not passed on', async () => {
    const got = await fetchVia('/reason-phrase');
    expect(got.status).toBe(200);
    expectNoValue(got);
  });

  test('a 204 followed by a body holding the value: the body is not read', async () => {
    const got = await fetchVia('/no-content');
    expect(got.status).toBe(204);
    expect(got.body.length).toBe(0);
    expectNoValue(got);
  });

  test('a field folded onto the next line (obs-fold) to split the value: refused with 502', async () => {
    const got = await fetchVia('/obs-fold');
    expect(got.status).toBe(502);
    expectNoValue(got);
  });

  test('a value beyond ASCII sent back as its UTF-8 bytes in a field: masked (read without Node\'s client and with it)', async () => {
    for (const [method, body] of [['GET', undefined], ['POST', 'hi']] as const) {
      const got = await fetchVia('/utf8-field', method, body ? { 'content-length': '2' } : {}, body, wide, WIDE_SENTINEL);
      expect(got.status).toBe(200);
      // The client reads the field's bytes: as UTF-8 they must not spell the value.
      const bytes = Buffer.from(got.raw.join('\n'), 'latin1').toString('utf8');
      expect(bytes).not.toContain(WIDE);
      expect(bytes).toContain('Bearer [REDACTED:secret:api]');
    }
  });

  test('repeated fields, Set-Cookie and Location holding the value: each masked', async () => {
    const got = await fetchVia('/repeated');
    expect(got.status).toBe(200);
    expectNoValue(got);
    expect(got.raw.filter((_, i) => i % 2 === 1 && _.includes('[REDACTED:secret:api]')).length).toBe(5);
  });

  test('the value as a field name: the field is left out (read without Node\'s client and with it)', async () => {
    const got = await fetchVia('/field-name');
    expect(got.status).toBe(200);
    expect(got.body.toString()).toBe('ok');
    expectNoValue(got);
    // A request with a body is still read by Node's client; the same fields are cleaned there.
    const posted = await fetchVia('/field-name', 'POST', { 'content-length': '2' }, 'hi');
    expect(posted.status).toBe(200);
    expectNoValue(posted);
  });
});

describe('encodings', () => {
  test('gzip declared, plain bytes sent: cut off, the value not passed on', async () => {
    const got = await fetchVia('/gzip-lie', 'GET', { 'accept-encoding': 'gzip' });
    expect(got.complete).toBe(false);
    expectNoValue(got);
  });

  test('Content-Encoding: gzip twice (gzip inside gzip): refused with 502', async () => {
    const got = await fetchVia('/encoding-repeated', 'GET', { 'accept-encoding': 'gzip' });
    expect(got.status).toBe(502);
    expectNoValue(got);
  });

  test('`Content-Encoding:  GZip `: decoded and masked', async () => {
    const got = await fetchVia('/encoding-spelled', 'GET', { 'accept-encoding': 'gzip' });
    expect(got.status).toBe(200);
    expectNoValue(got);
    expect(gunzipSync(got.body).toString()).toBe('a [REDACTED:secret:api] b');
  });

  test('gzip flushed after every byte, sent one byte a chunk: the value, its base64 and hex masked across every boundary', async () => {
    const got = await fetchVia('/gzip-bytewise', 'GET', { 'accept-encoding': 'gzip' });
    expect(got.status).toBe(200);
    expectNoValue(got);
    expect(gunzipSync(got.body).toString()).toMatch(/^a \[REDACTED:secret:api\] b \S*REDACTED\S* c \S*REDACTED\S* d$/);
  });

  test('two gzip members, the value split between them: masked', async () => {
    const got = await fetchVia('/gzip-members', 'GET', { 'accept-encoding': 'gzip' });
    expect(got.status).toBe(200);
    expectNoValue(got);
    expect(gunzipSync(got.body).toString()).toBe('first [REDACTED:secret:api]');
  });

  test('a gzip bomb (64 MiB of zeros) with the value at its end: streamed through, the value masked', async () => {
    const got = await fetchVia('/gzip-bomb', 'GET', { 'accept-encoding': 'gzip' });
    expect(got.status).toBe(200);
    expectNoValue(got);
    const text = gunzipSync(got.body);
    expect(text.length).toBe((64 << 20) + '[REDACTED:secret:api]'.length);
  });

  test('base64 wrapped at 60 columns inside JSON, one byte a read: masked in place or cut off, never whole', async () => {
    const got = await fetchVia('/wrapped');
    const encoded = Buffer.from(`xx${VALUE}yy`).toString('base64');
    expect(got.body.toString()).toContain('"content":"');
    expect(seen(got).replace(/\\n/g, '')).not.toContain(encoded.slice(4, encoded.length - 4));
  });
});

const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

maybe('in a sandboxed run, through curl', () => {
  test('the value as a field name, and a value beyond ASCII in a field as UTF-8: neither reaches the command, even reversed', async () => {
    const dir = join(tmp.dir, 'gateway');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'policy.yaml'), [
      'version: 1',
      'sandbox: { mode: required, network: { mode: allowlist, allow: [evil.test] } }',
      'secrets:',
      '  bind:',
      '    - { ref: "secret:api", hosts: [evil.test], delivery: inject, http: [evil.test] }',
      '    - { ref: "secret:wide", hosts: [evil.test], delivery: inject, http: [evil.test] }',
    ].join('\n'));
    const values: Record<string, string> = { api: VALUE, wide: WIDE };
    const gateway = createGateway({
      home: join(dir, 'home'), env: baseEnv({}), cwd: dir, policyFile: join(dir, 'policy.yaml'),
      sources: [{ name: 'test', kinds: ['secret' as const], lookup: (_kind: string, id: string) => (values[id] === undefined ? { found: false as const } : { found: true as const, value: values[id]! }) }],
      egress: { ...names, upstreamCa: [publicCa.certPem], runtimeDir: dir },
    });
    try {
      // The output masker would hide the value itself: the command reverses what it got.
      const reverse = `python3 -c 'import sys; print(sys.stdin.buffer.read().decode("utf8", "replace")[::-1])'`;
      const result = await gateway.exec({
        command: [
          `curl -sS --max-time 20 -D - -H "Authorization: Bearer <<secret:api>>" http://evil.test/field-name | ${reverse}`,
          `curl -sS --max-time 20 -D - -H "Authorization: Bearer <<secret:wide>>" http://evil.test/utf8-field | ${reverse}`,
          'echo "[done]"',
        ].join('\n'),
        cwd: dir, mode: 'sync', timeout: 60_000,
      });
      const output = result.stdout + result.stderr;
      expect(output).toContain('[done]');
      expect(output).toContain(reversed('Bearer [REDACTED:secret:wide]'));
      for (const leak of [VALUE, WIDE, reversed(VALUE), reversed(WIDE)]) expect(output).not.toContain(leak);
    } finally {
      await gateway.close();
    }
  });
});

function reversed(text: string): string {
  return [...text].reverse().join('');
}
