/*
 * Real servers on 127.0.0.1 for the egress tests, a name map for the proxy's resolver, and a
 * bare bubblewrap sandbox (own network namespace with loopback only) wired to the proxy through
 * getSandboxEgress: what the sandbox builder will call.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, writeFileSync, existsSync } from 'node:fs';
import { createServer as createHttpServer, request, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createEgressCa } from '../../src/egress/ca';
import { getSandboxEgress } from '../../src/egress/bridge';
import type { EgressRun } from '../../src/egress/proxy';

export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  readonly raw: Buffer;
}

export interface TestService {
  readonly name: string;
  readonly httpsPort: number;
  readonly httpPort: number;
  /** Every request received (HTTP and HTTPS). */
  readonly seen: Seen[];
  /** TCP connections accepted (HTTP and HTTPS), whether or not a request followed. */
  connections: number;
  close(): Promise<void>;
}

/** A stand-in for a public CA: the test servers' certificates chain to it; the proxy trusts it upstream. */
export const publicCa = createEgressCa({ keyBits: 2048 });

/**
 * A service that records what it receives and echoes the request (headers and body) back as
 * JSON, gzip-encoded on `?gzip`, and in an `x-echo-auth` header: the worst case of an API that
 * reflects a credential. `/repo.git/...` serves a dumb-HTTP git repository behind Basic auth
 * with `password`.
 */
export async function startService(name: string, options: { gitRoot?: string; password?: string } = {}): Promise<TestService> {
  const seen: Seen[] = [];
  const service = { name, seen, connections: 0 } as { -readonly [K in keyof TestService]: TestService[K] };
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = raw.toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, raw });
      if (options.gitRoot && req.url?.startsWith('/repo.git/')) return serveGit(req, res, options.gitRoot, options.password);
      const echo = JSON.stringify({ service: name, url: req.url, headers: req.headers, body });
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-echo-auth': String(req.headers.authorization ?? '') };
      if (req.url?.includes('gzip')) {
        res.writeHead(200, { ...headers, 'content-encoding': 'gzip' });
        res.end(gzipSync(echo));
      } else if (req.url?.includes('weird-encoding')) {
        res.writeHead(200, { ...headers, 'content-encoding': 'x-custom' });
        res.end(echo);
      } else {
        res.writeHead(200, headers);
        res.end(echo);
      }
    });
  };
  const https = createHttpsServer({ SNICallback: (servername, cb) => cb(null, publicCa.getSecureContext(servername)) }, handler);
  const http = createHttpServer(handler);
  for (const server of [https, http] as HttpServer[]) server.on('connection', () => { service.connections += 1; });
  await Promise.all([https, http].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
  service.httpsPort = (https.address() as AddressInfo).port;
  service.httpPort = (http.address() as AddressInfo).port;
  service.close = async () => {
    for (const server of [https, http] as HttpServer[]) server.closeAllConnections();
    await Promise.all([https, http].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  };
  return service as TestService;
}

function serveGit(req: IncomingMessage, res: import('node:http').ServerResponse, root: string, password: string | undefined): void {
  const auth = req.headers.authorization;
  const given = auth?.startsWith('Basic ') ? Buffer.from(auth.slice(6), 'base64').toString('utf8').split(':').slice(1).join(':') : undefined;
  if (password !== undefined && given !== password) {
    res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
    res.end('auth required\n');
    return;
  }
  const path = normalize(join(root, (req.url ?? '').split('?')[0]!));
  if (!path.startsWith(root) || !existsSync(path)) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200);
  res.end(readFileSync(path));
}

/** A bare repository with one commit, prepared for the dumb HTTP protocol. */
export function makeGitRepo(dir: string): string {
  const work = join(dir, 'work');
  mkdirSync(work);
  const git = (...args: string[]): void => void execFileSync('git', args, { cwd: work, env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(work, 'README'), 'egress test repository\n');
  git('add', 'README');
  git('commit', '-q', '-m', 'first');
  execFileSync('git', ['clone', '-q', '--bare', work, join(dir, 'repo.git')]);
  execFileSync('git', ['update-server-info'], { cwd: join(dir, 'repo.git') });
  return dir;
}

/** Names the proxy's resolver knows: public-looking test addresses, plus rebinding names. */
export function makeNames(services: Record<string, TestService>): {
  resolver: (host: string) => Promise<string[]>;
  dial: (address: string, port: number) => { host: string; port: number };
} {
  const addresses = new Map<string, TestService>();
  const names = new Map<string, string[]>([
    ['rebind.test', ['127.0.0.1']],
    ['metadata.test', ['169.254.169.254']],
    ['mapped.test', ['::ffff:127.0.0.1']],
  ]);
  let next = 10;
  for (const [host, service] of Object.entries(services)) {
    const address = `203.0.113.${next++}`;
    addresses.set(address, service);
    names.set(host, [address]);
  }
  return {
    resolver: async (host) => {
      const found = names.get(host);
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return found;
    },
    dial: (address, port) => {
      const service = addresses.get(address);
      // Anything else is dialled as asked: the loopback/metadata tests must never get here.
      if (!service) return { host: address, port };
      return { host: '127.0.0.1', port: port === 443 ? service.httpsPort : port === 80 ? service.httpPort : port };
    },
  };
}

export interface SandboxResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const REPO = realpathSync(join(__dirname, '..', '..'));

/** Run `script` in bash inside a bare bwrap sandbox with no network but the egress bridge. */
export function runSandboxed(run: EgressRun | undefined, script: string, env: Record<string, string> = {}, cwd?: string): Promise<SandboxResult> {
  const egress = run ? getSandboxEgress(run, { port: 3128 }) : undefined;
  const argv = ['/bin/bash', '--norc', '--noprofile', '-c', script];
  const args = [
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
    // The checkout (the bridge, the preload and their node_modules) stays readable when it lies
    // under /tmp, as the gateway's own sandbox plan does for execgate's files.
    '--ro-bind', REPO, REPO,
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session',
    ...(cwd ? ['--bind', cwd, cwd, '--chdir', cwd] : []),
    '--unshare-net', ...(egress ? egress.bwrapArgs : []),
    '--', ...(egress ? egress.wrap(argv) : argv),
  ];
  const childEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', ...egress?.env, ...env };
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8'); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A plain HTTP request to `url` through a run's proxy socket; resolves to the status code. */
export function getThrough(run: EgressRun, url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: run.socketPath, path: url, headers: { host: new URL(url).host, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
