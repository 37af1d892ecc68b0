/*
 * The proxy's data path at its edges: sentinels swapped and values redacted however a stream is
 * cut into chunks (small and large chunks, several secrets, gzip), and tunnels that deliver every
 * byte when the server closes the connection right after sending (the tail of a download is still
 * in the proxy's buffers then).
 */
import fc from 'fast-check';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { BodyScan, getSwaps, SentinelInBody, SwapStream } from '../../src/egress/inject';
import { createSentinelDetector } from '../../src/egress/placement';
import { EgressProxy, type EgressRun } from '../../src/egress/proxy';
import { createWrapDetector, redactBody, WrapGate, WrappedValue } from '../../src/egress/redact-response';
import { normalizeNetworkPolicy } from '../../src/policy/egress-settings';
import { createSentinel } from '../../src/egress/sentinel';
import { Redactor } from '../../src/redact';
import { makeTempDir } from '../helpers/tmp';

/** Cut `input` into chunks of the given sizes, repeated; every chunk is its own copy. */
function cut(input: Buffer, sizes: readonly number[]): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < input.length; i++) {
    const size = sizes[i % sizes.length]!;
    chunks.push(Buffer.from(input.subarray(at, at + size)));
    at += size;
  }
  return chunks;
}

async function collect(stream: Readable): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of stream) out.push(chunk as Buffer);
  return Buffer.concat(out);
}

// Chunk sizes from one byte to several windows: both the joining path for small chunks and the
// bounded-window path for large ones are taken, in any order.
const chunkSizes = fc.array(fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 120 }), fc.integer({ min: 121, max: 3000 })), { minLength: 1, maxLength: 8 });
const filler = fc.string({ maxLength: 400, unit: fc.constantFrom('x', 'y', '-', ' ', '\n', 'é') });

describe('sentinel swapping in a streamed request body', () => {
  const secrets = [
    { ref: 'secret:long', value: 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4' },
    { ref: 'secret:short', value: 'k-12345678' },
  ].map((s) => ({ ...s, sentinel: createSentinel(s.value), hosts: [] }));

  test('every sentinel, split across any chunk boundary, is replaced by its value; nothing else changes', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.oneof(fc.constantFrom(...secrets.map((s) => s.sentinel)), filler), { maxLength: 30 }),
      chunkSizes,
      async (parts, sizes) => {
        const input = Buffer.from(parts.join(''));
        const stream = new SwapStream(getSwaps(secrets));
        const output = await collect(Readable.from(cut(input, sizes)).pipe(stream));
        let expected = parts.join('');
        for (const s of secrets) expected = expected.split(s.sentinel).join(s.value);
        expect(output.toString()).toBe(expected);
        expect([...stream.used].sort()).toEqual(secrets.filter((s) => parts.includes(s.sentinel)).map((s) => s.ref).sort());
      },
    ), { numRuns: 300 });
  });

  test('a sentinel straddling the boundary of two large chunks is replaced', async () => {
    const [secret] = secrets;
    for (let offset = 1; offset < secret!.sentinel.length; offset++) {
      const input = Buffer.concat([Buffer.alloc(70_000 - offset, 'a'), Buffer.from(secret!.sentinel), Buffer.alloc(70_000, 'b')]);
      const output = await collect(Readable.from(cut(input, [70_000])).pipe(new SwapStream(getSwaps([secret!]))));
      expect(output.length).toBe(input.length);
      expect(output.indexOf(secret!.value)).toBe(70_000 - offset);
      expect(output.includes(secret!.sentinel)).toBe(false);
    }
  });
});

describe('looking for sentinels in a streamed request body', () => {
  const secret = { ref: 'secret:long', value: 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4' };
  const sentinel = createSentinel(secret.value);
  const detector = createSentinelDetector([{ ...secret, sentinel, hosts: [], binding: undefined as never }], 8)!;
  const spellings = [sentinel, Buffer.from(sentinel).toString('base64'), Buffer.from(sentinel).toString('hex'), JSON.stringify({ t: sentinel })];

  test('a body without one passes unchanged, however cut; one with it, in any spelling and split anywhere, fails before its bytes leave', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(filler, { maxLength: 10 }), fc.option(fc.constantFrom(...spellings), { nil: undefined }), chunkSizes,
      async (parts, spelt, sizes) => {
        const text = spelt === undefined ? parts.join('') : [...parts.slice(0, 1), spelt, ...parts.slice(1)].join('');
        const input = Buffer.from(text);
        const out: Buffer[] = [];
        const scan = Readable.from(cut(input, sizes)).pipe(new BodyScan(detector));
        const error = await new Promise<unknown>((resolve) => {
          scan.on('data', (chunk: Buffer) => out.push(chunk));
          scan.on('error', resolve);
          scan.on('end', () => resolve(undefined));
        });
        if (spelt === undefined) {
          expect(error).toBeUndefined();
          expect(Buffer.concat(out).equals(input)).toBe(true);
        } else {
          expect(error).toBeInstanceOf(SentinelInBody);
          expect((error as SentinelInBody).ref).toBe('secret:long');
          // What left before the failure holds no whole spelling of the sentinel.
          expect(Buffer.concat(out).includes(spelt)).toBe(false);
        }
      },
    ), { numRuns: 300 });
  });
});

