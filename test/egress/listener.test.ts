/*
 * The gateway's egress listener (egress/bridge.ts): a TCP listener on the shared network
 * namespace's 127.0.0.1, opened by the first proxied run through a short-lived process entered into
 * the namespace, held by the gateway's own process (no process relays a run's bytes), used by every
 * later run, closed with the gateway however it ends. It lives in the namespace only: the host's
 * loopback does not have it, and a run cannot take its port.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { SharedNetwork } from '../../src/process/bwrap/network';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';

const MARKER = 'execgate-egress-listener';
const DIST = join(__dirname, '..', '..', 'dist');
const platform = checkPlatform(undefined);
const maybe = platform.ok ? describe : describe.skip;

/**
 * Live processes whose command line carries `marker`, in the network namespace `namespace`
 * (`net:[N]`): the listener processes of this test's gateway, not those another test file's
 * gateways start beside it (each of those enters its own gateway's namespace).
 */
function processesWith(marker: string, namespace: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(marker) && readlinkSync(`/proc/${entry}/ns/net`) === namespace) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

/** Socket inodes (`socket:[N]`) process `pid` holds. */
function socketsOf(pid: number | 'self'): Set<string> {
  const found = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith('socket:[')) found.add(target.slice(8, -1));
    } catch {
      // closed since the listing
    }
  }
  return found;
}

/** The inode of the TCP socket listening on 127.0.0.1:`port` in `/proc/net/tcp` text, or undefined. */
function listeningInode(tcp: string, port: number): string | undefined {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of tcp.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === local && fields[3] === '0A') return fields[9];
  }
  return undefined;
}

let tmp: ReturnType<typeof makeTempDir>;
let service: Server;
const hits: string[] = [];

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-listener-');
  service = createServer((req, res) => { hits.push(req.url ?? ''); res.end('ok'); });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  await new Promise((resolve) => service.close(resolve));
  tmp.cleanup();
});

function names(): { resolver: (host: string) => Promise<string[]>; dial: (address: string, port: number) => { host: string; port: number } } {
  const port = (service.address() as AddressInfo).port;
  return {
    resolver: async (host) => {
      if (host === 'service.test') return ['203.0.113.10'];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    },
    dial: (address, p) => (address === '203.0.113.10' ? { host: '127.0.0.1', port } : { host: address, port: p }),
  };
}

