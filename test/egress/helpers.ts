/*
 * Real servers on 127.0.0.1 for the egress tests, a name map for the proxy's resolver, and a
 * bare bubblewrap sandbox (own network namespace with loopback only) wired to the proxy through
 * getSandboxEgress: what the sandbox builder will call.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, writeFileSync, existsSync } from 'node:fs';
import { createServer as createHttpServer, request, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createEgressCa } from '../../src/egress/ca';
import { getSandboxEgress } from '../../src/egress/bridge';
import { renderMounts } from '../../src/process/bwrap/spec';
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
  let stored = Buffer.alloc(0);
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = raw.toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, raw });
      if (options.gitRoot && req.url?.startsWith('/repo.git/')) return serveGit(req, res, options.gitRoot, options.password);
      // A store anyone allowed may read back (a gist, a file, a comment), and the file as GitHub's
      // contents API returns it: base64 wrapped at 60 columns inside JSON.
      if (req.url === '/store' && req.method === 'POST') {
        stored = raw;
        return void res.end('stored\n');
      }
      if (req.url === '/read') return void res.end(stored);
      if (req.url === '/contents') return void sendContents(res, stored);
      // A service that hands back the credential it was given, as a file (a token-info endpoint, say).
      if (req.url === '/contents-of-auth') return void sendContents(res, Buffer.from(`token: ${String(req.headers.authorization ?? '').replace(/^Bearer /, '')}\n`));
      if (req.url === '/redirect-http') {
        res.writeHead(302, { location: `http://${req.headers.host?.replace(/:\d+$/, '')}/landing` });
        return void res.end();
      }
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

function sendContents(res: import('node:http').ServerResponse, file: Buffer): void {
  const content = (file.toString('base64').match(/.{1,60}/g) ?? []).map((line) => `${line}\n`).join('');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'file', encoding: 'base64', content }));
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
      // As getaddrinfo does: a numeric IPv4 spelling (`0xcb00710a`, `3405803786`) is that address.
      const numeric = /^[0-9a-fx.]+$/i.test(host) ? new URL(`http://${host}/`).hostname : undefined;
      if (numeric && /^[0-9.]+$/.test(numeric)) return [numeric];
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
    '--unshare-net', ...(egress ? renderMounts(egress.mounts) : []),
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

export interface ParentProxy {
  readonly port: number;
  /** Every request line it received (CONNECT authority or absolute URL), in order. */
  readonly seen: string[];
  /** The Proxy-Authorization of each, decoded (`user:password`), or '' without one. */
  readonly credentials: string[];
  close(): Promise<void>;
}

/**
 * A company's parent proxy in small: CONNECT tunnels and absolute-form HTTP requests, Basic
 * proxy credentials required when `password` is given (407 otherwise), every name it is asked
 * for sent to `route` (the test's services on loopback).
 */
export async function startParentProxy(route: (host: string, port: number) => { host: string; port: number } | undefined, password?: string): Promise<ParentProxy> {
  const seen: string[] = [];
  const credentials: string[] = [];
  const tunnels = new Set<import('node:net').Socket>();
  const check = (req: IncomingMessage): boolean => {
    const header = String(req.headers['proxy-authorization'] ?? '');
    const given = header.startsWith('Basic ') ? Buffer.from(header.slice(6), 'base64').toString('utf8') : '';
    seen.push(req.url ?? '');
    credentials.push(given);
    return password === undefined || given.endsWith(`:${password}`);
  };
  const server = createHttpServer((req, res) => {
    if (!check(req)) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="corp"' });
      return void res.end();
    }
    const url = new URL(req.url ?? '');
    const target = route(url.hostname, Number(url.port || 80));
    if (!target) {
      res.writeHead(502);
      return void res.end();
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = request({ host: target.host, port: target.port, method: req.method, path: `${url.pathname}${url.search}`, headers }, (response) => {
      res.writeHead(response.statusCode ?? 502, response.headers);
      response.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connect', (req: IncomingMessage, socket: import('node:net').Socket, head: Buffer) => {
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    if (!check(req)) return void socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\n\r\n');
    const [host, port] = [(req.url ?? '').replace(/:\d+$/, ''), Number((req.url ?? '').split(':').pop())];
    const target = route(host, port);
    if (!target) return void socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    const upstream = netConnect(target.port, target.host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    credentials,
    close: async () => {
      for (const socket of tunnels) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
