/*
 * The raw TCP connect hand-off (egress/tcp-notify.ts) attacked as a sandboxed command would:
 * real runs in the real sandbox (sync, PTY, background), real servers on the host's loopback, the
 * programs in handoff-attacks/ doing the raw system calls.
 *
 * What a command may try: reach a port of the host's loopback that no policy names (the `secret`
 * server counts every connection it ever gets: none may come), get around the filter (the i386
 * ABI, x32, TCP Fast Open, io_uring, a listener of its own, the hand-off socket), leave the
 * supervisor waiting or stalled (malformed addresses, unreadable or impossible pointers, odd
 * sockets, descriptors swapped while the call waits, processes killed mid-call, many threads at
 * once) so that another run's connects fail or wait, and see a process that differs from a run
 * without the hand-off. Whatever goes around the filter may at most reach the run's loopback,
 * where the relay decides (a relayed socket's peer is the run's 127.77 address; a handed-over
 * one's is the real server's).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { getConnectHandoffSupport } from '../../src/egress/tcp-notify';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const ready = checkPlatform(undefined).ok && getConnectHandoffSupport() !== undefined;
const maybe = ready ? describe : describe.skip;
const PROGRAMS = join(__dirname, 'handoff-attacks');

let tmp: ReturnType<typeof makeTempDir>;
const servers: Server[] = [];
let echoPort = 0;
let secretPort = 0;
let servicePort = 0;
let secretHits = 0;

function listen(server: Server): Promise<number> {
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

beforeAll(async () => {
  tmp = makeTempDir('execgate-tcp-handoff-attacks-');
  echoPort = await listen(createServer((socket: Socket) => {
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => socket.write(Buffer.concat([Buffer.from('echo:'), chunk])));
    socket.on('end', () => socket.end());
  }));
  // A port of the host's loopback that no policy names: nothing of a run may ever reach it.
  secretPort = await listen(createServer((socket: Socket) => {
    secretHits += 1;
    socket.destroy();
  }));
  servicePort = await listen(createServer((socket: Socket) => {
    socket.on('error', () => socket.destroy());
    socket.end('service\n');
  }));
});

afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  tmp.cleanup();
});

const names = {
  resolver: async (host: string): Promise<string[]> => {
    if (host === 'echo.test') return ['203.0.113.7'];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  },
  dial: (address: string, port: number) => (address === '203.0.113.7' ? { host: '127.0.0.1', port: echoPort } : { host: address, port }),
};

/** A gateway whose runs may reach echo.test and the host service; its runtime directory is the default (no run sees it). */
function makeGateway(name: string, handoff = true, extra: string[] = []): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, ['version: 1', `sandbox: { mode: required, network: { mode: allowlist, allow: [echo.test], tcp: ["echo.test:${echoPort}"], hostServices: [${servicePort}] } }`, ...extra].join('\n'));
  const gateway = createGateway({
    home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { ...names, connectHandoff: handoff },
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'tok' ? { found: true, value: 'tok-value-0123456789' } : { found: false }) }],
  });
  return { gateway, dir, home };
}

function decisionsOf(home: string, runId?: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.event === 'egress.decision' && (runId === undefined || r.runId === runId));
}

/** `name result peer` lines of a program's output, by name. */
function lines(stdout: string): Map<string, string> {
  return new Map(stdout.trim().split('\n').map((line) => {
    const space = line.indexOf(' ');
    return [line.slice(0, space), line.slice(space + 1)] as [string, string];
  }));
}

function program(name: string, ...args: Array<string | number>): string {
  return `python3 ${join(PROGRAMS, name)} ${args.join(' ')}`;
}

