/*
 * The gateway-side egress proxy. A sandboxed run has no network but loopback; the only way out is
 * a Unix socket the proxy listens on, reached through a bridge on the run's loopback (bridge.ts).
 * Two kinds of socket: the gateway's one shared socket, where a connection belongs to whichever
 * run's credentials it presents (runs opened with `shared: true`), or a socket of the run's own,
 * where the socket itself says which run a connection belongs to.
 *
 * One socket speaks three protocols, told apart by the first byte: SOCKS5 (0x05) for any TCP, and
 * HTTP for CONNECT tunnels and plain-HTTP proxy requests.
 *
 * The runs of one gateway share a network namespace, so a run could connect to another run's
 * bridge on the shared loopback and borrow that run's policy and injections. A run opened with
 * `credentials` is therefore also identified by them: every HTTP proxy request and CONNECT must
 * carry them in Proxy-Authorization, every SOCKS5 client must give them as username/password
 * (RFC 1929); they live only in that run's environment (its own PID namespace hides it from the
 * others). Every connection is decided by host
 * name (CONNECT authority, absolute URL host, SOCKS domain), the name is resolved here and the
 * checked address is the one dialled. A CONNECT to a host an injected secret is bound to is
 * terminated with the per-gateway CA, so the sentinel can be swapped for the value and the
 * response redacted; every other tunnel is passed through unread.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer, isIP, type Server as NetServer, type Socket } from 'node:net';
import { basename, dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, createSecureContext, rootCertificates, TLSSocket, type SecureContext } from 'node:tls';
import { ExecgateError } from '../errors';
import { getRuntimeBase } from '../fs/runtime-dir';
import { Redactor } from '../redact';
import { resolveAllowed, systemResolver, type Resolver } from './address';
import { createEgressCa, type EgressCa } from './ca';
import { matchesHost, normalizeHost } from './hosts';
import { getSwaps, swapHeaderValue, swapText, SwapStream } from './inject';
import type { Injection } from './plan';
import { canRedactEncoding, redactBody, redactHeaders } from './redact-response';
import { decideDestination, type NetworkPolicy, type SecretBinding } from './rules';
import { handleSocks } from './socks';
import { joinSockets } from './tunnel';

export type EgressVia = 'connect' | 'http' | 'socks' | 'https-intercepted';

/** One egress decision, recorded against the run (never holds a value or a sentinel). */
export interface EgressDecision {
  readonly runId: string;
  readonly via: EgressVia;
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  readonly rule: string;
  /** The address dialled (after the resolved-address check). */
  readonly address?: string;
  readonly method?: string;
  readonly status?: number;
  /** Bound secrets whose value was swapped in on this request. */
  readonly injected?: readonly string[];
  /** Bound secrets whose sentinel was seen on a request to a host it is not bound to (sent as is). */
  readonly sentinelElsewhere?: readonly string[];
  /** The request body was content-encoded, so it was sent as is (sentinels not swapped). */
  readonly bodyNotInjected?: boolean;
}

export interface EgressProxyOptions {
  /** Called for every decision; the gateway writes them to the audit log. */
  readonly onDecision?: (decision: EgressDecision) => void;
  /** Where per-run directories go (a private directory is created inside). */
  readonly runtimeDir?: string;
  /** Name resolution (tests map names here). Default: the system resolver. */
  readonly resolver?: Resolver;
  /** Where a checked address is actually dialled (tests send it to a loopback server). */
  readonly dial?: (address: string, port: number) => { host: string; port: number };
  /** Extra CA certificates trusted for upstream TLS, on top of Node's roots (tests). */
  readonly upstreamCa?: readonly string[];
  /** The CA used for interception; created on first need when absent. */
  readonly ca?: EgressCa;
  /** Milliseconds a connection to a destination may take to open; default 30 s. */
  readonly connectTimeout?: number;
}

