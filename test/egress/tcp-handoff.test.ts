/*
 * Raw TCP handed over connected (egress/tcp-notify.ts): a run's connect(2) to a named destination
 * is answered with a socket the gateway's supervisor connected outside the sandbox, so the run's
 * bytes bypass the gateway. Real runs in the real sandbox, real clients (Python, Node, bash
 * /dev/tcp), real servers on the host's loopback.
 *
 * What shows the hand-off: the run's socket's peer is the real server's address (127.0.0.1:PORT),
 * where a relayed connection's peer is the run's 127.77 address (the differential case, with
 * `connectHandoff: false`). Adversarial: the address a decided connect names cannot be changed
 * after it is read (thousands of connects while another thread rewrites the address between a
 * named destination and a host port nobody named: the unnamed port never sees a connection); the
 * hand-off socket takes no second listener; a socket passed to another run stays recorded as the
 * run that opened it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { formatEgressEntry, readEgressEntry } from '../../src/audit/egress';
import { createGateway, type Gateway } from '../../src/gateway';
import { getConnectHandoffSupport } from '../../src/egress/tcp-notify';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

const ready = checkPlatform(undefined).ok && getConnectHandoffSupport() !== undefined;
const maybe = ready ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let echo: Server;
let echoPort = 0;
let secret: Server;
let secretPort = 0;
let secretHits = 0;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

beforeAll(async () => {
  tmp = makeTempDir('execgate-tcp-handoff-');
  echo = createServer((socket: Socket) => {
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => socket.write(Buffer.concat([Buffer.from('echo:'), chunk])));
    socket.on('end', () => socket.end());
  });
  echoPort = await listen(echo);
  // A port of the host's loopback that no policy names: nothing of a run may ever reach it.
  secret = createServer((socket: Socket) => {
    secretHits += 1;
    socket.destroy();
  });
  secretPort = await listen(secret);
});

afterAll(async () => {
  for (const server of [echo, secret]) await new Promise((resolve) => server.close(resolve));
  tmp.cleanup();
});

const names = {
  resolver: async (host: string): Promise<string[]> => {
    if (host === 'echo.test' || host === 'deny.test') return ['203.0.113.7'];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  },
  dial: (address: string, port: number) => (address === '203.0.113.7' ? { host: '127.0.0.1', port: echoPort } : { host: address, port }),
};

function makeGateway(name: string, network: string, handoff = true): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, ['version: 1', `sandbox: { mode: required, network: ${network} }`].join('\n'));
  const gateway = createGateway({ home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { ...names, runtimeDir: dir, connectHandoff: handoff } });
  return { gateway, dir, home };
}

function decisionsOf(home: string, runId?: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.event === 'egress.decision' && (runId === undefined || r.runId === runId));
}

/** Python: connect to HOST:PORT, print the socket's peer and the echo of one line. */
const PEER_PY = (host: string, port: number): string => `python3 -c "
import socket
s = socket.create_connection(('${host}', ${port}), timeout=10)
print('peer', '%s:%d' % s.getpeername())
s.sendall(b'hi\\n')
print(s.recv(100).decode().strip())
"`;

