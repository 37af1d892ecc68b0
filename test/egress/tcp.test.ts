/*
 * Raw TCP egress (`sandbox.network.tcp`) and host services (`sandbox.network.hostServices`) on
 * the gateway's real runs: gateway.exec (sync, PTY, background) in the real bubblewrap sandbox,
 * in the shared network namespace and in a namespace of the run's own, reaching real servers the
 * test starts on 127.0.0.1: a TCP echo server by name (the proxy's test resolver gives the name a
 * public-looking address, its dialler maps that to the server), a Node HTTP server and a real
 * PostgreSQL as host services. Every connection is an `egress.decision` record against its run.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import { formatEgressEntry, readEgressEntry } from '../../src/audit/egress';
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
    // The report and `audit show` say it as they say every decision, with its `via`.
    expect(formatEgressEntry(readEgressEntry(records[0] as never))).toContain(`allowed echo.test:${echoPort} via tcp`);
    // exec.started and the result say the run's raw TCP destinations.
    const started = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { event: string; runId: string; network?: { tcp?: unknown } })
      .find((r) => r.event === 'exec.started' && r.runId === result.id);
    expect(started?.network?.tcp).toEqual(expect.arrayContaining([{ destination: `echo.test:${echoPort}`, address: '127.77.0.1', rule: `tcp:echo.test:${echoPort}` }]));
  });

  test('pty: the same through a terminal', async () => {
    const result = await gateway.exec({ command: talk('echo.test', echoPort, 'hello-pty'), cwd: dir, mode: 'pty' });
    expect(result.stdout).toContain('echo:hello-pty');
    expect(decisionsOf(home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
  });

  test('background: the same from a background run', async () => {
    const started = await gateway.exec({ command: `{ ${talk('echo.test', echoPort, 'hello-bg')}; } > bg-echo.txt`, cwd: dir, mode: 'background' });
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
        talk('deny.test', echoPort, 'x'),
        talk('loop.test', echoPort, 'x'),
        talk('meta.test', echoPort, 'x'),
        talk('127.77.0.1', otherPort, 'x'),
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

  test('attribution: two runs connecting at once are each recorded as themselves', async () => {
    // Each holds its connection open until the other's has been made (a file each writes once
    // connected), so both are open on the shared listener at the same time.
    const command = (me: string, peer: string): string => [
      `exec 3<>/dev/tcp/echo.test/${echoPort}`, `printf '%s\\n' ${me} >&3`, `head -n1 <&3 > ${me}.txt`, `touch ${me}.ready`,
      `for i in $(seq 200); do test -e ${peer}.ready && break; sleep 0.05; done`, 'exec 3<&-',
    ].join('\n');
    const [a, b] = await Promise.all([
      gateway.exec({ command: command('run-a', 'run-b'), cwd: dir }),
      gateway.exec({ command: command('run-b', 'run-a'), cwd: dir, mode: 'pty' }),
    ]);
    expect(readFileSync(join(dir, 'run-a.txt'), 'utf8')).toContain('echo:run-a');
    expect(readFileSync(join(dir, 'run-b.txt'), 'utf8')).toContain('echo:run-b');
    expect(decisionsOf(home, a.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
    expect(decisionsOf(home, b.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
  });

  test('adversarial: a forged preamble on the shared proxy listener reaches only what the run\'s policy names', async () => {
    const script = `
import os, socket, urllib.parse
auth = urllib.parse.urlparse(os.environ['HTTP_PROXY'])
user, pw = urllib.parse.unquote(auth.username), urllib.parse.unquote(auth.password)
for addr, port, u, p in (('127.77.0.9', ${echoPort}, user, pw), ('127.0.0.1', ${otherPort}, user, pw), ('127.77.0.1', ${echoPort}, user, 'wrong')):
    s = socket.create_connection(('127.0.0.1', auth.port))
    s.sendall(b'\\0execgate-tcp %s %s %s %d\\nhello\\n' % (u.encode(), p.encode(), addr.encode(), port))
    s.settimeout(10)
    try:
        data = s.recv(100)
    except OSError as e:
        data = repr(e).encode()
    print(addr, port, 'got', data)
`;
    writeFileSync(join(dir, 'forge.py'), script);
    const before = echoPeers.length;
    const result = await gateway.exec({ command: 'python3 forge.py', cwd: dir });
    expect(result.stdout.match(/got b''/g)).toHaveLength(3);
    expect(echoPeers.length).toBe(before);
    const records = decisionsOf(home, result.id);
    expect(records.filter((r) => r.allowed === false && r.rule === 'not-a-destination')).toHaveLength(2);
    expect(records.some((r) => r.allowed === true)).toBe(false);
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

/** A real PostgreSQL on 127.0.0.1 (trust auth), run as the `postgres` user when the test runs as root. */
async function startPostgres(): Promise<{ port: number; stop: () => Promise<void> } | undefined> {
  const bin = '/usr/lib/postgresql/15/bin';
  if (!existsSync(`${bin}/postgres`)) return undefined;
  const root = process.getuid?.() === 0;
  const data = mkdtempSync(join(tmpdir(), 'execgate-pg-'));
  const as = (argv: string[]): string[] => (root ? ['runuser', '-u', 'postgres', '--', ...argv] : argv);
  if (root) execFileSync('chown', ['postgres:postgres', data]);
  execFileSync(as([`${bin}/initdb`, '-D', join(data, 'db'), '-A', 'trust', '-U', 'postgres'])[0], as([`${bin}/initdb`, '-D', join(data, 'db'), '-A', 'trust', '-U', 'postgres']).slice(1), { stdio: 'ignore' });
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
  const argv = as([`${bin}/postgres`, '-D', join(data, 'db'), '-h', '127.0.0.1', '-p', String(port), '-k', data]);
  const child = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    try {
      execFileSync(`${bin}/pg_isready`, ['-h', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
      break;
    } catch {
      await delay(100);
    }
  }
  return {
    port,
    stop: async () => {
      // runuser does not pass signals on: the server's own pid is in its data directory.
      try {
        process.kill(Number(readFileSync(join(data, 'db', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGINT');
      } catch {
        child.kill('SIGKILL');
      }
      await new Promise((resolve) => { if (child.exitCode !== null) resolve(undefined); else child.once('exit', resolve); });
      rmSync(data, { recursive: true, force: true });
    },
  };
}

maybe('host services', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  let pg: Awaited<ReturnType<typeof startPostgres>>;
  beforeAll(async () => {
    pg = await startPostgres();
    ({ gateway, dir, home } = makeGateway('host', `{ mode: allowlist, hostServices: [${webPort}${pg ? `, ${pg.port}` : ''}] }`));
  });
  afterAll(async () => {
    await gateway.close();
    await pg?.stop();
  });

  test('a dev server on the host\'s loopback is reached with curl localhost:PORT (directly, not through the proxy)', async () => {
    const result = await gateway.exec({ command: `curl -sS --max-time 10 http://localhost:${webPort}/hello; curl -sS --max-time 10 http://127.0.0.1:${webPort}/v4`, cwd: dir });
    expect(result.stdout).toContain('dev-server /hello');
    expect(result.stdout).toContain('dev-server /v4');
    const records = decisionsOf(home, result.id);
    expect(records.length).toBeGreaterThanOrEqual(2);
    expect(records.every((r) => r.via === 'host' && r.host === '127.0.0.1' && r.port === webPort && r.allowed === true && r.rule === `hostService:${webPort}`)).toBe(true);
  });

  test('PostgreSQL: psql -h localhost reaches the host\'s server (sync and PTY)', async () => {
    if (!pg) return;
    const sync = await gateway.exec({ command: `psql -h localhost -p ${pg.port} -U postgres -tAc 'select 40 + 2'`, cwd: dir });
    expect(sync.stdout.trim()).toBe('42');
    const pty = await gateway.exec({ command: `psql -h localhost -p ${pg.port} -U postgres -tAc 'select 40 + 3'`, cwd: dir, mode: 'pty' });
    expect(pty.stdout).toContain('43');
    expect(decisionsOf(home, sync.id)).toEqual(expect.arrayContaining([expect.objectContaining({ via: 'host', port: pg.port, allowed: true })]));
  });

  test('adversarial: the host\'s other loopback ports stay out of reach; a run cannot take a host service\'s port', async () => {
    const result = await gateway.exec({
      command: [
        `curl -sS --max-time 5 http://localhost:${otherPort}/ || echo other-refused`,
        `python3 -c "
import socket
for host in ('127.0.0.1', '0.0.0.0'):
    s = socket.socket()
    try:
        s.bind((host, ${webPort})); print('bound', host)
    except OSError as e:
        print('refused', host, e.errno)
"`,
      ].join('\n'),
      cwd: dir,
    });
    expect(result.stdout).toContain('other-refused');
    expect(result.stdout).not.toContain('other-host-port');
    expect(result.stdout).toContain('refused 127.0.0.1 98');
    expect(result.stdout).toContain('refused 0.0.0.0 98');
  });

  test('without hostServices naming the port, the host service is not there', async () => {
    const { gateway: closed, dir: closedDir } = makeGateway('host-closed', '{ mode: open }');
    try {
      const result = await closed.exec({ command: `curl -sS --max-time 5 http://localhost:${webPort}/ || echo closed${pg ? `; psql -h localhost -p ${pg.port} -U postgres -tAc 'select 1' || echo pg-closed` : ''}`, cwd: closedDir });
      expect(result.stdout).toContain('closed');
      expect(result.stdout).not.toContain('dev-server');
      if (pg) expect(result.stdout).toContain('pg-closed');
    } finally {
      await closed.close();
    }
  });
});

maybe('a run with a network namespace of its own (narrowed by a secret in its environment)', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => {
    dir = join(tmp.dir, 'own');
    home = join(dir, 'home');
    mkdirSync(dir, { recursive: true });
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, [
      'version: 1',
      `sandbox: { mode: required, network: { mode: allowlist, allow: [echo.test], tcp: ["echo.test:${echoPort}"], hostServices: [${webPort}] } }`,
      'secrets:',
      '  bind:',
      `    - { ref: "secret:tok", hosts: [echo.test, "127.0.0.1"], delivery: env }`,
    ].join('\n'));
    gateway = createGateway({
      home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { ...names, runtimeDir: dir, connectHandoff: false },
      sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'tok' ? { found: true, value: 'tok-value-0123456789' } : { found: false }) }],
    });
  });
  afterAll(async () => { await gateway.close(); });
  // The relay through the run's bridge (tcp-handoff.test.ts has this namespace handed over).

  test('sync, PTY and background reach the named destination and the host service through the run\'s bridge', async () => {
    const command = (tag: string): string => `: <<secret:tok>>; { ${talk('echo.test', echoPort, `own-${tag}`)}; curl -sS --max-time 10 http://localhost:${webPort}/own-${tag}; } > own-${tag}.txt`;
    const sync = await gateway.exec({ command: command('sync'), cwd: dir });
    const pty = await gateway.exec({ command: command('pty'), cwd: dir, mode: 'pty' });
    const started = await gateway.exec({ command: command('bg'), cwd: dir, mode: 'background' });
    await gateway.background.wait(started.id, 30_000);
    for (const [tag, id] of [['sync', sync.id], ['pty', pty.id], ['bg', started.id]] as const) {
      const record = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { event: string; runId: string; network?: { namespace?: string } })
        .find((r) => r.event === 'exec.started' && r.runId === id);
      expect(record?.network?.namespace).toBe('own');
      const text = readFileSync(join(dir, `own-${tag}.txt`), 'utf8');
      expect(text).toContain(`echo:own-${tag}`);
      expect(text).toContain(`dev-server /own-${tag}`);
      expect(decisionsOf(home, id)).toEqual(expect.arrayContaining([
        expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true }),
        expect.objectContaining({ via: 'host', port: webPort, allowed: true }),
      ]));
    }
  });

  test('a secret in the environment narrows raw TCP and host services to its hosts', async () => {
    const narrowDir = join(tmp.dir, 'narrow');
    mkdirSync(narrowDir, { recursive: true });
    const policy = join(narrowDir, 'policy.yaml');
    writeFileSync(policy, [
      'version: 1',
      `sandbox: { mode: required, network: { mode: allowlist, allow: [echo.test], tcp: ["echo.test:${echoPort}", "deny.test:${echoPort}"], hostServices: [${webPort}] } }`,
      'secrets: { bind: [{ ref: "secret:tok", hosts: [echo.test], delivery: env }] }',
    ].join('\n'));
    const narrow = createGateway({
      home: join(narrowDir, 'home'), env: baseEnv(), cwd: narrowDir, policyFile: policy, egress: { ...names, runtimeDir: narrowDir },
      sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'tok' ? { found: true, value: 'tok-value-0123456789' } : { found: false }) }],
    });
    try {
      const result = await narrow.exec({ command: `: <<secret:tok>>; ${talk('deny.test', echoPort, 'x')}; curl -sS --max-time 5 http://localhost:${webPort}/ || echo host-refused; ${talk('echo.test', echoPort, 'narrowed')}`, cwd: narrowDir });
      expect(result.stdout).not.toContain('echo:x');
      expect(result.stdout).toContain('host-refused');
      expect(result.stdout).not.toContain('dev-server');
      expect(result.stdout).toContain('echo:narrowed');
      expect(decisionsOf(join(narrowDir, 'home'), result.id)).toEqual(expect.arrayContaining([
        expect.objectContaining({ via: 'tcp', host: 'deny.test', allowed: false, rule: 'bound:secret:tok' }),
        expect.objectContaining({ via: 'host', port: webPort, allowed: false, rule: 'bound:secret:tok' }),
        expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true }),
      ]));
    } finally {
      await narrow.close();
    }
  });

  test('adversarial: a forged preamble on the proxy\'s socket reaches only what the run\'s policy names', async () => {
    // The run's own credentials (from its proxy variables) and an address that is no destination
    // of it, then the host's other loopback port, then a destination's address with another port.
    const script = `
import os, socket, urllib.parse
auth = urllib.parse.urlparse(os.environ['HTTP_PROXY'])
user, pw = urllib.parse.unquote(auth.username), urllib.parse.unquote(auth.password)
for addr, port in (('127.77.0.2', ${echoPort}), ('127.0.0.1', ${otherPort}), ('127.77.0.1', ${otherPort}), ('10.0.0.1', 22)):
    s = socket.socket(socket.AF_UNIX)
    s.connect('/tmp/.execgate-egress.sock')
    s.sendall(b'\\0execgate-tcp %s %s %s %d\\nhello\\n' % (user.encode(), pw.encode(), addr.encode(), port))
    s.settimeout(10)
    try:
        data = s.recv(100)
    except OSError as e:
        data = repr(e).encode()
    print(addr, port, 'got', data)
`;
    writeFileSync(join(dir, 'forge.py'), script);
    const result = await gateway.exec({ command: ': <<secret:tok>>; python3 forge.py', cwd: dir });
    expect(result.stdout).not.toContain('echo:hello');
    expect(result.stdout).not.toContain('other-host-port');
    expect(result.stdout.match(/got b''/g)).toHaveLength(4);
    const records = decisionsOf(home, result.id);
    expect(records.filter((r) => r.allowed === false && r.rule === 'not-a-destination')).toHaveLength(4);
    expect(records.some((r) => r.allowed === true)).toBe(false);
  });
});