export interface EgressRunOptions {
  readonly runId: string;
  readonly network: NetworkPolicy;
  /** Env-delivered bound secrets the run uses (each narrows every connection). */
  readonly narrowing?: readonly SecretBinding[];
  readonly injections?: readonly Injection[];
  /** When given, required on every connection of the run (see above). */
  readonly credentials?: ProxyCredentials;
  /**
   * Reached through the gateway's shared socket (`sharedSocketPath`) rather than a socket of its
   * own: `credentials` are then required, and they are what the proxy knows the run by. After
   * close() they are refused.
   */
  readonly shared?: boolean;
}

export interface ProxyCredentials {
  readonly username: string;
  readonly password: string;
}

export interface EgressRun {
  readonly runId: string;
  /**
   * What the sandbox binds in read-only: node-preload.cjs and ca.pem (with interception), and the
   * run's own egress.sock. A shared run gets the gateway's public directory (the same files).
   */
  readonly dir: string;
  /** The Unix socket the run's bridge connects to (the gateway's shared one for a shared run). */
  readonly socketPath: string;
  /** System CAs + the gateway CA; present when the run has injected secrets. */
  readonly caBundlePath: string | undefined;
  /** What the run's clients must present (see above); absent = any client of the socket. */
  readonly credentials: ProxyCredentials | undefined;
  close(): Promise<void>;
  /** Stop serving the run here and hand it to another process's proxy (adoptRun there). */
  handOff(): HandedOffRun;
}

/** A run's endpoint as handed between processes (JSON; holds injected values: pipes only). */
export interface HandedOffRun {
  readonly dir: string;
  readonly options: EgressRunOptions;
}

interface RunContext {
  readonly options: EgressRunOptions;
  readonly redactor: Redactor;
  readonly sockets: Set<Duplex>;
}

// Larger stream buffers than Node's 16 KiB default: a proxied body is copied through four streams,
// and fewer, larger chunks halve the per-chunk cost (measured with bench/egress.js).
const STREAM_HIGH_WATER_MARK = 256 * 1024;

const RUNTIME_PREFIX = 'execgate-egress-';

const HOP_BY_HOP = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'upgrade', 'transfer-encoding',
]);

export class EgressProxy {
  readonly #options: EgressProxyOptions;
  readonly #dir: string;
  readonly #runs = new Map<string, { server?: NetServer; context: RunContext; dir?: string }>();
  /** Directories of runs handed to another process (kept by close()). */
  readonly #handedOff = new Set<string>();
  /** Directories of runs adopted from another process (removed with the run). */
  readonly #adopted = new Set<string>();
  /** Shared runs by their proxy username. */
  readonly #byUser = new Map<string, RunContext>();
  #shared: Promise<string> | undefined;
  #sharedServer: NetServer | undefined;
  /** Every connection on the shared socket, a run's or not yet anyone's: ended by close(). */
  readonly #sharedSockets = new Set<Socket>();
  #ca: EgressCa | undefined;
  #caBundlePath: string | undefined;
  #closed = false;