maybe('raw TCP hand-off, attacked from inside a run', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => ({ gateway, dir, home } = makeGateway('shared')));
  afterAll(async () => { await gateway.close(); });

  test('a connect from a thread other than the main one is handed over too (it went to the relay), recorded as the run\'s', async () => {
    const result = await gateway.exec({ command: `python3 -c "
import socket, threading
def go():
    s = socket.create_connection(('echo.test', ${echoPort}), timeout=10)
    print('peer', '%s:%d' % s.getpeername())
    s.sendall(b't\\n'); print(s.recv(20).decode().strip())
t = threading.Thread(target=go); t.start(); t.join()
"`, cwd: dir });
    expect(result.stdout).toContain(`peer 127.0.0.1:${echoPort}`);
    expect(result.stdout).toContain('echo:t');
    expect(decisionsOf(home, result.id)).toEqual([expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true })]);
  });

  test('malformed addresses, impossible pointers, odd sockets: each answered as the kernel would, none left waiting, nothing unnamed reached (PTY)', async () => {
    const before = secretHits;
    const result = await gateway.exec({ command: program('odd.py', echoPort, secretPort, servicePort), cwd: dir, mode: 'pty', timeout: 60_000 });
    const got = lines(result.stdout.replace(/\r/g, ''));
    for (const name of ['v4-secret', 'v4-secret-on-named-address', 'v4-any-secret', 'v6-mapped-secret', 'v6-loopback-secret']) expect(got.get(name)).toBe('ECONNREFUSED -');
    expect(got.get('v4-on-v6-secret')).toBe('EAFNOSUPPORT -');
    expect(got.get('v6-on-v4-secret')).toBe('EAFNOSUPPORT -');
    expect(got.get('addrlen-15')).toBe('EINVAL -');
    expect(got.get('addrlen-4096')).toBe('EINVAL -');
    // The kernel reads an int: this is a 16-byte address, and the host service it names is reached.
    expect(got.get('addrlen-high-bits')).toBe(`ok 127.0.0.1:${servicePort}`);
    expect(got.get('udp-named')).toBe(`ok 127.77.0.1:${echoPort}`);
    expect(got.get('unix')).toBe('ENOENT -');
    // Not replaced by a socket handed over: the kernel answers a listening socket, the relay a bound one.
    expect(got.get('listening')).toBe('EISCONN -');
    expect(got.get('bound')).toBe(`ok 127.77.0.1:${echoPort}`);
    // Pointers: these connects were left waiting for ever (a pointer past 2^63), or connected
    // from a page the caller could not read.
    for (const name of ['null', 'unmapped', 'kernel-pointer', 'non-canonical', 'unreadable-page']) expect(got.get(name)).toBe('EFAULT -');
    expect(got.get('closed-fd')).toBe('EBADF');
    expect(got.get('pipe-fd')).toBe('ENOTSOCK');
    expect(got.get('connected')).toBe('EISCONN');
    expect(got.get('after')).toBe(`127.0.0.1:${echoPort}`);
    expect(result.exitCode).toBe(0);
    expect(secretHits).toBe(before);
  }, 90_000);

  test('around the filter (i386 ABI, x32, TCP Fast Open, io_uring, a listener of its own, the hand-off socket): at most the relay (background)', async () => {
    const before = secretHits;
    const started = await gateway.exec({ command: `${program('abi.py', echoPort, secretPort, servicePort)} > abi.txt 2>&1`, cwd: dir, mode: 'background' });
    const ended = await gateway.background.wait(started.id, 60_000);
    const got = lines(readFileSync(join(dir, 'abi.txt'), 'utf8'));
    expect(ended.exitCode).toBe(0);
    if (process.arch === 'x64') {
      // Not seen by the filter: made as asked, to the relay on the run's loopback.
      expect(got.get('int80-socketcall-named')).toBe(`ok 127.77.0.1:${echoPort}`);
      expect(got.get('int80-connect-named')).toBe(`ok 127.77.0.1:${echoPort}`);
      for (const how of ['socketcall', 'connect']) {
        expect(got.get(`int80-${how}-secret`)).toBe('ECONNREFUSED -');
        expect(got.get(`int80-${how}-secret-named-address`)).toBe('ECONNREFUSED -');
      }
      expect(got.get('x32-secret')).toMatch(/^(ENOSYS|ECONNREFUSED) -$/);
    }
    expect(got.get('fastopen-named')).toBe(`ok 127.77.0.1:${echoPort}`);
    expect(got.get('fastopen-secret')).toBe('ECONNREFUSED -');
    expect(got.get('fastopen-secret-named-address')).toBe('ECONNREFUSED -');
    expect(got.get('io_uring')).toBe('EPERM');
    // One listener per filter chain: the run cannot take its own connects over.
    expect(got.get('own-listener')).toBe('EBUSY');
    expect(got.get('handoff-socket')).toMatch(/^(answer:b''|ECONNRESET|EPIPE)$/);
    expect(got.get('handoff-socket-unlink')).toMatch(/^E(BUSY|ROFS|PERM|ACCES)$/);
    expect(got.get('handoff-socket-rename')).toMatch(/^E(BUSY|ROFS|PERM|ACCES|XDEV)$/);
    expect(got.get('after')).toBe(`127.0.0.1:${echoPort}`);
    expect(secretHits).toBe(before);
  }, 90_000);

  test('the descriptor swapped by another thread while the call waits (1,500 connects): only the named destination is reached', async () => {
    // 1,500 here; 20,000 by hand.
    const before = secretHits;
    const result = await gateway.exec({ command: program('swap.py', echoPort, secretPort, 1500), cwd: dir, timeout: 90_000 });
    expect(result.exitCode).toBe(0);
    const counts = Object.fromEntries(result.stdout.trim().split(' ').map((kv) => kv.split('=')));
    expect(Object.keys(counts).filter((key) => key.startsWith('peer:'))).toEqual([]);
    expect(Number(counts.named ?? 0)).toBeGreaterThan(0);
    expect(secretHits).toBe(before);
    const after = await gateway.exec({ command: `python3 -c "import socket; print('%s:%d' % socket.create_connection(('echo.test', ${echoPort}), timeout=10).getpeername())"`, cwd: dir });
    expect(after.stdout.trim()).toBe(`127.0.0.1:${echoPort}`);
  }, 120_000);

  test('a flood from one run (processes killed mid-call, 300 threads at once) neither stalls nor fails another run\'s connects', async () => {
    // 300 threads x 3 connects and 60 processes here; 1,000 x 3 and 100 by hand.
    const flood = gateway.exec({ command: program('flood.py', echoPort, 300, 3, 60), cwd: dir, timeout: 100_000 });
    const victim = await gateway.exec({ command: program('victim.py', echoPort, 40), cwd: dir, timeout: 60_000 });
    const flooded = await flood;
    expect(victim.stdout.trim()).toBe('handed=40');
    expect(flooded.exitCode).toBe(0);
    expect(flooded.stdout).toMatch(/killed 30 calls 900 handed=900/);
    expect(decisionsOf(home, victim.id)).toHaveLength(40);
    expect(decisionsOf(home, victim.id).every((d) => d.allowed === true && d.runId === victim.id)).toBe(true);
  }, 150_000);
  // Found here: the supervisor's hand-off socket is bound into every run whose connects are
  // handed over, and it kept at most 64 connections that had not handed a listener yet; a run
  // holding that many made every other such run fail to start (its first program had installed
  // the filter when it was dropped: exit 125). Now the first program names its token and waits
  // for the supervisor's word before it installs the filter, and connections that named nothing
  // are dropped oldest first past 256: a run holding 400 open (and reopening the dropped ones)
  // leaves another run starting and connecting (handed over, or at worst relayed).
  test('idle connections to the hand-off socket held by one run do not keep another run from starting', async () => {
    const hold = gateway.exec({ command: program('hold.py', 8, 400), cwd: dir, timeout: 30_000 });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const other = await gateway.exec({ command: `python3 -c "import socket; print('%s:%d' % socket.create_connection(('echo.test', ${echoPort}), timeout=10).getpeername())"`, cwd: dir });
    const held = await hold;
    expect(held.stdout).toMatch(/made \d+/);
    expect(other.stderr).not.toContain('could not hand its connections');
    expect(other.exitCode).toBe(0);
    expect(other.stdout).toMatch(new RegExp(`^(127\\.0\\.0\\.1|127\\.77\\.0\\.1):${echoPort}\n$`));
  }, 60_000);
});

