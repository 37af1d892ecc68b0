/*
 * The gateway's one egress bridge (egress/bridge.ts): started inside the shared network namespace
 * by the first proxied run, used by every later run, started again when it died, and gone with
 * the gateway however the gateway ends (close(), or SIGKILL of a gateway process).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';

const MARKER = 'execgate-shared-egress-bridge';
const DIST = join(__dirname, '..', '..', 'dist');
const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? undefined : Number(fields[1]);
  } catch {
    return undefined;
  }
}

/** Live processes of a bridge (nsenter'd bubblewrap, its init, node) below `ancestor`, or anywhere when undefined. */
function bridgeProcesses(ancestor?: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(MARKER)) continue;
    } catch {
      continue;
    }
    if (parentOf(pid) === undefined) continue;
    if (ancestor === undefined) {
      found.push(pid);
      continue;
    }
    for (let p: number | undefined = pid, depth = 0; p !== undefined && p > 1 && depth < 20; p = parentOf(p), depth++) {
      if (p === ancestor) {
        found.push(pid);
        break;
      }
    }
  }
  return found;
}

let tmp: ReturnType<typeof makeTempDir>;
let service: Server;
const hits: string[] = [];

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-bridge-');
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

maybe('the shared bridge in one gateway', () => {
  let gateway: Gateway;
  beforeAll(() => {
    gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, egress: names() });
  });
  afterAll(async () => { await gateway?.close(); });

  const fetchVia = async (path: string): Promise<string> => (await gateway.exec({
    command: `curl -sS -o /dev/null -w "%{http_code} " --max-time 20 http://service.test${path}; echo "\${HTTP_PROXY##*:}"`,
  })).stdout;

  test('is started by the first proxied run and serves later runs on the same port; a killed bridge is replaced for the next run', async () => {
    expect(bridgeProcesses(process.pid)).toEqual([]);
    const first = await fetchVia('/one');
    const [status, port] = first.trim().split(' ');
    expect(status).toBe('200');
    const bridge = bridgeProcesses(process.pid);
    expect(bridge.length).toBeGreaterThan(0);
    expect((await fetchVia('/two')).trim()).toBe(`200 ${port}`);
    // The same processes served the second run: none was started for it.
    expect(bridgeProcesses(process.pid).sort()).toEqual([...bridge].sort());

    for (const pid of bridge) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    expect(await waitFor(() => bridgeProcesses(process.pid).every((pid) => !bridge.includes(pid)), 30_000)).toBe(true);
    const third = (await fetchVia('/three')).trim().split(' ');
    expect(third[0]).toBe('200');
    const replaced = bridgeProcesses(process.pid);
    expect(replaced.length).toBeGreaterThan(0);
    expect(replaced.some((pid) => bridge.includes(pid))).toBe(false);
    expect(hits).toEqual(['/one', '/two', '/three']);
  });

  test('ends with gateway.close()', async () => {
    const other = createGateway({ home: join(tmp.dir, 'home-close'), env: baseEnv(), cwd: tmp.dir, egress: names() });
    const before = new Set(bridgeProcesses(process.pid));
    expect((await other.exec({ command: 'curl -sS --max-time 20 http://service.test/close' })).stdout).toBe('ok');
    const mine = bridgeProcesses(process.pid).filter((pid) => !before.has(pid));
    expect(mine.length).toBeGreaterThan(0);
    await other.close();
    expect(await waitFor(() => bridgeProcesses().every((pid) => !mine.includes(pid)), 30_000)).toBe(true);
  });
});

/*
 * A gateway in a child process, SIGKILLed once its bridge is up (a file the run writes after its
 * proxied request says so): nothing of the bridge may be left.
 */
const SCRIPT = `
const { createGateway } = require(${JSON.stringify(DIST)});
const [, dir, port] = process.argv;
const gateway = createGateway({ home: dir + '/home-killed', cwd: dir, egress: {
  resolver: async () => ['203.0.113.10'],
  dial: () => ({ host: '127.0.0.1', port: Number(port) }),
} });
gateway.exec({ command: 'curl -sS --max-time 20 http://service.test/killed > killed.out; exec sleep 300' }).catch(() => {});
`;

maybe('the shared bridge and a gateway that dies', () => {
  test('SIGKILL of the gateway process ends its bridge', async () => {
    const child = spawn(process.execPath, ['-e', SCRIPT, tmp.dir, String((service.address() as AddressInfo).port)], {
      cwd: tmp.dir,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, EXECGATE_KEYRING: 'off' },
    });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    try {
      expect(await waitFor(() => {
        try {
          return readFileSync(join(tmp.dir, 'killed.out'), 'utf8') === 'ok';
        } catch {
          return false;
        }
      }, 30_000, 50)).toBe(true);
      const bridge = bridgeProcesses(child.pid);
      expect(bridge.length).toBeGreaterThan(0);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      expect(await waitFor(() => bridgeProcesses().every((pid) => !bridge.includes(pid)), 20_000)).toBe(true);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      writeFileSync(join(tmp.dir, 'done'), '');
    }
  }, 120_000);
});