describe('a value wrapped over lines in a response', () => {
  const value = 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4';
  const redactor = new Redactor();
  redactor.add(value, 'secret:gh');
  const detector = createWrapDetector([{ value, ref: 'secret:gh' }], 8)!;
  const wrap = (text: string, width: number, brk: string): string => (text.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(brk);

  /** The body through the masker and the wrap gate, as the proxy cleans a response. */
  async function clean(input: Buffer, sizes: readonly number[], gateOnly = false): Promise<{ out: Buffer; error: unknown }> {
    const out: Buffer[] = [];
    const source = Readable.from(cut(input, sizes));
    let failed: unknown;
    const stream = gateOnly ? source.pipe(new WrapGate(detector)) : redactBody(source, undefined, redactor, (error) => { failed = error; }, detector);
    const error = await new Promise<unknown>((resolve) => {
      stream.on('data', (chunk: Buffer) => out.push(chunk));
      stream.on('error', resolve);
      stream.on('end', () => resolve(undefined));
      stream.on('close', () => resolve(failed));
    });
    return { out: Buffer.concat(out), error: error ?? failed };
  }

  test('base64 of a file holding the value, wrapped at any width with LF, CRLF or JSON `\\n`, at any offset, cut anywhere: masked where it stands, or the response ends before it can be put together', async () => {
    await fc.assert(fc.asyncProperty(
      fc.string({ maxLength: 40 }), fc.integer({ min: 4, max: 128 }), fc.constantFrom('\n', '\r\n', '\\n'), chunkSizes, fc.nat({ max: 9000 }),
      async (prefix, width, brk, sizes, padding) => {
        const encoded = Buffer.from(`${prefix}token=${value}\n`).toString('base64');
        const content = wrap(encoded, width, brk);
        // A long line before it: chunks with no break at all are passed on unread, all but their tail.
        const { out, error } = await clean(Buffer.from(`{"before":"${'x'.repeat(padding)}","content":"${content}","encoding":"base64"}`), sizes);
        const text = out.toString('latin1');
        if (error !== undefined) {
          expect(error).toBeInstanceOf(WrappedValue);
          expect((error as WrappedValue).ref).toBe('secret:gh');
        } else {
          expect(text).toContain('[REDACTED:secret:gh]');
        }
        // What did leave cannot be decoded back to the value.
        const leaked = Buffer.from(text.replace(/\\[nr]|[\r\n]/g, '').replace(/^.*"content":"/, ''), 'base64').toString('latin1');
        expect(leaked).not.toContain(value);
      },
    ), { numRuns: 300 });
  });

  test('a CRLF cut between two chunks, the CR at the end of a long chunk without LF, still breaks the line for the gate', async () => {
    // Found by the property below: the long chunk was held unread, and its tail later read with the CR in it.
    const content = wrap(Buffer.from(`token=${value}\n`).toString('base64'), 40, '\r\n');
    const { error } = await clean(Buffer.from(`${'x'.repeat(8078)}"${content}"`), [1, 3, 112], true);
    expect(error).toBeInstanceOf(WrappedValue);
  });

  test('a value wrapped across a break is caught by the gate alone, however the body is cut', async () => {
    // At most 52 columns: a break then always falls inside the value's part of the encoding.
    await fc.assert(fc.asyncProperty(fc.integer({ min: 4, max: 52 }), fc.constantFrom('\n', '\r\n', '\\n'), chunkSizes, fc.nat({ max: 9000 }), async (width, brk, sizes, padding) => {
      const content = wrap(Buffer.from(`token=${value}\n`).toString('base64'), width, brk);
      const { error } = await clean(Buffer.from(`${'x'.repeat(padding)}"${content}"`), sizes, true);
      expect(error).toBeInstanceOf(WrappedValue);
    }), { numRuns: 300 });
  });

  test('a body without the value passes byte for byte, escapes and line breaks included', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.oneof(filler, fc.constantFrom('\\', '\\n', '\\\\', '\r\n', 'y'.repeat(5000))), { maxLength: 40 }), chunkSizes, async (parts, sizes) => {
      const input = Buffer.from(parts.join(''));
      const { out, error } = await clean(input, sizes, true);
      expect(error).toBeUndefined();
      expect(out.equals(input)).toBe(true);
    }), { numRuns: 300 });
  });
});