  constructor(options: EgressProxyOptions = {}) {
    this.#options = options;
    this.#ca = options.ca;
    try {
      this.#dir = mkdtempSync(join(options.runtimeDir ?? getRuntimeBase(), RUNTIME_PREFIX));
      chmodSync(this.#dir, 0o700);
    } catch (error) {
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not create the egress runtime directory: ${(error as Error).message}.`, {}, { cause: error });
    }
  }

  /** Open the run's socket; everything the run sends out goes through it until close(). */
  async openRun(options: EgressRunOptions): Promise<EgressRun> {
    if (this.#closed) throw new ExecgateError('EXECGATE_ERR_GATEWAY_CLOSED', 'The egress proxy was closed; it opens no new runs.');
    if (options.shared) return this.#openSharedRun(options);
    const dir = join(this.#dir, `run-${randomBytes(6).toString('hex')}`);
    const injections = options.injections ?? [];
    let caBundlePath: string | undefined;
    try {
      mkdirSync(dir, { mode: 0o700 });
      linkSync(this.#getPreloadPath(), join(dir, 'node-preload.cjs'));
      if (injections.length > 0) {
        caBundlePath = join(dir, 'ca.pem');
        linkSync(this.#getCaBundlePath(), caBundlePath);
      }
    } catch (error) {
      if (error instanceof ExecgateError) throw error;
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not prepare the egress directory for run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
    return this.#listen(options, dir, caBundlePath);
  }

  /*
   * A run that another process will hold (the detached supervisor of a background run started from
   * the command line outlives this one): stop serving it here, keep its directory (the sandbox's
   * bind mount and the environment name paths in it), and return what adoptRun needs in the other
   * process. It holds the injected values: hand it over a pipe only, never a file or argv.
   */
  #handOff(runId: string, dir: string): HandedOffRun {
    const entry = this.#runs.get(runId);
    if (!entry) throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `The egress endpoint of run ${runId} is closed; it cannot be handed over.`, { runId });
    this.#runs.delete(runId);
    this.#handedOff.add(dir);
    // Closing the listener removes the socket file; the adopting process listens on the same path.
    entry.server?.close();
    for (const socket of entry.context.sockets) socket.destroy();
    return { dir, options: entry.context.options };
  }

  /**
   * Serve a run another proxy handed over (see #handOff), at the same socket path. Its CA bundle is
   * replaced by one of this proxy's CA before the run starts: the key that signs for intercepted
   * hosts never leaves the process that uses it.
   */
  async adoptRun(handed: HandedOffRun): Promise<EgressRun> {
    if (this.#closed) throw new ExecgateError('EXECGATE_ERR_GATEWAY_CLOSED', 'The egress proxy was closed; it opens no new runs.');
    const { dir, options } = handed;
    let caBundlePath: string | undefined;
    try {
      if ((options.injections ?? []).length > 0) {
        caBundlePath = join(dir, 'ca.pem');
        // A fresh file, not a write through the hard link the handing process made to its bundle.
        rmSync(caBundlePath, { force: true });
        this.#ca ??= createEgressCa();
        writeFileSync(caBundlePath, this.#ca.getTrustBundle(), { mode: 0o644 });
      }
    } catch (error) {
      if (error instanceof ExecgateError) throw error;
      throw new ExecgateError('EXECGATE_ERR_EGRESS_CA_FAILED', `Could not write the egress CA bundle for run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
    this.#adopted.add(dir);
    return this.#listen(options, dir, caBundlePath);
  }

  async #listen(options: EgressRunOptions, dir: string, caBundlePath: string | undefined): Promise<EgressRun> {
    const socketPath = join(dir, 'egress.sock');
    const injections = options.injections ?? [];
    const redactor = new Redactor();
    for (const injection of injections) redactor.add(injection.value, injection.ref);
    const context: RunContext = { options, redactor, sockets: new Set() };
    // The accepted sockets carry every byte back to the client: the same larger buffers as upstream.
    const server = createNetServer({ highWaterMark: STREAM_HIGH_WATER_MARK }, (socket) => this.#accept(socket, context));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) => reject(new ExecgateError(
        'EXECGATE_ERR_EGRESS_PROXY_FAILED',
        `Could not listen on the egress socket for run ${options.runId}: ${error.message}.`,
        { runId: options.runId }, { cause: error },
      )));
      server.listen(socketPath, () => resolve());
    });
    this.#runs.set(options.runId, { server, context, dir });
    return Object.freeze({
      runId: options.runId,
      dir,
      socketPath,
      caBundlePath,
      credentials: options.credentials,
      close: () => this.#closeRun(options.runId, dir),
      handOff: () => this.#handOff(options.runId, dir),
    });
  }

  /**
   * The gateway's shared socket, listening from the first call on: every connection must present
   * the credentials of a shared run that is still open.
   */
  sharedSocketPath(): Promise<string> {
    this.#shared ??= new Promise<string>((resolve, reject) => {
      const path = join(this.#dir, 'egress.sock');
      const server = createNetServer((socket) => {
        this.#sharedSockets.add(socket);
        socket.once('close', () => this.#sharedSockets.delete(socket));
        this.#accept(socket, undefined);
      });
      // Between runs nothing waits on it: it must not keep the gateway's process alive.
      server.unref();
      server.once('error', (error) => {
        this.#shared = undefined;
        reject(new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not listen on the egress socket: ${error.message}.`, {}, { cause: error }));
      });
      server.listen(path, () => {
        this.#sharedServer = server;
        resolve(path);
      });
    });
    return this.#shared;
  }

  async #openSharedRun(options: EgressRunOptions): Promise<EgressRun> {
    const credentials = options.credentials;
    if (!credentials) throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Run ${options.runId} has no proxy credentials; a shared run needs them.`, { runId: options.runId });
    const injections = options.injections ?? [];
    const socketPath = await this.sharedSocketPath();
    try {
      this.#getPreloadPath();
      if (injections.length > 0) this.#getCaBundlePath();
    } catch (error) {
      if (error instanceof ExecgateError) throw error;
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not prepare the egress files for run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
    const redactor = new Redactor();
    for (const injection of injections) redactor.add(injection.value, injection.ref);
    const context: RunContext = { options, redactor, sockets: new Set() };
    this.#runs.set(options.runId, { context });
    this.#byUser.set(credentials.username, context);
    return Object.freeze({
      runId: options.runId,
      dir: this.#publicDir(),
      socketPath,
      caBundlePath: injections.length > 0 ? join(this.#publicDir(), 'ca.pem') : undefined,
      credentials,
      close: () => this.#closeRun(options.runId, undefined),
      handOff: () => {
        throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Run ${options.runId} uses the gateway's shared egress socket; only a run with a socket of its own can be handed to another process.`, { runId: options.runId });
      },
    });
  }

  /** The CA certificate (PEM) the sandbox trusts, creating the CA if needed. */
  getCaCertificate(): string {
    this.#ca ??= createEgressCa();
    return this.#ca.certPem;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#runs.entries()].map(([runId, entry]) => this.#closeRun(runId, entry.dir !== undefined && this.#adopted.has(entry.dir) ? entry.dir : undefined)));
    const shared = this.#sharedServer;
    for (const socket of this.#sharedSockets) socket.destroy();
    if (shared) await new Promise<void>((resolve) => shared.close(() => resolve()));
    if (this.#handedOff.size === 0) {
      rmSync(this.#dir, { recursive: true, force: true });
      return;
    }
    // A run handed to another process keeps its directory; that process removes it when the run ends.
    for (const name of readdirSync(this.#dir)) {
      if (!this.#handedOff.has(join(this.#dir, name))) rmSync(join(this.#dir, name), { recursive: true, force: true });
    }
    try {
      rmdirSync(this.#dir);
    } catch {
      // A handed-over run is still going: its process removes this directory after it.
    }
  }

  #public: string | undefined;
  /** Files every run may read (bound in read-only): the Node preload, the CA bundle. */
  #publicDir(): string {
    if (!this.#public) {
      const dir = join(this.#dir, 'public');
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      this.#public = dir;
    }
    return this.#public;
  }

  #preloadPath: string | undefined;
  // Node's fetch ignores proxy variables before Node 24: a preload installs undici's proxy agent.
  #getPreloadPath(): string {
    if (!this.#preloadPath) {
      const path = join(this.#publicDir(), 'node-preload.cjs');
      const undici = require.resolve('undici');
      writeFileSync(path, [
        '// execgate egress: send fetch() through the proxy named by HTTP(S)_PROXY / NO_PROXY.',
        `try { const u = require(${JSON.stringify(undici)}); u.setGlobalDispatcher(new u.EnvHttpProxyAgent()); } catch {}`,
        '',
      ].join('\n'), { mode: 0o644 });
      this.#preloadPath = path;
    }
    return this.#preloadPath;
  }

  #getCaBundlePath(): string {
    if (!this.#caBundlePath) {
      this.#ca ??= createEgressCa();
      const path = join(this.#publicDir(), 'ca.pem');
      try {
        writeFileSync(path, this.#ca.getTrustBundle(), { mode: 0o644 });
      } catch (error) {
        throw new ExecgateError('EXECGATE_ERR_EGRESS_CA_FAILED', `Could not write the egress CA bundle: ${(error as Error).message}.`, {}, { cause: error });
      }
      this.#caBundlePath = path;
    }
    return this.#caBundlePath;
  }

  async #closeRun(runId: string, dir: string | undefined): Promise<void> {
    const entry = this.#runs.get(runId);
    if (!entry) return;
    this.#runs.delete(runId);
    const username = entry.context.options.credentials?.username;
    if (username !== undefined && this.#byUser.get(username) === entry.context) this.#byUser.delete(username);
    for (const socket of entry.context.sockets) socket.destroy();
    const server = entry.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (dir && this.#adopted.delete(dir)) {
      // The handing process's runtime directory goes once its last handed-over run is gone.
      try {
        if (basename(dirname(dir)).startsWith(RUNTIME_PREFIX)) rmdirSync(dirname(dir));
      } catch {
        // Not empty (another run it handed over), or already gone.
      }
    }
  }

  /** `context`: the run whose own socket this is; undefined on the shared socket (the credentials say). */
  #accept(socket: Socket, context: RunContext | undefined): void {
    if (context) track(context, socket);
    socket.on('error', () => socket.destroy());
    socket.once('readable', () => {
      const first = socket.read(1) as Buffer | null;
      if (!first) return void socket.destroy();
      socket.unshift(first);
      if (first[0] === 0x05) {
        let run = context;
        const credentials = context?.options.credentials;
        const authenticate = context
          ? (credentials ? (username: string, password: string) => safeEqual(username, credentials.username) && safeEqual(password, credentials.password) : undefined)
          : (username: string, password: string) => (run = this.#findRun(username, password, socket)) !== undefined;
        void handleSocks(socket, (host, port) => this.#decide(run!, 'socks', host, port), (decision) => this.#record(decision), (address, port) => this.#dialTarget(address, port), (socket) => this.#limitConnect(socket),
          authenticate,
          () => this.#record({ runId: context?.options.runId ?? '', via: 'socks', host: '', port: 0, allowed: false, rule: 'proxy-auth' }));
      } else {
        this.#getHttpServer(context).emit('connection', socket);
      }
    });
  }

  #httpServers = new WeakMap<RunContext, HttpServer>();
  #sharedHttpServer: HttpServer | undefined;
  #getHttpServer(context: RunContext | undefined): HttpServer {
    let server = context ? this.#httpServers.get(context) : this.#sharedHttpServer;
    if (!server) {
      server = createHttpServer({ highWaterMark: STREAM_HIGH_WATER_MARK });
      server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.#onPlainRequest(context, req, res));
      server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.#onConnect(context, req, socket, head));
      if (context) this.#httpServers.set(context, server);
      else this.#sharedHttpServer = server;
    }
    return server;
  }

  /** The open shared run these credentials belong to; the connection is then ended with it. */
  #findRun(username: string, password: string, socket: Duplex): RunContext | undefined {
    const run = this.#byUser.get(username);
    const expected = run?.options.credentials;
    if (!run || !expected || !safeEqual(password, expected.password)) return undefined;
    track(run, socket);
    return run;
  }

  /** The run a request belongs to: its own socket's run if it presents that run's credentials, or on the shared socket the run whose credentials it presents. */
  #authorize(context: RunContext | undefined, req: IncomingMessage): RunContext | undefined {
    if (context) return isAuthorized(context, req) ? context : undefined;
    const given = getBasicCredentials(req);
    return given ? this.#findRun(given.username, given.password, req.socket) : undefined;
  }

  /** Policy + resolved-address check; returns where to dial, or the refusal. */
  async #decide(context: RunContext, via: EgressVia, rawHost: string, port: number): Promise<EgressDecision> {
    const host = normalizeHost(rawHost);
    const base = { runId: context.options.runId, via, host, port };
    if (!host || !(port >= 1 && port <= 65535)) return { ...base, allowed: false, rule: 'bad-target' };
    const verdict = decideDestination(context.options.network, context.options.narrowing ?? [], host, port);
    if (!verdict.allowed) return { ...base, ...verdict };
    // An IP literal got here only through an explicit allow pattern naming it: dial it as named.
    if (isIP(host) !== 0) return { ...base, ...verdict, address: host };
    const resolution = await resolveAllowed(host, this.#options.resolver ?? systemResolver);
    if (!resolution.address) return { ...base, allowed: false, rule: `address:${resolution.refusal}` };
    return { ...base, ...verdict, address: resolution.address };
  }

  #record(decision: EgressDecision): void {
    this.#options.onDecision?.(Object.freeze(decision));
  }

  /** A destination that never answers must not hold a client forever: bound the connect phase only. */
  #limitConnect<T extends Socket>(socket: T): T {
    const limit = this.#options.connectTimeout ?? 30_000;
    socket.setTimeout(limit, () => socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })));
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => socket.setTimeout(0));
    return socket;
  }

  #upstreamContext: SecureContext | undefined;
  // Built once: a `ca` list given per connection was parsed (Node's ~140 roots included) on every
  // intercepted request, which cost more than the rest of the request.
  #getUpstreamContext(): SecureContext | undefined {
    if (!this.#options.upstreamCa) return undefined;
    this.#upstreamContext ??= createSecureContext({ ca: [...rootCertificates, ...this.#options.upstreamCa] });
    return this.#upstreamContext;
  }

  #dialTarget(address: string, port: number): { host: string; port: number } {
    return this.#options.dial ? this.#options.dial(address, port) : { host: address, port };
  }

  async #onConnect(own: RunContext | undefined, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const context = this.#authorize(own, req);
    if (!context) {
      this.#record({ runId: own?.options.runId ?? '', via: 'connect', host: req.url ?? '', port: 0, allowed: false, rule: 'proxy-auth' });
      client.end(`HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="execgate"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    const target = parseAuthority(req.url ?? '');
    const decision = target
      ? await this.#decide(context, 'connect', target.host, target.port)
      : { runId: context.options.runId, via: 'connect' as const, host: req.url ?? '', port: 0, allowed: false, rule: 'bad-target' };
    if (!decision.allowed || !decision.address) {
      this.#record(decision);
      client.end(`HTTP/1.1 403 Forbidden\r\nX-Execgate-Egress: denied ${decision.rule}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    const injections = (context.options.injections ?? []).filter((i) => i.hosts.some((p) => matchesHost(p, decision.host, decision.port)));
    if (injections.length > 0) {
      this.#record(decision);
      this.#intercept(context, client, head, decision);
      return;
    }
    const dial = this.#dialTarget(decision.address, decision.port);
    const upstream = this.#limitConnect(netConnect({ port: dial.port, host: dial.host, highWaterMark: STREAM_HIGH_WATER_MARK } as never));
    // Tracked with the run's sockets: a tunnel whose client left cleanly may still be flushing upstream.
    context.sockets.add(upstream);
    upstream.once('close', () => context.sockets.delete(upstream));
    let joined = false;
    upstream.once('connect', () => {
      joined = true;
      this.#record(decision);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      joinSockets(client, upstream);
    });
    upstream.once('error', (error) => {
      if (joined) return;
      this.#record({ ...decision, allowed: false, rule: `dial-failed:${(error as NodeJS.ErrnoException).code ?? 'error'}` });
      client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    client.once('close', () => { if (!joined) upstream.destroy(); });
  }

  /** TLS terminated with the gateway CA; each request inside is forwarded with injection. */
  #intercept(context: RunContext, client: Duplex, head: Buffer, decision: EgressDecision): void {
    const ca = this.#ca ?? createEgressCa();
    this.#ca = ca;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    const tls = new TLSSocket(client as Socket, {
      isServer: true,
      secureContext: ca.getSecureContext(decision.host),
      ALPNProtocols: ['http/1.1'],
    });
    tls.on('error', () => tls.destroy());
    context.sockets.add(tls);
    tls.once('close', () => context.sockets.delete(tls));
    const server = createHttpServer((req, res) => {
      void this.#forward(context, req, res, { ...decision, via: 'https-intercepted' }, true);
    });
    server.emit('connection', tls);
  }

  async #onPlainRequest(own: RunContext | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const context = this.#authorize(own, req);
    if (!context) {
      this.#record({ runId: own?.options.runId ?? '', via: 'http', host: '', port: 0, allowed: false, rule: 'proxy-auth', method: req.method });
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="execgate"', 'content-type': 'text/plain', connection: 'close' });
      res.end('execgate egress proxy: this run\'s proxy credentials are required (they are in its HTTP_PROXY).\n');
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' });
      res.end('execgate egress proxy: send absolute http:// URLs, or CONNECT for TLS.\n');
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const decision = await this.#decide(context, 'http', url.hostname, port);
    const hostHeader = req.headers.host;
    if (decision.allowed && hostHeader !== undefined && !sameHost(hostHeader, decision.host, port)) {
      this.#deny(res, { ...decision, allowed: false, rule: 'host-header-mismatch', method: req.method });
      return;
    }
    if (!decision.allowed || !decision.address) {
      this.#deny(res, { ...decision, method: req.method });
      return;
    }
    await this.#forward(context, req, res, decision, false);
  }

  #deny(res: ServerResponse, decision: EgressDecision): void {
    this.#record({ ...decision, status: 403 });
    res.writeHead(403, { 'content-type': 'text/plain', 'x-execgate-egress': `denied ${decision.rule}`, connection: 'close' });
    res.end(`execgate egress proxy: ${decision.host}:${decision.port} refused (${decision.rule}).\n`);
  }

  async #forward(context: RunContext, req: IncomingMessage, res: ServerResponse, decision: EgressDecision, tls: boolean): Promise<void> {
    const all = context.options.injections ?? [];
    const bound = all.filter((i) => i.hosts.some((p) => matchesHost(p, decision.host, decision.port)));
    const others = all.filter((i) => !bound.includes(i));
    const path = tls ? (req.url ?? '/') : pathOf(req.url ?? '/');
    if (tls && req.headers.host !== undefined && !sameHost(req.headers.host, decision.host, decision.port)) {
      // Inside a terminated tunnel the Host must be the CONNECT target: no fronting to another name.
      this.#deny(res, { ...decision, allowed: false, rule: 'host-header-mismatch', method: req.method });
      return;
    }
    const swaps = getSwaps(bound);
    const used = new Set<string>();
    const headers: string[] = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      if (HOP_BY_HOP.has(name.toLowerCase())) continue;
      headers.push(name, swapHeaderValue(name, req.rawHeaders[i + 1]!, swaps, used));
    }
    const outPath = swapText(path, swaps, used);
    const elsewhere = others.filter((i) => (req.url ?? '').includes(i.sentinel) || req.rawHeaders.some((h) => h.includes(i.sentinel))).map((i) => i.ref);
    const encoding = String(req.headers['content-encoding'] ?? '').trim().toLowerCase();
    const bodyEncoded = encoding !== '' && encoding !== 'identity';
    const bodySwap = swaps.length > 0 && !bodyEncoded ? new SwapStream(swaps, { highWaterMark: STREAM_HIGH_WATER_MARK }) : undefined;
    const dial = this.#dialTarget(decision.address!, decision.port);
    const requestOptions = {
      method: req.method,
      path: outPath,
      headers: toHeaderObject(headers),
      setHost: false,
      createConnection: () => this.#limitConnect(tls
        ? tlsConnect({
          host: dial.host,
          port: dial.port,
          servername: isIP(decision.host) === 0 ? decision.host : undefined,
          secureContext: this.#getUpstreamContext(),
          ALPNProtocols: ['http/1.1'],
        })
        : netConnect({ port: dial.port, host: dial.host, highWaterMark: STREAM_HIGH_WATER_MARK } as never)),
      highWaterMark: STREAM_HIGH_WATER_MARK,
    };
    const upstream = (tls ? httpsRequest : httpRequest)(requestOptions as never, (response) => {
      const redact = bound.length > 0 || context.redactor.size > 0;
      const base = { ...decision, method: req.method, status: response.statusCode, injected: [...new Set([...used, ...(bodySwap?.used ?? [])])] };
      const record = (): void => this.#record({
        ...base,
        injected: [...new Set([...used, ...(bodySwap?.used ?? [])])],
        ...(elsewhere.length > 0 ? { sentinelElsewhere: elsewhere } : {}),
        ...(bodyEncoded && swaps.length > 0 ? { bodyNotInjected: true } : {}),
      });
      if (!redact) {
        res.writeHead(response.statusCode ?? 502, stripHopByHop(response.rawHeaders) as unknown as Record<string, string>);
        response.pipe(res);
        response.once('end', record);
        return;
      }
      const responseEncoding = response.headers['content-encoding'];
      if (!canRedactEncoding(responseEncoding)) {
        response.destroy();
        this.#record({ ...base, allowed: false, rule: 'response-unreadable', status: 502 });
        res.writeHead(502, { 'content-type': 'text/plain', connection: 'close' });
        res.end(`execgate egress proxy: the response is encoded as \`${String(responseEncoding)}\`, which the proxy cannot read to remove secrets; refused.\n`);
        return;
      }
      const drop = new Set([...HOP_BY_HOP, 'content-length']);
      res.writeHead(response.statusCode ?? 502, redactHeaders(response.rawHeaders, context.redactor, drop) as unknown as Record<string, string>);
      const body = redactBody(response, responseEncoding, context.redactor, () => res.destroy());
      body.pipe(res);
      body.once('end', record);
    });
    upstream.once('error', (error) => {
      this.#record({ ...decision, allowed: false, method: req.method, rule: `upstream-failed:${(error as NodeJS.ErrnoException).code ?? 'error'}`, status: 502 });
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain', connection: 'close' });
      res.end();
    });
    req.once('aborted', () => upstream.destroy());
    if (bodySwap) req.pipe(bodySwap).pipe(upstream);
    else req.pipe(upstream);
  }
}

