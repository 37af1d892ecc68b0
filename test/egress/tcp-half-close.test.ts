/*
 * Half-close through the raw TCP relay: on the gateway's real runs in the real sandbox (shared
 * namespace, and a namespace of the run's own, whose connection reaches the gateway as a UNIX
 * socket after a preamble), a Node client inside the run sends 3 MiB to a server on 127.0.0.1 by
 * name and shuts its writing; the server reads to the end, answers with the digest of what it
 * got and 3 MiB of its own, and ends. Both directions are checked byte for byte: a relay that
 * ended the other side's writing when one side ended (Node's default) cut the answer off.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

const SIZE = 3 * 1024 * 1024;
const answer = randomBytes(SIZE);
const sha = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

let tmp: ReturnType<typeof makeTempDir>;
let bulk: Server;
let bulkPort = 0;
let endless: Server;
let endlessPort = 0;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

/** Inside the run: send SIZE random bytes, half-close, read to the end; print both digests and what the server said. */
const CLIENT = `
const net = require('net'), crypto = require('crypto');
const [host, port, size] = process.argv.slice(2);
const sent = crypto.randomBytes(Number(size));
const chunks = [];
const s = net.connect({ host, port: Number(port) }, () => s.end(sent));
s.on('data', (c) => chunks.push(c));
s.on('end', () => {
  const got = Buffer.concat(chunks);
  const nl = got.indexOf(10);
  const hash = (b) => crypto.createHash('sha256').update(b).digest('hex');
  console.log(JSON.stringify({ sent: hash(sent), server: got.subarray(0, nl).toString(), got: hash(got.subarray(nl + 1)), length: got.length - nl - 1 }));
});
s.on('error', (e) => { console.error(e.message); process.exit(1); });
`;

/** Inside the run: read N bytes from the endless server and exit (the connection still open until then). */
const READER = `
const net = require('net');
const [host, port, size] = process.argv.slice(2);
let got = 0;
const s = net.connect({ host, port: Number(port) });
s.on('data', (c) => { got += c.length; if (got >= Number(size)) { console.log('read ' + got); process.exit(0); } });
`;

beforeAll(async () => {
  tmp = makeTempDir('execgate-splice-');
  bulk = createServer((socket: Socket) => {
    const chunks: Buffer[] = [];
    socket.on('error', () => socket.destroy());
    socket.on('data', (c) => chunks.push(c));
    socket.on('end', () => {
      const got = Buffer.concat(chunks);
      socket.end(Buffer.concat([Buffer.from(`${got.length} ${sha(got)}\n`), answer]));
    });
  });
  bulkPort = await listen(bulk);
  endless = createServer((socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    const write = (): void => { while (!socket.destroyed && socket.write(chunk)); if (!socket.destroyed) socket.once('drain', write); };
    write();
  });
  endlessPort = await listen(endless);
  writeFileSync(join(tmp.dir, 'client.js'), CLIENT);
  writeFileSync(join(tmp.dir, 'reader.js'), READER);
});

afterAll(async () => {
  for (const server of [bulk, endless]) await new Promise((resolve) => server.close(resolve));
  tmp.cleanup();
});

const egress = {
  resolver: async (host: string): Promise<string[]> => {
    if (host === 'bulk.test') return ['203.0.113.8'];
    if (host === 'endless.test') return ['203.0.113.9'];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  },
  dial: (address: string, port: number) => {
    if (address === '203.0.113.8') return { host: '127.0.0.1', port: bulkPort };
    if (address === '203.0.113.9') return { host: '127.0.0.1', port: endlessPort };
    return { host: address, port };
  },
};

function makeGateway(name: string, secret: boolean): { gateway: Gateway; dir: string } {
  const dir = join(tmp.dir, name);
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  const tcp = `tcp: ["bulk.test:${bulkPort}", "endless.test:${endlessPort}"]`;
  writeFileSync(policy, [
    'version: 1',
    `sandbox: { mode: required, network: { mode: allowlist, allow: [bulk.test], ${tcp} } }`,
    ...(secret ? ['secrets: { bind: [{ ref: "secret:tok", hosts: [bulk.test, endless.test], delivery: env }] }'] : []),
  ].join('\n'));
  const gateway = createGateway({
    home: join(dir, 'home'), env: baseEnv(), cwd: tmp.dir, policyFile: policy, egress: { ...egress, runtimeDir: dir },
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'tok' ? { found: true, value: 'tok-value-0123456789' } : { found: false }) }],
  });
  return { gateway, dir };
}

async function exchange(gateway: Gateway, prefix = ''): Promise<void> {
  const result = await gateway.exec({ command: `${prefix}'${process.execPath}' client.js bulk.test ${bulkPort} ${SIZE}`, cwd: tmp.dir });
  expect(result.stderr).toBe('');
  const report = JSON.parse(result.stdout) as { sent: string; server: string; got: string; length: number };
  // Up, through the half-close: the server read all of it, to its end.
  expect(report.server).toBe(`${SIZE} ${report.sent}`);
  // Down, after the run's side had ended its writing: all of the server's answer.
  expect(report.length).toBe(SIZE);
  expect(report.got).toBe(sha(answer));
}

maybe('half-close through the raw TCP relay', () => {
  let shared: ReturnType<typeof makeGateway>;
  let own: ReturnType<typeof makeGateway>;
  beforeAll(() => {
    shared = makeGateway('shared', false);
    own = makeGateway('own', true);
  });
  afterAll(async () => {
    await shared.gateway.close();
    await own.gateway.close();
  });

  test('shared namespace: both directions arrive whole after the client shuts its writing', async () => {
    await exchange(shared.gateway);
  });

  test('a namespace of the run\'s own (the connection comes through the run\'s bridge): the same', async () => {
    await exchange(own.gateway, ': <<secret:tok>>; ');
  });
});