maybe('raw TCP handed over connected', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => ({ gateway, dir, home } = makeGateway('shared', `{ mode: allowlist, tcp: ["echo.test:${echoPort}", "deny.test:${echoPort}"], deny: [deny.test] }`)));
  afterAll(async () => { await gateway.close(); });

  test('sync, PTY and background: the run\'s socket is connected to the real server itself; recorded as the run\'s', async () => {
    for (const mode of ['sync', 'pty'] as const) {
      const result = await gateway.exec({ command: `grep Seccomp_filters /proc/self/status; ${PEER_PY('echo.test', echoPort)}`, cwd: dir, mode });
      // The sandbox's filter and the hand-off's.
      expect(result.stdout).toMatch(/Seccomp_filters:\s+2/);
      expect(result.stdout).toContain(`peer 127.0.0.1:${echoPort}`);
      expect(result.stdout).toContain('echo:hi');
      expect(decisionsOf(home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', port: echoPort, allowed: true, rule: `tcp:echo.test:${echoPort}` })]);
    }
    const started = await gateway.exec({ command: `${PEER_PY('echo.test', echoPort)} > bg.txt`, cwd: dir, mode: 'background' });
    const ended = await gateway.background.wait(started.id, 30_000);
    expect(ended.exitCode).toBe(0);
    expect(readFileSync(join(dir, 'bg.txt'), 'utf8')).toContain(`peer 127.0.0.1:${echoPort}`);
    expect(decisionsOf(home, started.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
  });

  test('every kind of client: Node (non-blocking), bash /dev/tcp; asking connect again answers EISCONN', async () => {
    const node = `node -e "const s=require('net').connect(${echoPort},'echo.test',()=>{console.log('peer',s.remoteAddress+':'+s.remotePort);s.end('x\\n')});s.on('data',d=>process.stdout.write(d));s.on('error',e=>console.log('ERR',e.code))"`;
    const result = await gateway.exec({ command: node, cwd: dir });
    expect(result.stdout).toContain(`peer 127.0.0.1:${echoPort}`);
    expect(result.stdout).toContain('echo:x');
    const bash = await gateway.exec({ command: `exec 3<>/dev/tcp/echo.test/${echoPort}; echo b >&3; timeout 10 head -n1 <&3`, cwd: dir });
    expect(bash.stdout).toContain('echo:b');
    const again = await gateway.exec({ command: `python3 -c "
import errno, socket
s = socket.socket()
s.connect(('echo.test', ${echoPort}))
try:
    s.connect(('echo.test', ${echoPort}))
except OSError as e:
    print(errno.errorcode[e.errno])
"`, cwd: dir });
    expect(again.stdout.trim()).toBe('EISCONN');
  });

  test('a refused destination fails with ECONNREFUSED at connect, recorded refused; a name not listed does not resolve', async () => {
    const result = await gateway.exec({ command: `python3 -c "
import socket
for host in ('deny.test', 'nope.test'):
    try:
        socket.create_connection((host, ${echoPort}), timeout=10)
        print(host, 'connected')
    except OSError as e:
        print(host, type(e).__name__)
"`, cwd: dir });
    expect(result.stdout).toContain('deny.test ConnectionRefusedError');
    expect(result.stdout).toContain('nope.test gaierror');
    expect(decisionsOf(home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'deny.test', allowed: false, rule: 'deny:deny.test' })]);
  });

  test('adversarial: rewriting the address while connect decides never reaches a port nobody named (3,000 connects)', async () => {
    // One thread connects again and again through one sockaddr buffer; another rewrites that
    // buffer's port between the named destination's and the host port no policy names, as fast
    // as it can. A connect handed over dials what was decided from the address read; one that
    // goes on as made reaches only the run's loopback (where the gateway's relay listens for the
    // named destination and decides again: a connect read as the unnamed port and made, after the
    // rewrite, to the named one is relayed). The unnamed port must see nothing.
    const race = `python3 -c "
import ctypes, socket, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
good = struct.pack('>HH4s8x', 0, ${echoPort}, socket.inet_aton('127.77.0.1'))
bad = struct.pack('>HH4s8x', 0, ${secretPort}, socket.inet_aton('127.77.0.1'))
host = struct.pack('>HH4s8x', 0, ${secretPort}, socket.inet_aton('127.0.0.1'))
good = struct.pack('=H', socket.AF_INET) + good[2:]
bad = struct.pack('=H', socket.AF_INET) + bad[2:]
host = struct.pack('=H', socket.AF_INET) + host[2:]
buf = ctypes.create_string_buffer(good, 16)
stop = False
def flip():
    forms = (good, bad, host)
    i = 0
    while not stop:
        ctypes.memmove(buf, forms[i % 3], 16)
        i += 1
t = threading.Thread(target=flip)
t.start()
ok = relayed = refused = other = 0
for _ in range(3000):
    s = socket.socket()
    r = libc.connect(s.fileno(), buf, 16)
    if r == 0:
        peer = s.getpeername()
        if peer == ('127.0.0.1', ${echoPort}): ok += 1
        elif peer == ('127.77.0.1', ${echoPort}): relayed += 1
        else: other += 1; print('peer', peer)
    else:
        refused += 1
    s.close()
stop = True
t.join()
print('ok', ok, 'relayed', relayed, 'refused', refused, 'other', other)
"`;
    const before = secretHits;
    const result = await gateway.exec({ command: race, cwd: dir, timeout: 120_000 });
    const counts = /ok (\d+) relayed (\d+) refused (\d+) other (\d+)/.exec(result.stdout);
    expect(counts).not.toBeNull();
    const [ok, relayed, refused, other] = counts!.slice(1).map(Number);
    expect(ok + relayed + refused + other).toBe(3000);
    // Some of each happened (the race was run), and nothing else was reached.
    expect(ok).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    expect(result.stdout.slice(0, 400)).not.toMatch(/peer/);
    expect(other).toBe(0);
    expect(secretHits).toBe(before);
  }, 150_000);

  test('adversarial: the supervisor\'s socket takes no listener without the run\'s token, and idle connections to it hold nothing up', async () => {
    // A process of the run cannot make a listener of its own (the kernel allows one listener in a
    // filter chain: EBUSY); it offers another descriptor with a made-up token, while 50 more
    // connections to the socket say nothing. The offer is refused (the connection closed, no
    // word); the run's own connects still work.
    const forge = `python3 -c "
import ctypes, os, socket, struct, sys
nr = {'x86_64': 317, 'aarch64': 277}[os.uname().machine]
prog = bytes.fromhex(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
class F(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]
buf = ctypes.create_string_buffer(prog, len(prog))
idle = []
for _ in range(50):
    c = socket.socket(socket.AF_UNIX); c.connect('/tmp/.execgate-connect.sock'); idle.append(c)
s = socket.socket(socket.AF_UNIX)
s.connect('/tmp/.execgate-connect.sock')
libc.prctl(38, 1, 0, 0, 0)
fd = libc.syscall(nr, 1, 8, ctypes.byref(F(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))))
print('own listener', fd, os.strerror(ctypes.get_errno()))
fd = os.open('/dev/null', os.O_RDONLY)
s.sendmsg([b'0' * 32], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('i', fd))])
s.settimeout(10)
print('answer', repr(s.recv(1)))
" ${readFileSync(join(__dirname, '..', '..', 'src', 'programs', 'seccomp', 'connect-notify-x86_64.bpf')).toString('hex')}`;
    const result = await gateway.exec({ command: `${forge}; ${PEER_PY('echo.test', echoPort)}`, cwd: dir, timeout: 60_000 });
    expect({ stdout: result.stdout, stderr: result.stderr }).toEqual({ stdout: expect.stringContaining("answer b''"), stderr: '' });
    expect(result.stdout).toContain('own listener -1 Device or resource busy');
    expect(result.stdout).toContain(`peer 127.0.0.1:${echoPort}`);
  });
});

