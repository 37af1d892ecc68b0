/*
 * Raw TCP egress (`sandbox.network.tcp`) and host services (`sandbox.network.hostServices`) on
 * the gateway's real runs: gateway.exec (sync, PTY, background) in the real bubblewrap sandbox,
 * in the shared network namespace and in a namespace of the run's own, reaching real servers the
 * test starts on 127.0.0.1: a TCP echo server by name (the proxy's test resolver gives the name a
 * public-looking address, its dialler maps that to the server), a Node HTTP server and a real
 * PostgreSQL as host services. Every connection is an `egress.decision` record against its run.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let echo: Server;
let echoPort = 0;
let other: Server;
let otherPort = 0;
let web: HttpServer;
let webPort = 0;
const echoPeers: string[] = [];

function listen(server: Server | HttpServer): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

beforeAll(async () => {
  tmp = makeTempDir('execgate-tcp-');
  echo = createServer((socket: Socket) => {
    echoPeers.push(`${socket.remoteAddress}`);
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => socket.write(Buffer.concat([Buffer.from('echo:'), chunk])));
    socket.on('end', () => socket.end());
  });
  echoPort = await listen(echo);
  other = createServer((socket: Socket) => socket.end('other-host-port\n'));
  otherPort = await listen(other);
  web = createHttpServer((req, res) => res.end(`dev-server ${req.url}\n`));
  webPort = await listen(web);
});

afterAll(async () => {
  for (const server of [echo, other, web]) await new Promise((resolve) => server.close(resolve));
  tmp.cleanup();
});

/** The test's names: echo.test and deny.test at documentation addresses dialled to the echo server; loop.test at 127.0.0.1. */
const names = {
  resolver: async (host: string): Promise<string[]> => {
    if (host === 'echo.test' || host === 'deny.test') return ['203.0.113.7'];
    if (host === 'loop.test') return ['127.0.0.1'];
    if (host === 'meta.test') return ['169.254.169.254'];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  },
  dial: (address: string, port: number) => (address === '203.0.113.7' ? { host: '127.0.0.1', port: echoPort } : { host: address, port }),
};

function makeGateway(name: string, network: string): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, ['version: 1', `sandbox: { mode: required, network: ${network} }`].join('\n'));
  const gateway = createGateway({ home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { ...names, runtimeDir: dir } });
  return { gateway, dir, home };
}

function decisionsOf(home: string, runId: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.event === 'egress.decision' && r.runId === runId);
}

/** Bash talking to HOST:PORT over /dev/tcp: sends a line, prints what comes back. */
function talk(host: string, port: number, line: string): string {
  return `exec 3<>/dev/tcp/${host}/${port} && printf '%s\\n' '${line}' >&3 && timeout 10 head -n1 <&3; exec 3<&-`;
}

maybe('named raw TCP destinations, shared namespace', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => ({ gateway, dir, home } = makeGateway('shared', `{ mode: allowlist, tcp: ["echo.test:${echoPort}", "deny.test:${echoPort}", "loop.test:${echoPort}", "meta.test:${echoPort}"], deny: [deny.test] }`)));
  afterAll(async () => { await gateway.close(); });

  test('sync: a name resolves to its 127.77 address inside; bash /dev/tcp reaches the real server; recorded as the run\'s', async () => {
    const result = await gateway.exec({ command: `getent hosts echo.test; ${talk('echo.test', echoPort, 'hello-sync')}`, cwd: dir });
    expect(result.stdout).toContain('127.77.0.1');
    expect(result.stdout).toContain('echo:hello-sync');
    const records = decisionsOf(home, result.id);
    expect(records).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', port: echoPort, allowed: true, rule: `tcp:echo.test:${echoPort}` })]);
  });

  test('pty: the same through a terminal', async () => {
    const result = await gateway.exec({ command: talk('echo.test', echoPort, 'hello-pty'), cwd: dir, mode: 'pty' });
    expect(result.stdout).toContain('echo:hello-pty');
    expect(decisionsOf(home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
  });

  test('background: the same from a background run', async () => {
    const started = await gateway.exec({ command: `${talk('echo.test', echoPort, 'hello-bg')} > bg-echo.txt`, cwd: dir, mode: 'background' });
    const ended = await gateway.background.wait(started.id, 30_000);
    expect(ended.exitCode).toBe(0);
    expect(readFileSync(join(dir, 'bg-echo.txt'), 'utf8')).toContain('echo:hello-bg');
    expect(decisionsOf(home, started.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
  });

  test('a name not listed does not resolve; a denied one, and names resolving to loopback or metadata, are refused and recorded', async () => {
    const before = echoPeers.length;
    const result = await gateway.exec({
      command: [
        'getent hosts other.test || echo other-unresolved',
        `${talk('deny.test', echoPort, 'x')} || echo deny-refused`,
        `${talk('loop.test', echoPort, 'x')} || echo loop-refused`,
        `${talk('meta.test', echoPort, 'x')} || echo meta-refused`,
        `${talk('127.77.0.1', otherPort, 'x')} || echo port-refused`,
        'echo done',
      ].join('\n'),
      cwd: dir,
    });
    expect(result.stdout).toContain('other-unresolved');
    expect(result.stdout).not.toContain('echo:x');
    expect(result.stdout).not.toContain('other-host-port');
    expect(result.stdout).toContain('done');
    expect(echoPeers.length).toBe(before);
    const records = decisionsOf(home, result.id);
    expect(records).toEqual(expect.arrayContaining([
      expect.objectContaining({ via: 'tcp', host: 'deny.test', allowed: false, rule: 'deny:deny.test' }),
      expect.objectContaining({ via: 'tcp', host: 'loop.test', allowed: false, rule: 'address:loopback' }),
      expect.objectContaining({ via: 'tcp', host: 'meta.test', allowed: false, rule: 'address:metadata' }),
    ]));
    expect(records.every((r) => r.allowed === false)).toBe(true);
  });

  test('adversarial: a run cannot bind a destination\'s 127.77 address and port, which the gateway holds', async () => {
    const result = await gateway.exec({
      command: `python3 -c "
import socket
s = socket.socket()
try:
    s.bind(('127.77.0.1', ${echoPort})); print('bound')
except OSError as e:
    print('refused', e.errno)
"`,
      cwd: dir,
    });
    expect(result.stdout).toMatch(/refused 98/);
  });
});