maybe('the shared listener in one gateway', () => {
  let gateway: Gateway;
  beforeAll(() => {
    gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, egress: names() });
  });
  afterAll(async () => { await gateway?.close(); });

  // The run's view: status, the proxy port, and its namespace's TCP table.
  const fetchVia = async (path: string): Promise<{ status: string; port: number; tcp: string }> => {
    const { stdout } = await gateway.exec({
      command: `curl -sS -o /dev/null -w "%{http_code}\\n" --max-time 20 http://service.test${path}; echo "\${HTTP_PROXY##*:}"; cat /proc/net/tcp`,
    });
    const [status, port, ...tcp] = stdout.split('\n');
    return { status, port: Number(port), tcp: tcp.join('\n') };
  };

  test('is opened by the first proxied run, held by the gateway\'s own process inside the namespace, and serves later runs on the same port', async () => {
    const first = await fetchVia('/one');
    expect(first.status).toBe('200');
    // The socket listening on the proxy port in the run's namespace is one the gateway holds.
    const inode = listeningInode(first.tcp, first.port);
    expect(inode).toBeDefined();
    expect(socketsOf('self').has(inode as string)).toBe(true);
    // The host's loopback has no such listener (the same port, if listening there, is another socket).
    expect(listeningInode(readFileSync('/proc/self/net/tcp', 'latin1'), first.port)).not.toBe(inode);
    const second = await fetchVia('/two');
    expect(second.status).toBe('200');
    expect(second.port).toBe(first.port);
    expect(listeningInode(second.tcp, second.port)).toBe(inode);
    // The process that opened it is gone: nothing but the gateway is on the data path.
    const shared = (await gateway.exec({ command: 'readlink /proc/self/ns/net' })).stdout.trim();
    expect(shared).toMatch(/^net:\[\d+\]$/);
    expect(await waitFor(() => processesWith(MARKER, shared).length === 0, 10_000)).toBe(true);
    expect(hits.slice(-2)).toEqual(['/one', '/two']);
  });

  test('a run cannot take the listener\'s port', async () => {
    const { port } = await fetchVia('/three');
    const { stdout } = await gateway.exec({
      command: `node -e "const s=require('net').createServer();s.on('error',(e)=>{console.log(e.code);process.exit(0)});s.listen(${port},'127.0.0.1',()=>console.log('BOUND'))" & sleep 1; kill %1 2>/dev/null; true`,
    });
    expect(stdout.trim()).toBe('EADDRINUSE');
  });

  test('a run with a network namespace of its own (a delivery-env secret) does not have the shared listener on its loopback', async () => {
    const { port } = await fetchVia('/four');
    // Its own directory: a policy inside another gateway's workspace, written while that gateway's runs go, is refused.
    const own = makeTempDir('execgate-egress-narrowed-');
    const dir = own.dir;
    writeFileSync(join(dir, 'policy.yaml'), [
      'version: 1',
      'sandbox: { mode: required, network: { mode: allowlist, allow: [service.test] } }',
      'secrets:',
      '  bind:',
      '    - { ref: "secret:narrow", hosts: [service.test], delivery: env }',
    ].join('\n'));
    const narrowed = createGateway({
      home: join(dir, 'home'), env: baseEnv(), cwd: dir, policyFile: join(dir, 'policy.yaml'), egress: names(),
      sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'narrow' ? { found: true, value: 'narrow-value-0123456789' } : { found: false }) }],
    });
    try {
      // The same gateway's shared namespace has a listener on `port` (a run there holds it open).
      const shared = await narrowed.exec({ command: 'echo "${HTTP_PROXY##*:}"; cat /proc/net/tcp' });
      const [sharedPort, ...sharedTcp] = shared.stdout.split('\n');
      expect(listeningInode(sharedTcp.join('\n'), Number(sharedPort))).toBeDefined();
      const { stdout } = await narrowed.exec({
        command: `: "<<secret:narrow>>"; cat /proc/net/tcp; echo; curl -sS --noproxy "*" --max-time 5 -o /dev/null http://127.0.0.1:${sharedPort}/ 2>/dev/null; echo "shared=$?"; curl -sS --noproxy "*" --max-time 5 -o /dev/null http://127.0.0.1:${port}/ 2>/dev/null; echo "other=$?"`,
      });
      // Its loopback has no listener of the gateway's; connecting to either port is refused (curl 7).
      expect(listeningInode(stdout, Number(sharedPort))).toBeUndefined();
      expect(stdout).toContain('shared=7');
      expect(stdout).toContain('other=7');
    } finally {
      await narrowed.close();
      own.cleanup();
    }
  });

  test('ends with gateway.close()', async () => {
    const other = createGateway({ home: join(tmp.dir, 'home-close'), env: baseEnv(), cwd: tmp.dir, egress: names() });
    const { stdout } = await other.exec({ command: 'curl -sS --max-time 20 http://service.test/close; echo; echo "${HTTP_PROXY##*:}"; cat /proc/net/tcp' });
    const [body, port, ...tcp] = stdout.split('\n');
    expect(body).toBe('ok');
    const inode = listeningInode(tcp.join('\n'), Number(port)) as string;
    expect(socketsOf('self').has(inode)).toBe(true);
    await other.close();
    expect(await waitFor(() => !socketsOf('self').has(inode), 10_000)).toBe(true);
  });
});

maybe('opening a listener', () => {
  test('is refused for a namespace that is not the current one, and the listener opened is in the namespace asked for', async () => {
    const network = new SharedNetwork(platform.helper ?? '');
    try {
      const namespace = await network.current();
      expect(namespace).toMatch(/^net:\[\d+\]$/);
      expect(await network.listenInside('net:[1]')).toBeUndefined();
      const server = await network.listenInside(namespace as string);
      expect(server).toBeDefined();
      const port = (server?.address() as AddressInfo).port;
      const inode = listeningInode(readFileSync('/proc/self/net/tcp', 'latin1'), port);
      // Not on the host's loopback.
      expect(inode === undefined || !socketsOf('self').has(inode)).toBe(true);
      server?.close();
    } finally {
      network.close();
    }
    // After close() nothing more is opened.
    expect(await network.listenInside('net:[1]')).toBeUndefined();
  });
});