maybe('UNIX-socket host services', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  let sockServer: Server;
  let socketPath: string;
  let otherPath: string;
  let otherServer: Server;
  beforeAll(async () => {
    dir = join(tmp.dir, 'unix');
    home = join(dir, 'home');
    mkdirSync(dir, { recursive: true });
    // The host's sockets, outside the workspace (which the run sees anyway): one named by the
    // policy, one beside it that is not.
    const sockets = mkdtempSync(join(tmpdir(), 'execgate-sock-'));
    socketPath = join(sockets, 'app.sock');
    otherPath = join(sockets, 'other.sock');
    sockServer = createServer((socket) => socket.end('unix-service\n'));
    otherServer = createServer((socket) => socket.end('other-socket\n'));
    await new Promise<void>((resolve) => sockServer.listen(socketPath, () => resolve()));
    await new Promise<void>((resolve) => otherServer.listen(otherPath, () => resolve()));
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, ['version: 1', `sandbox: { mode: required, network: { mode: allowlist, hostServices: [{ unix: "${socketPath}" }, { unix: "/var/tmp/execgate-test/db.sock" }] } }`].join('\n'));
    gateway = createGateway({ home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { ...names, runtimeDir: dir } });
  });
  afterAll(async () => {
    await gateway.close();
    for (const server of [sockServer, otherServer]) await new Promise((resolve) => server.close(resolve));
    rmSync(join(socketPath, '..'), { recursive: true, force: true });
  });

  test('the host\'s socket is at its own path inside (sync, PTY), the connection recorded as the run\'s; another socket beside it is not', async () => {
    const command = `python3 -c "
import socket
for path in ('${socketPath}', '${otherPath}'):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path); print(path[-9:], s.recv(100))
    except OSError as e:
        print(path[-9:], 'refused', e.errno)
"`;
    const sync = await gateway.exec({ command, cwd: dir });
    expect(sync.stdout).toContain("app.sock b'unix-service\\n'");
    expect(sync.stdout).not.toContain('other-socket');
    const pty = await gateway.exec({ command, cwd: dir, mode: 'pty' });
    expect(pty.stdout).toContain('unix-service');
    expect(decisionsOf(home, sync.id)).toEqual([expect.objectContaining({ via: 'host', host: socketPath, port: 0, allowed: true, rule: `hostService:unix:${socketPath}` })]);
    // A path no host socket is at yet: the run's socket is there, the connection fails on the host side and is recorded.
    const missing = await gateway.exec({ command: 'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect(\'/var/tmp/execgate-test/db.sock\'); print(repr(s.recv(10)))"', cwd: dir });
    expect(missing.stdout).toContain("b''");
    expect(decisionsOf(home, missing.id)).toEqual([expect.objectContaining({ via: 'host', host: '/var/tmp/execgate-test/db.sock', allowed: false, rule: 'dial-failed:ENOENT' })]);
  });
});