describe('redaction of a streamed response body', () => {
  const value = 'sk-live-Qm9vYmFyQmF6UXV4MTIzNDU2';
  const redactor = new Redactor();
  redactor.add(value, 'secret:api');

  test('identity and gzip bodies: the value, split across any chunk boundary, never comes through', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.oneof(fc.constant(value), filler), { maxLength: 20 }),
      chunkSizes,
      fc.boolean(),
      async (parts, sizes, gzip) => {
        const plain = Buffer.from(parts.join(''));
        const sent = gzip ? gzipSync(plain) : plain;
        let failed: Error | undefined;
        const body = redactBody(Readable.from(cut(sent, sizes)), gzip ? 'gzip' : undefined, redactor, (error) => { failed = error; });
        const received = await collect(body);
        const text = gzip ? gunzipSync(received) : received;
        expect(failed).toBeUndefined();
        // The same bytes as redacting the whole body at once: the cut changes nothing.
        expect(text.equals(redactor.redactBuffer(plain).buffer)).toBe(true);
        expect(text.includes(value)).toBe(false);
      },
    ), { numRuns: 200 });
  });

  test('the value (and its base64 and hex spellings) straddling the boundary of two large chunks, at every offset, never comes through', async () => {
    // Long spellings: the matcher samples one word in many bytes here, so every offset of the
    // value against a chunk edge and against that sampling is tried.
    const spellings = [value, Buffer.from(value).toString('base64'), Buffer.from(value).toString('hex')];
    for (const spelling of spellings) {
      for (let offset = 1; offset < spelling.length; offset++) {
        const input = Buffer.concat([Buffer.alloc(65_536 - offset, 'a'), Buffer.from(spelling), Buffer.alloc(65_536, 'b')]);
        const output = await collect(redactBody(Readable.from(cut(input, [65_536])), undefined, redactor, () => undefined));
        expect(output.equals(redactor.redactBuffer(input).buffer)).toBe(true);
        expect(output.includes(spelling)).toBe(false);
        expect(output.indexOf('[REDACTED:secret:api]')).toBe(65_536 - offset);
      }
    }
  });
});

describe('tunnels deliver every byte when the server closes right after sending', () => {
  const BODY = Buffer.alloc(4 * 1024 * 1024, 'z');
  let tmp: ReturnType<typeof makeTempDir>;
  let server: Server;
  let proxy: EgressProxy;
  let run: EgressRun;

  beforeAll(async () => {
    tmp = makeTempDir('execgate-egress-data-');
    // Writes the whole body and closes at once, the way a `Connection: close` download ends.
    server = createServer((socket) => {
      socket.on('error', () => socket.destroy());
      socket.once('data', () => socket.end(BODY));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    proxy = new EgressProxy({ runtimeDir: tmp.dir, resolver: async () => ['203.0.113.10'], dial: () => ({ host: '127.0.0.1', port }) });
    run = await proxy.openRun({ runId: 'run-tunnel', network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['bulk.test'] }) });
  });

  afterAll(async () => {
    await proxy.close();
    server.close();
    tmp.cleanup();
  });

  /** Sends `greeting`, skips the proxy's `skip` reply bytes, asks, and counts the bytes up to the end. */
  function download(greeting: Buffer, skip: number, readSlowly: boolean): Promise<number> {
    return new Promise((resolve, reject) => {
      const socket: Socket = connect(run.socketPath);
      let received = 0;
      let skipped = 0;
      let asked = false;
      socket.on('data', (chunk: Buffer) => {
        const reply = Math.min(chunk.length, skip - skipped);
        skipped += reply;
        received += chunk.length - reply;
        if (skipped === skip && !asked) {
          asked = true;
          socket.write('GET\r\n');
        }
        // A slow reader keeps the tail of the body in the proxy's buffers when the server closes.
        if (readSlowly) {
          socket.pause();
          setTimeout(() => socket.resume(), 1);
        }
      });
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
      socket.write(greeting);
    });
  }

  test('CONNECT', async () => {
    const reply = Buffer.byteLength('HTTP/1.1 200 Connection Established\r\n\r\n');
    for (const slow of [false, true, true]) {
      expect(await download(Buffer.from('CONNECT bulk.test:80 HTTP/1.1\r\nHost: bulk.test:80\r\n\r\n'), reply, slow)).toBe(BODY.length);
    }
  });

  test('SOCKS5', async () => {
    const host = Buffer.from('bulk.test');
    // Greeting (no auth), then CONNECT bulk.test:80 by name; replies: 2 bytes + 10 bytes.
    const greeting = Buffer.concat([Buffer.from([0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x03, host.length]), host, Buffer.from([0, 80])]);
    for (const slow of [false, true, true]) expect(await download(greeting, 12, slow)).toBe(BODY.length);
  });
});