/** The inode of a socket listening in namespace `pid`'s /proc/net/tcp that this process holds, if any. */
function heldListener(pid: number): string | undefined {
  const mine = socketsOf('self');
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, 'latin1').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[3] === '0A' && mine.has(fields[9])) return fields[9];
  }
  return undefined;
}

maybe('the listener opened with the holder (a run that will go through the proxy says so when it joins)', () => {
  test('is opened in the new namespace while the holder starts, handed to the first listenInside of that namespace, and only once', async () => {
    const network = new SharedNetwork(platform.helper ?? '');
    try {
      const joined = await network.join({ listener: true });
      expect(joined).toBeDefined();
      const namespace = joined?.namespace as string;
      const holder = network.holderPid(namespace) as number;
      // Nobody asked for a listener yet, and one of this process's sockets listens inside.
      expect(await waitFor(() => heldListener(holder) !== undefined, 10_000)).toBe(true);
      const early = heldListener(holder) as string;
      // A namespace that is not the current one gets nothing, and does not use it up.
      expect(await network.listenInside('net:[1]')).toBeUndefined();
      const first = await network.listenInside(namespace);
      const firstPort = (first?.address() as AddressInfo).port;
      expect(listeningInode(readFileSync(`/proc/${holder}/net/tcp`, 'latin1'), firstPort)).toBe(early);
      const second = await network.listenInside(namespace);
      const secondPort = (second?.address() as AddressInfo).port;
      expect(secondPort).not.toBe(firstPort);
      expect(listeningInode(readFileSync(`/proc/${holder}/net/tcp`, 'latin1'), secondPort)).not.toBe(early);
      first?.close();
      second?.close();
    } finally {
      network.close();
    }
  });

  test('one nobody took is closed with the network', async () => {
    const network = new SharedNetwork(platform.helper ?? '');
    let early: string | undefined;
    try {
      const joined = await network.join({ listener: true });
      const holder = network.holderPid(joined?.namespace as string) as number;
      expect(await waitFor(() => (early = heldListener(holder)) !== undefined, 10_000)).toBe(true);
    } finally {
      network.close();
    }
    expect(await waitFor(() => !socketsOf('self').has(early as string), 10_000)).toBe(true);
    expect(await network.listenInside('net:[1]')).toBeUndefined();
  });
});

/*
 * A gateway in a child process, SIGKILLed once its listener is up (a file the run writes after
 * its proxied request says so): nothing of it may be left, and its port is closed in the
 * namespace a run of it still holds.
 */
const SCRIPT = `
const { createGateway } = require(${JSON.stringify(DIST)});
const [, dir, port] = process.argv;
const gateway = createGateway({ home: dir + '/home-killed', cwd: dir, egress: {
  resolver: async () => ['203.0.113.10'],
  dial: () => ({ host: '127.0.0.1', port: Number(port) }),
} });
gateway.exec({ command: 'readlink /proc/self/ns/net > ns.out; curl -sS --max-time 20 http://service.test/killed > killed.out; echo "\${HTTP_PROXY##*:}" > port.out; exec sleep 300' }).catch(() => {});
`;

maybe('the shared listener and a gateway that dies', () => {
  test('SIGKILL of the gateway process leaves no listener process behind', async () => {
    const child = spawn(process.execPath, ['-e', SCRIPT, tmp.dir, String((service.address() as AddressInfo).port)], {
      cwd: tmp.dir,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, EXECGATE_KEYRING: 'off' },
    });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    try {
      expect(await waitFor(() => {
        try {
          return readFileSync(join(tmp.dir, 'killed.out'), 'utf8') === 'ok' && readFileSync(join(tmp.dir, 'port.out'), 'utf8').trim() !== '';
        } catch {
          return false;
        }
      }, 30_000, 50)).toBe(true);
      expect(socketsOf(child.pid as number).size).toBeGreaterThan(0);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      const shared = readFileSync(join(tmp.dir, 'ns.out'), 'utf8').trim();
      expect(shared).toMatch(/^net:\[\d+\]$/);
      expect(await waitFor(() => processesWith(MARKER, shared).length === 0, 20_000)).toBe(true);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      writeFileSync(join(tmp.dir, 'done'), '');
    }
  }, 120_000);
});