maybe('raw TCP hand-off: runs with different policies, and what the program sees', () => {
  test('a run narrowed by an env-bound secret (a namespace of its own) beside a shared one: each decided by its own policy, recorded as itself', async () => {
    const { gateway, dir, home } = makeGateway('narrowed', true, ['secrets: { bind: [{ ref: "secret:tok", hosts: [echo.test], delivery: env }] }']);
    try {
      const service = `python3 -c "
import socket
for host in ('127.0.0.1', 'echo.test'):
    port = ${servicePort} if host == '127.0.0.1' else ${echoPort}
    try:
        s = socket.create_connection((host, port), timeout=10)
        print(host, 'peer', '%s:%d' % s.getpeername())
    except OSError as e:
        print(host, type(e).__name__)
"`;
      const [narrowed, shared] = await Promise.all([
        gateway.exec({ command: `: <<secret:tok>>; ${service}`, cwd: dir }),
        gateway.exec({ command: service, cwd: dir }),
      ]);
      // The narrowed run may reach echo.test only: the host service is refused at connect.
      expect(narrowed.stdout).toContain('127.0.0.1 ConnectionRefusedError');
      expect(narrowed.stdout).toContain(`echo.test peer 127.0.0.1:${echoPort}`);
      expect(shared.stdout).toContain(`127.0.0.1 peer 127.0.0.1:${servicePort}`);
      expect(shared.stdout).toContain(`echo.test peer 127.0.0.1:${echoPort}`);
      expect(decisionsOf(home, narrowed.id)).toEqual(expect.arrayContaining([
        expect.objectContaining({ via: 'host', port: servicePort, allowed: false, rule: 'bound:secret:tok' }),
        expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true }),
      ]));
      expect(decisionsOf(home, shared.id)).toEqual(expect.arrayContaining([
        expect.objectContaining({ via: 'host', port: servicePort, allowed: true }),
        expect.objectContaining({ via: 'tcp', host: 'echo.test', allowed: true }),
      ]));
      expect(decisionsOf(home).filter((d) => d.runId !== narrowed.id && d.runId !== shared.id)).toEqual([]);
      // No secret on any argv: the supervisor's (on the host) and every process's of a run.
      const supervisors = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('tcp-supervisor.py'));
      expect(supervisors.length).toBeGreaterThan(0);
      for (const line of supervisors) expect(line).not.toContain('tok-value');
      const inside = await gateway.exec({ command: ': <<secret:tok>>; cat /proc/[0-9]*/cmdline | tr "\\0" " "', cwd: dir });
      expect(inside.stdout).not.toContain('tok-value');
    } finally {
      await gateway.close();
    }
  }, 90_000);

  test('the program sees what it sees without the hand-off: environment, signals, umask, cwd, descriptors, limits, processes (sync, PTY, background)', async () => {
    const handed = makeGateway('seen-handed');
    const relayed = makeGateway('seen-relayed', false);
    const observe = `bash ${join(PROGRAMS, 'observe.sh')}`;
    async function seen(gateway: Gateway, dir: string, mode: 'sync' | 'pty' | 'background'): Promise<string> {
      let text: string;
      if (mode === 'background') {
        const started = await gateway.exec({ command: `${observe} > seen.txt`, cwd: dir, mode });
        await gateway.background.wait(started.id, 30_000);
        text = readFileSync(join(dir, 'seen.txt'), 'utf8');
      } else {
        text = (await gateway.exec({ command: observe, cwd: dir, mode })).stdout.replace(/\r/g, '');
      }
      return text.split(dir).join('DIR');
    }
    try {
      for (const mode of ['sync', 'pty', 'background'] as const) {
        const a = await seen(handed.gateway, handed.dir, mode);
        const b = await seen(relayed.gateway, relayed.dir, mode);
        // The differences: the filter the hand-off adds, and the argv of the sandbox's first
        // process (bubblewrap, which started the hand-off's program before the run's).
        expect(a).toMatch(/Seccomp_filters:\s+2/);
        expect(b).toMatch(/Seccomp_filters:\s+1/);
        const same = (text: string): string => text.replace(/Seccomp_filters:\s+\d/, 'Seccomp_filters: N').replace(/^process 1 .*$/m, 'process 1');
        expect(same(a)).toBe(same(b));
        expect(a).toContain('SigIgn:');
        expect(a).toContain('env PATH=');
      }
    } finally {
      await handed.gateway.close();
      await relayed.gateway.close();
    }
  }, 120_000);
});