function isAuthorized(context: RunContext, req: IncomingMessage): boolean {
  const credentials = context.options.credentials;
  if (!credentials) return true;
  const given = getBasicCredentials(req);
  return given !== undefined && safeEqual(given.username, credentials.username) && safeEqual(given.password, credentials.password);
}

function getBasicCredentials(req: IncomingMessage): ProxyCredentials | undefined {
  const header = req.headers['proxy-authorization'];
  const basic = typeof header === 'string' ? /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 ? { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) } : undefined;
}

/** A connection of the run: ended when the run is closed (its credentials stop working). */
function track(context: RunContext, socket: Duplex): void {
  if (context.sockets.has(socket)) return;
  context.sockets.add(socket);
  socket.once('close', () => context.sockets.delete(socket));
}

function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

function toHeaderObject(raw: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const existing = out[name];
    out[name] = existing === undefined ? raw[i + 1]! : [...(Array.isArray(existing) ? existing : [existing]), raw[i + 1]!];
  }
  return out;
}

function stripHopByHop(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (!HOP_BY_HOP.has(raw[i]!.toLowerCase())) out.push(raw[i]!, raw[i + 1]!);
  return out;
}

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:/[\]\s]+):([0-9]{1,5})$/.exec(authority);
  if (!match) return undefined;
  return { host: match[1]!, port: Number(match[2]) };
}

function pathOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return '/';
  }
}

function sameHost(header: string, host: string, port: number): boolean {
  const match = /^(\[[^\]]+\]|[^:]+)(?::([0-9]+))?$/.exec(header.trim());
  if (!match) return false;
  const headerPort = match[2] ? Number(match[2]) : undefined;
  return normalizeHost(match[1]!) === host && (headerPort === undefined || headerPort === port);
}