maybe('an impostor at the supervisor\'s socket', () => {
  test('a run that puts its own socket at the path (a runtime directory runs can write) gets no listener; the next run is relayed', async () => {
    // The test's runtime directory is inside the workspace, which runs can write: run A finds the
    // supervisor's socket there, puts a listening socket of its own at the path, and answers every
    // hand-off as the supervisor would, without the proof it cannot know. Run B's first program
    // then finds the impostor: it installs no filter, hands it nothing, and B is relayed.
    const { gateway, dir, home } = makeGateway('impostor', `{ mode: allowlist, tcp: ["echo.test:${echoPort}"] }`);
    try {
      const first = await gateway.exec({ command: PEER_PY('echo.test', echoPort), cwd: dir });
      expect(first.stdout).toContain(`peer 127.0.0.1:${echoPort}`);
      const impostor = await gateway.exec({
        command: `python3 -c "
import glob, os, socket, sys
path = glob.glob('${dir}/execgate-egress-*/connect.sock')[0]
os.unlink(path)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o666)
s.listen(8)
print('listening', flush=True)
while True:
    c, _ = s.accept()
    print('asked', c.recv(100)[:4], flush=True)
    c.sendall(b'T' + b'0' * 32)
    data, anc, _, _ = c.recvmsg(16, socket.CMSG_SPACE(16))
    print('got', 'fds' if anc else 'nothing', flush=True)
"`,
        cwd: dir, mode: 'background', timeout: 60_000,
      });
      for (let i = 0; i < 200 && !readFileSync(impostor.outputPath!, 'utf8').includes('listening'); i++) await new Promise((r) => setTimeout(r, 50));
      expect(readFileSync(impostor.outputPath!, 'utf8')).toContain('listening');
      const second = await gateway.exec({ command: `grep Seccomp_filters /proc/self/status; ${PEER_PY('echo.test', echoPort)}`, cwd: dir });
      expect(second.stderr).toBe('');
      expect(second.stdout).toMatch(/Seccomp_filters:\s+1/);
      expect(second.stdout).toContain(`peer 127.77.0.1:${echoPort}`);
      expect(decisionsOf(home, second.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
      await gateway.background.kill(impostor.id);
      const said = readFileSync(impostor.outputPath!, 'utf8');
      expect(said).toContain('asked');
      expect(said).not.toContain('got fds');
    } finally {
      await gateway.close();
    }
  });
});

maybe('raw TCP relayed (connectHandoff: false), and a namespace of the run\'s own', () => {
  test('differential: relayed, the run\'s socket\'s peer is its 127.77 address; handed over, the real server', async () => {
    const relayed = makeGateway('relayed', `{ mode: allowlist, tcp: ["echo.test:${echoPort}"] }`, false);
    try {
      const result = await relayed.gateway.exec({ command: `grep Seccomp_filters /proc/self/status; ${PEER_PY('echo.test', echoPort)}`, cwd: relayed.dir });
      expect(result.stdout).toMatch(/Seccomp_filters:\s+1/);
      expect(result.stdout).toContain(`peer 127.77.0.1:${echoPort}`);
      expect(result.stdout).toContain('echo:hi');
      expect(decisionsOf(relayed.home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
    } finally {
      await relayed.gateway.close();
    }
  });

  test('a run with a namespace of its own (an env-bound secret narrows it) is handed over too', async () => {
    const own = join(tmp.dir, 'own');
    const home = join(own, 'home');
    mkdirSync(own, { recursive: true });
    const policy = join(own, 'policy.yaml');
    writeFileSync(policy, [
      'version: 1',
      `sandbox: { mode: required, network: { mode: allowlist, allow: [echo.test], tcp: ["echo.test:${echoPort}"] } }`,
      'secrets: { bind: [{ ref: "secret:tok", hosts: [echo.test], delivery: env }] }',
    ].join('\n'));
    const gateway = createGateway({
      home, env: baseEnv(), cwd: own, policyFile: policy, egress: { ...names, runtimeDir: own },
      sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'tok' ? { found: true, value: 'tok-value-0123456789' } : { found: false }) }],
    });
    try {
      const result = await gateway.exec({ command: `: <<secret:tok>>; ${PEER_PY('echo.test', echoPort)}`, cwd: own });
      const started = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { event: string; runId: string; network?: { namespace?: string } })
        .find((r) => r.event === 'exec.started' && r.runId === result.id);
      expect(started?.network?.namespace).toBe('own');
      expect(result.stdout).toContain(`peer 127.0.0.1:${echoPort}`);
      expect(decisionsOf(home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
    } finally {
      await gateway.close();
    }
  });
});

maybe('a background run started from the CLI (served by its detached supervisor)', () => {
  test('reaches a host service handed over after the CLI has exited, recorded in its audit log', async () => {
    const dir = join(tmp.dir, 'cli');
    const home = join(dir, 'home');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'policy.yaml'), ['version: 1', `sandbox: { mode: required, network: { mode: allowlist, hostServices: [${echoPort}] } }`].join('\n'));
    const command = [
      // The CLI has exited by now: only the detached supervisor serves the run.
      'for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done',
      `${PEER_PY('127.0.0.1', echoPort)} > cli-bg.txt 2>&1`,
      'echo done > cli-bg-done',
    ].join('\n');
    const started = spawnSync(process.execPath, [CLI, 'run', '--mode', 'background', '--', command], {
      cwd: dir, encoding: 'utf8',
      env: baseEnv({ EXECGATE_HOME: home, EXECGATE_POLICY: join(dir, 'policy.yaml'), EXECGATE_KEYRING: 'off' }),
    });
    expect(started.stderr).toBe('');
    expect(started.status).toBe(0);
    const id = started.stdout.trim();
    writeFileSync(join(dir, 'go'), '');
    expect(await waitFor(() => existsSync(join(dir, 'cli-bg-done')), 60_000, 50)).toBe(true);
    const text = readFileSync(join(dir, 'cli-bg.txt'), 'utf8');
    expect(text).toContain(`peer 127.0.0.1:${echoPort}`);
    expect(text).toContain('echo:hi');
    expect(await waitFor(() => decisionsOf(home, id).length > 0, 10_000, 50)).toBe(true);
    expect(decisionsOf(home, id)).toEqual([expect.objectContaining({ via: 'host', port: echoPort, allowed: true, rule: `hostService:${echoPort}` })]);
    // The HTML report lists the connection under its run, as `audit show` words it.
    const html = join(dir, 'report.html');
    const report = spawnSync(process.execPath, [CLI, 'audit', 'report', '--html', html], { cwd: dir, encoding: 'utf8', env: baseEnv({ EXECGATE_HOME: home, EXECGATE_KEYRING: 'off' }) });
    expect(report.status).toBe(0);
    expect(readFileSync(html, 'utf8')).toContain(JSON.stringify(formatEgressEntry(readEgressEntry(decisionsOf(home, id)[0] as never))).slice(1, -1));
  });
});
