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
 * others). Every connection is decided by host (CONNECT authority, absolute URL host, SOCKS
 * domain, all read by the one host parser of authority.ts), the name is resolved here and the
 * checked address is the one dialled. A CONNECT to a host and port an injected secret is bound
 * to is terminated with the per-gateway CA; each request inside is read once (reading.ts: target,
 * Host, SNI and tunnel agree, framing unambiguous), its sentinels are put only where the binding
 * allows (placement.ts) or the request is refused, and the response is cleaned by the masker
 * (redact-response.ts). Every other tunnel is passed through unread. Upstream connections leave
 * directly or through a parent proxy (upstream.ts).
 *
 * Every decision is recorded against its run (the audit log, and the run's own list for its
 * result); a refusal answers the client with its reason, in words an agent can act on.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type ClientRequest, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer, isIP, type Server as NetServer, type Socket } from 'node:net';
import { basename, dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { connect as tlsConnect, TLSSocket, type SecureContext } from 'node:tls';
import { ExecgateError } from '../errors';
import { getRuntimeBase } from '../fs/runtime-dir';
import { Redactor } from '../redact';
import { resolveAllowed, systemResolver, type Resolver } from './address';
import { canonicalHost, formatAuthority, parseAuthority } from './authority';
import { createEgressCa, type EgressCa } from './ca';
import { matchesHost } from './hosts';
import { BodyScan, canScanEncoding, getSwaps, ScanEncoded, SentinelInBody, SwapStream } from './inject';
import { createSentinelDetector, placeInjections, refuse } from './placement';
import type { BoundInjection, Injection } from './plan';
import { clip, isRefusal, readRequest, type Refusal } from './reading';
import { getReason } from './reasons';
import { canRedactEncoding, createWrapDetector, getAcceptedEncodings, redactBody, redactHeaders, WrappedValue, type WrapDetector } from './redact-response';
import { DEFAULT_INJECT_PORT, DEFAULT_PLACEMENT, decideDestination, type NetworkPolicy, type SecretBinding } from './rules';
import { handleSocks } from './socks';
import { joinSockets } from './tunnel';
import { connectThrough, getEnvironmentRoute, getParent, getRunRoute, UpstreamTrust, type ParentProxy, type UpstreamRoute } from './upstream';

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
  /** Why it was refused, in words an agent can act on (never a value or a sentinel). */
  readonly reason?: string;
  /** Left through the parent proxy (host:port), not directly. */
  readonly parent?: string;
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
  /** Extra CA certificates (PEM text) trusted for upstream TLS for every run, on top of the system's (tests). */
  readonly upstreamCa?: readonly string[];
  /**
   * The gateway's own environment: its HTTPS_PROXY / HTTP_PROXY / NO_PROXY route upstream
   * connections through a parent proxy unless a run's policy says otherwise. Default: none.
   */
  readonly upstreamEnv?: Readonly<Record<string, string | undefined>>;
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
  /** The masker's shortest encoded form (`secrets.minLength`), as for the run's output. */
  readonly minLength?: number;
  /** When given, required on every connection of the run (see above). */
  readonly credentials?: ProxyCredentials;
  /**
   * Reached through the gateway's shared socket (`sharedSocketPath`) rather than a socket of its
   * own: `credentials` are then required, and they are what the proxy knows the run by. After
   * close() they are refused.
   */
  readonly shared?: boolean;
  /** The upstream route fixed where the run opened (set when a run is handed to another process). */
  readonly upstreamRoute?: UpstreamRoute;
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
  /** The run's decisions so far (the latest 500), for its result. */
  decisions(): readonly EgressDecision[];
}

/** A run's endpoint as handed between processes (JSON; holds injected values: pipes only). */
export interface HandedOffRun {
  readonly dir: string;
  readonly options: EgressRunOptions;
}

interface RunContext {
  readonly options: EgressRunOptions;
  readonly injections: readonly BoundInjection[];
  /** The injected values, for responses (the run output's masker, same settings). */
  readonly redactor: Redactor;
  /** The run's sentinels, for requests (placement.ts). */
  readonly detector: Redactor | undefined;
  /** The injected values' wrappable spellings, for responses read with line breaks taken out. */
  readonly wrap: WrapDetector | undefined;
  readonly sockets: Set<Duplex>;
  readonly decisions: EgressDecision[];
  /** URLs a redirect from an injected request pointed to across schemes, hosts or ports. */
  readonly redirects: Set<string>;
  readonly route: UpstreamRoute;
  readonly trust: SecureContext;
}

const MAX_DECISIONS = 500;
const MAX_REDIRECTS = 256;

// Larger stream buffers than Node's 16 KiB default: a proxied body is copied through four streams,
// and fewer, larger chunks halve the per-chunk cost (measured with bench/egress.js).
const STREAM_HIGH_WATER_MARK = 256 * 1024;
// The same for TLS sockets, spread into their options: Node passes it on to net.Socket, though
// @types/node does not list it for TLS.
const TLS_BUFFERS = { highWaterMark: STREAM_HIGH_WATER_MARK };

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
    // The route came from this gateway's environment, which the adopting process does not have.
    return { dir, options: { ...entry.context.options, upstreamRoute: entry.context.route } };
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
    const context = this.#createContext(options);
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
      decisions: () => [...context.decisions],
    });
  }

  /** Everything the proxy keeps for a run; throws when the run's upstream cannot be set up (a CA file, a parent proxy URL). */
  #createContext(options: EgressRunOptions): RunContext {
    const injections = (options.injections ?? []).map((injection): BoundInjection => ({ ...injection, binding: injection.binding ?? getDefaultBinding(injection) }));
    const minLength = options.minLength ?? 8;
    const redactor = new Redactor({ minLength });
    for (const injection of injections) redactor.add(injection.value, injection.ref);
    this.#environmentRoute ??= getEnvironmentRoute(this.#options.upstreamEnv ?? {});
    this.#trust ??= new UpstreamTrust(this.#options.upstreamCa);
    return {
      options,
      injections,
      redactor,
      detector: createSentinelDetector(injections, minLength),
      wrap: createWrapDetector(injections, minLength),
      sockets: new Set(),
      decisions: [],
      redirects: new Set(),
      route: options.upstreamRoute ?? getRunRoute(options.network.upstream, this.#environmentRoute),
      trust: this.#trust.getContext(options.network.upstream?.ca ?? []),
    };
  }

  #environmentRoute: UpstreamRoute | undefined;
  #trust: UpstreamTrust | undefined;

  /**
   * The gateway's shared socket, listening from the first call on: every connection must present
   * the credentials of a shared run that is still open.
   */
  sharedSocketPath(): Promise<string> {
    this.#shared ??= new Promise<string>((resolve, reject) => {
      const path = join(this.#dir, 'egress.sock');
      const server = createNetServer({ highWaterMark: STREAM_HIGH_WATER_MARK }, (socket) => {
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
    const context = this.#createContext(options);
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
      decisions: () => [...context.decisions],
    });
  }

  /** The parent proxy (host:port) a run under `network` leaves through, if any: for its record, never with credentials. */
  getParentFor(network: NetworkPolicy): string | undefined {
    this.#environmentRoute ??= getEnvironmentRoute(this.#options.upstreamEnv ?? {});
    const route = getRunRoute(network.upstream, this.#environmentRoute);
    const parent = route.https ?? route.http;
    return parent ? formatAuthority(parent.host, parent.port) : undefined;
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
        void handleSocks(socket, {
          decide: (host, port) => this.#decide(run!, 'socks', host, port, true),
          record: (decision) => this.#record(run, decision),
          open: (decision, callback) => this.#openTcp(run!, decision, callback),
          authenticate,
          onAuthFailed: () => this.#record(context, { runId: context?.options.runId ?? '', via: 'socks', host: '', port: 0, allowed: false, rule: 'proxy-auth' }),
        });
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
      server.on('clientError', (error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex) => this.#onClientError(context ?? this.#socketRuns.get(socket), error, socket));
      if (context) this.#httpServers.set(context, server);
      else this.#sharedHttpServer = server;
    }
    return server;
  }

  /** Which run a connection of the shared socket turned out to belong to (for a later malformed request on it). */
  readonly #socketRuns = new WeakMap<Duplex, RunContext>();

  /** The open shared run these credentials belong to; the connection is then ended with it. */
  #findRun(username: string, password: string, socket: Duplex): RunContext | undefined {
    const run = this.#byUser.get(username);
    const expected = run?.options.credentials;
    if (!run || !expected || !safeEqual(password, expected.password)) return undefined;
    track(run, socket);
    this.#socketRuns.set(socket, run);
    return run;
  }

  /** The run a request belongs to: its own socket's run if it presents that run's credentials, or on the shared socket the run whose credentials it presents. */
  #authorize(context: RunContext | undefined, req: IncomingMessage): RunContext | undefined {
    if (context) return isAuthorized(context, req) ? context : undefined;
    const given = getBasicCredentials(req);
    return given ? this.#findRun(given.username, given.password, req.socket) : undefined;
  }

  /*
   * A request Node's parser refused (conflicting Content-Length / Transfer-Encoding, duplicate
   * lengths, a malformed header): answered with the parser's reason instead of a bare 400.
   */
  #onClientError(context: RunContext | undefined, error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex): void {
    const reason = `a malformed request (${error.reason ?? error.code ?? 'unreadable'})`;
    if (context) this.#record(context, { runId: context.options.runId, via: 'http', host: '', port: 0, allowed: false, rule: `malformed:${error.code ?? 'error'}`, reason, status: 400 });
    if (socket.writable) {
      const body = `execgate egress proxy: refused ${reason}.\n`;
      socket.end(`HTTP/1.1 400 Bad Request\r\nX-Execgate-Egress: refused malformed\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    } else {
      socket.destroy();
    }
  }

  /**
   * Policy + resolved-address check; returns where to dial, or the refusal. With a parent proxy
   * for this destination, a name that does not resolve here goes to the parent by name (a
   * company network often resolves only there); one that resolves is checked as always.
   */
  async #decide(context: RunContext, via: EgressVia, rawHost: string, port: number, tls: boolean): Promise<EgressDecision> {
    const host = canonicalHost(rawHost) ?? '';
    const base = { runId: context.options.runId, via, host: host || clip(rawHost), port };
    if (!host || !(port >= 1 && port <= 65535)) return { ...base, allowed: false, rule: 'bad-target' };
    const verdict = decideDestination(context.options.network, context.options.narrowing ?? [], host, port);
    if (!verdict.allowed) return { ...base, ...verdict };
    const parent = getParent(context.route, host, port, tls);
    const through = parent ? { parent: formatAuthority(parent.host, parent.port) } : {};
    // An IP literal got here only through an explicit allow pattern naming it: dial it as named.
    if (isIP(host) !== 0) return { ...base, ...verdict, address: host, ...through };
    const resolution = await resolveAllowed(host, this.#options.resolver ?? systemResolver);
    if (!resolution.address) {
      if (parent && resolution.refusal === 'resolve-failed') return { ...base, ...verdict, ...through };
      return { ...base, allowed: false, rule: `address:${resolution.refusal}` };
    }
    return { ...base, ...verdict, address: resolution.address, ...through };
  }

  #record(context: RunContext | undefined, decision: EgressDecision): void {
    // A host or reason read from a request could hold a sentinel: decisions never do.
    const clean = context?.detector
      ? { ...decision, host: context.detector.redactString(decision.host).text, ...(decision.reason !== undefined ? { reason: context.detector.redactString(decision.reason).text } : {}) }
      : decision;
    const frozen = Object.freeze(clean);
    if (context) {
      context.decisions.push(frozen);
      if (context.decisions.length > MAX_DECISIONS) context.decisions.shift();
    }
    this.#options.onDecision?.(frozen);
  }

  /** A destination that never answers must not hold a client forever: bound the connect phase only. */
  #limitConnect<T extends Socket>(socket: T): T {
    const limit = this.#options.connectTimeout ?? 30_000;
    socket.setTimeout(limit, () => socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })));
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => socket.setTimeout(0));
    return socket;
  }

  #dialTarget(address: string, port: number): { host: string; port: number } {
    return this.#options.dial ? this.#options.dial(address, port) : { host: address, port };
  }

  /**
   * A TCP connection to the decided destination: through the parent proxy (CONNECT to the name)
   * when the decision says so, else to the checked address. Calls back once it is open.
   */
  #openTcp(context: RunContext, decision: EgressDecision, callback: (error: Error | null, socket?: Socket) => void): Socket {
    const parent = getParent(context.route, decision.host, decision.port, true);
    if (decision.parent && parent) {
      return this.#limitConnect(connectThrough(parent, decision.host, decision.port, { highWaterMark: STREAM_HIGH_WATER_MARK }, callback));
    }
    const dial = this.#dialTarget(decision.address!, decision.port);
    const socket = this.#limitConnect(netConnect({ port: dial.port, host: dial.host, highWaterMark: STREAM_HIGH_WATER_MARK } as never));
    socket.once('connect', () => callback(null, socket));
    socket.once('error', (error) => callback(error));
    return socket;
  }

  async #onConnect(own: RunContext | undefined, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const context = this.#authorize(own, req);
    if (!context) {
      this.#record(own, { runId: own?.options.runId ?? '', via: 'connect', host: clip(req.url ?? ''), port: 0, allowed: false, rule: 'proxy-auth' });
      client.end(`HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="execgate"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    const target = parseAuthority(req.url ?? '');
    const decision = target
      ? await this.#decide(context, 'connect', target.host, target.port, true)
      : { runId: context.options.runId, via: 'connect' as const, host: clip(req.url ?? ''), port: 0, allowed: false, rule: 'bad-target' };
    if (!decision.allowed || (!decision.address && !decision.parent)) {
      this.#refuseConnect(context, client, decision);
      return;
    }
    const injections = context.injections.filter((i) => isInjectedOverTls(i, decision.host, decision.port));
    if (injections.length > 0) {
      this.#record(context, decision);
      this.#intercept(context, client, head, decision);
      return;
    }
    let joined = false;
    const upstream = this.#openTcp(context, decision, (error) => {
      if (error) {
        if (joined) return;
        this.#refuseConnect(context, client, { ...decision, allowed: false, rule: `${decision.parent ? 'upstream-failed' : 'dial-failed'}:${(error as NodeJS.ErrnoException).code ?? 'error'}` }, 502);
        return;
      }
      joined = true;
      this.#record(context, decision);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      joinSockets(client, upstream);
    });
    // Tracked with the run's sockets: a tunnel whose client left cleanly may still be flushing upstream.
    context.sockets.add(upstream);
    upstream.once('close', () => context.sockets.delete(upstream));
    client.once('close', () => { if (!joined) upstream.destroy(); });
  }

  /** A refused CONNECT: the reason in the status line (what Python and others show), a header and the body (curl -v). */
  #refuseConnect(context: RunContext, client: Duplex, decision: EgressDecision, status = 403): void {
    this.#record(context, decision);
    const reason = getReason(decision);
    const text = `refused ${decision.host}${decision.port ? `:${decision.port}` : ''} (${reason})`;
    const phrase = `execgate ${text}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 300);
    const body = `execgate egress proxy: ${text}.\n`;
    const clean = context.detector ? context.detector.redactString(phrase).text : phrase;
    client.end(`HTTP/1.1 ${status} ${clean}\r\nX-Execgate-Egress: refused ${decision.rule.replace(/[^\x21-\x7e]/g, '?')}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }

  /** TLS terminated with the gateway CA; each request inside is read, placed and forwarded. */
  #intercept(context: RunContext, client: Duplex, head: Buffer, decision: EgressDecision): void {
    const ca = this.#ca ?? createEgressCa();
    this.#ca = ca;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    const tls = new TLSSocket(client, {
      isServer: true,
      secureContext: ca.getSecureContext(decision.host),
      ALPNProtocols: ['http/1.1'],
      // The response's buffer is this socket's: at Node's 16 KiB every 16 KiB TLS record filled it,
      // so each one paused and resumed the whole chain (upstream socket, response, cleaning stage).
      // With the larger buffer the proxy's CPU per MiB intercepted fell from 4.5 to 3.2 ms (10 MiB
      // bodies) and from 4.0 to 2.4 ms (100 MiB), measured as bench/egress.js's CPU rows do.
      ...TLS_BUFFERS,
    });
    tls.on('error', () => tls.destroy());
    context.sockets.add(tls);
    tls.once('close', () => context.sockets.delete(tls));
    const server = createHttpServer((req, res) => {
      const sni = typeof tls.servername === 'string' ? tls.servername : undefined;
      void this.#forward(context, req, res, { ...decision, via: 'https-intercepted' }, true, sni);
    });
    server.on('clientError', (error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex) => this.#onClientError(context, error, socket));
    server.emit('connection', tls);
  }

  async #onPlainRequest(own: RunContext | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const context = this.#authorize(own, req);
    if (!context) {
      this.#record(own, { runId: own?.options.runId ?? '', via: 'http', host: '', port: 0, allowed: false, rule: 'proxy-auth', method: req.method });
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="execgate"', 'content-type': 'text/plain', connection: 'close' });
      res.end('execgate egress proxy: this run\'s proxy credentials are required (they are in its HTTP_PROXY).\n');
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      this.#deny(context, res, { runId: context.options.runId, via: 'http', host: '', port: 0, allowed: false, rule: 'bad-target', method: req.method, reason: 'send absolute http:// URLs to this proxy, or CONNECT for TLS' }, 400);
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const decision = await this.#decide(context, 'http', url.hostname, port, false);
    if (!decision.allowed || (!decision.address && !decision.parent)) {
      this.#deny(context, res, { ...decision, method: req.method });
      return;
    }
    await this.#forward(context, req, res, decision, false);
  }

  #deny(context: RunContext, res: ServerResponse, decision: EgressDecision, status = 403): void {
    this.#record(context, { ...decision, status });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const reason = getReason(decision);
    const text = `execgate egress proxy: refused ${decision.host ? formatAuthority(decision.host, decision.port) : 'the request'} (${reason}).\n`;
    res.writeHead(status, { 'content-type': 'text/plain', 'x-execgate-egress': `refused ${decision.rule.replace(/[^\x21-\x7e]/g, '?')}`, connection: 'close' });
    res.end(context.detector ? context.detector.redactString(text).text : text);
  }

  async #forward(context: RunContext, req: IncomingMessage, res: ServerResponse, decision: EgressDecision, tls: boolean, sni?: string): Promise<void> {
    const method = req.method ?? 'GET';
    const refused = (refusal: Refusal): void => this.#deny(context, res, { ...decision, allowed: false, method, rule: refusal.rule, reason: refusal.reason });
    const reading = readRequest(req, { host: decision.host, port: decision.port, tls, ...(sni !== undefined ? { sni } : {}) });
    if (isRefusal(reading)) return void refused(reading);
    const origin = `${tls ? 'https' : 'http'}://${formatAuthority(decision.host, decision.port)}`;
    const redirected = context.redirects.has(`${origin}${reading.target}`);
    const injections = context.injections;
    const placementRequest = { method, target: reading.target, headers: stripHopByHop(req.rawHeaders), host: decision.host, port: decision.port, tls };
    const placed = placeInjections(placementRequest, injections, context.detector, redirected);
    if (isRefusal(placed)) return void refused(placed);
    const headers = placed.headers;
    // An HTTP/1.0 request may name no host; the request sent on does, the one this tunnel or URL names.
    if (getHeader(headers, 'host') === undefined) headers.unshift('Host', formatOrigin(decision.host, decision.port, tls ? 443 : 80));
    const redact = context.redactor.size > 0;
    // What comes back must be readable to be cleaned: ask only for encodings the masker can read through.
    if (redact) setHeader(headers, 'accept-encoding', getAcceptedEncodings(getHeader(headers, 'accept-encoding'), wantsIdentity(injections, decision)));
    const encoding = String(req.headers['content-encoding'] ?? '').trim().toLowerCase();
    const encoded = encoding !== '' && encoding !== 'identity';
    if (context.detector && !canScanEncoding(encoding)) {
      return void refused({ rule: 'request-body-unreadable', reason: `the request body is encoded as \`${clip(encoding)}\`, which the proxy cannot read for sentinels` });
    }
    if (encoded && placed.bodyInjections.length > 0) {
      // A value cannot be put into compressed bytes; a sentinel found there is refused below.
    }
    const stages: Transform[] = [];
    if (placed.bodyInjections.length > 0 && !encoded) stages.push(new SwapStream(getSwaps(placed.bodyInjections), { highWaterMark: STREAM_HIGH_WATER_MARK }));
    if (context.detector) stages.push(encoded ? new ScanEncoded(encoding, context.detector) : new BodyScan(context.detector, { highWaterMark: STREAM_HIGH_WATER_MARK }));
    const parent = decision.parent ? getParent(context.route, decision.host, decision.port, tls) : undefined;
    const upstream = this.#request(context, decision, tls, method, placed.target, headers, parent);
    let answered = false;
    // Set once the request was refused on its body: the upstream's reset that follows is ours.
    let refusedBody = false;
    const injected = (): string[] => [...new Set([...placed.injected, ...stages.flatMap((stage) => (stage instanceof SwapStream ? [...stage.used] : []))])];
    upstream.once('response', (response) => {
      answered = true;
      const base = { ...decision, method, status: response.statusCode, injected: injected() };
      if (injected().length > 0) this.#noteRedirect(context, origin, reading.target, response);
      const record = (): void => this.#record(context, { ...base, injected: injected() });
      if (!redact) {
        res.writeHead(response.statusCode ?? 502, stripHopByHop(response.rawHeaders) as unknown as Record<string, string>);
        response.pipe(res);
        response.once('end', record);
        return;
      }
      const responseEncoding = response.headers['content-encoding'];
      if (!canRedactEncoding(responseEncoding) || (wantsIdentity(injections, decision) && !isIdentity(responseEncoding))) {
        response.destroy();
        this.#deny(context, res, { ...base, allowed: false, rule: 'response-unreadable', reason: `the response is encoded as \`${clip(String(responseEncoding))}\`, which the proxy ${canRedactEncoding(responseEncoding) ? 'was told not to decode (responses: identity)' : 'cannot read'} to remove secrets` }, 502);
        return;
      }
      const drop = new Set([...HOP_BY_HOP, 'content-length']);
      res.writeHead(response.statusCode ?? 502, redactHeaders(response.rawHeaders, context.redactor, drop) as unknown as Record<string, string>);
      const body = redactBody(response, responseEncoding, context.redactor, (error) => {
        res.destroy();
        if (error instanceof WrappedValue) {
          this.#record(context, { ...base, allowed: false, rule: 'response-wrapped-value', reason: `the response holds <<${error.ref}>> split over lines, which cannot be masked where it stands; it was cut off` });
        }
      }, context.wrap);
      body.pipe(res);
      body.once('end', record);
    });
    // Every error, not only the first: a request that errs twice must not take the process down
    // (for a request with a body, the pipeline below listens too).
    let failed = false;
    upstream.on('error', (error) => {
      if (refusedBody || failed) return;
      failed = true;
      if (answered) return void res.destroy();
      this.#deny(context, res, { ...decision, allowed: false, method, rule: `upstream-failed:${(error as NodeJS.ErrnoException).code ?? 'error'}` }, 502);
    });
    req.once('aborted', () => upstream.destroy());
    if (!hasBody(req)) {
      // Nothing to read, swap or scan: the request is sent as it is. stream.pipeline cost some
      // 60 µs a request even so (its AbortController, and the DOMException it aborts with when
      // done): about half of what reading and placing had added to a plain forward of 1 KiB
      // (bench/egress.js CPU rows, --one-process).
      req.resume();
      upstream.end();
      return;
    }
    pipeline([req, ...stages, upstream] as unknown as [Readable, Transform], (error) => {
      if (!error) return;
      refusedBody = true;
      upstream.destroy();
      if (error instanceof SentinelInBody) {
        refused(refuse(error.ref, 'the body', injections, placementRequest, redirected));
      } else if (!answered && !res.headersSent) {
        this.#deny(context, res, { ...decision, allowed: false, method, rule: 'request-body-failed', reason: `the request body could not be read (${(error).code ?? error.message})` }, 400);
      }
    });
  }

  /** The upstream request: TLS to the host (through the parent's tunnel when there is one), or plain HTTP (absolute form to the parent). */
  #request(context: RunContext, decision: EgressDecision, tls: boolean, method: string, target: string, headers: string[], parent: ParentProxy | undefined): ClientRequest {
    if (!tls && parent) {
      const proxied = [...headers, ...(parent.authorization ? ['Proxy-Authorization', parent.authorization] : [])];
      return httpRequest({
        method, host: parent.host, port: parent.port, path: `http://${formatOrigin(decision.host, decision.port, 80)}${target}`,
        headers: toHeaderObject(proxied), setHost: false, highWaterMark: STREAM_HIGH_WATER_MARK,
        createConnection: (_options: unknown, callback: (error: Error | null, socket?: Socket) => void) => {
          const socket = this.#limitConnect(netConnect({ host: parent.host, port: parent.port, highWaterMark: STREAM_HIGH_WATER_MARK } as never));
          socket.once('connect', () => callback(null, socket));
          socket.once('error', (error: Error) => callback(error));
          return undefined;
        },
      } as never);
    }
    const servername = isIP(decision.host) === 0 ? decision.host : undefined;
    const open = (callback: (error: Error | null, socket?: Socket) => void): void => {
      if (!tls) {
        const dial = this.#dialTarget(decision.address!, decision.port);
        const socket = this.#limitConnect(netConnect({ port: dial.port, host: dial.host, highWaterMark: STREAM_HIGH_WATER_MARK } as never));
        socket.once('connect', () => callback(null, socket));
        socket.once('error', (error) => callback(error));
        return;
      }
      const secure = (raw?: Socket): void => {
        const dial = raw ? undefined : this.#dialTarget(decision.address!, decision.port);
        const socket = this.#limitConnect(tlsConnect({
          ...(raw ? { socket: raw } : { host: dial!.host, port: dial!.port }),
          servername,
          secureContext: context.trust,
          ALPNProtocols: ['http/1.1'],
          // The response read from it takes this buffer size (Node gives an IncomingMessage its socket's).
          ...TLS_BUFFERS,
        }));
        socket.once('secureConnect', () => callback(null, socket));
        socket.once('error', (error: Error) => callback(error));
      };
      if (parent) this.#openTcp(context, decision, (error, socket) => (error ? callback(error) : secure(socket)));
      else secure();
    };
    return (tls ? httpsRequest : httpRequest)({
      method, path: target, headers: toHeaderObject(headers), setHost: false, highWaterMark: STREAM_HIGH_WATER_MARK,
      createConnection: (_options: unknown, callback: (error: Error | null, socket?: Socket) => void) => {
        open(callback);
        return undefined;
      },
    } as never);
  }

  /** A redirect from an injected request that leaves its scheme, host or port: the value is not sent on to where it points. */
  #noteRedirect(context: RunContext, origin: string, target: string, response: IncomingMessage): void {
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status < 300 || status > 399 || typeof location !== 'string') return;
    let next: URL;
    try {
      next = new URL(location, `${origin}${target}`);
    } catch {
      return;
    }
    if (next.origin === new URL(origin).origin) return;
    const host = canonicalHost(next.hostname);
    if (!host) return;
    const port = next.port === '' ? (next.protocol === 'https:' ? 443 : 80) : Number(next.port);
    context.redirects.add(`${next.protocol}//${formatAuthority(host, port)}${next.pathname}${next.search}`);
    if (context.redirects.size > MAX_REDIRECTS) context.redirects.delete(context.redirects.values().next().value as string);
  }
}

/** `host:port`, or `host` alone on the scheme's default port (as a Host header or URL says it). */
function formatOrigin(host: string, port: number, defaultPort: number): string {
  const authority = formatAuthority(host, port);
  return port === defaultPort ? authority.slice(0, authority.lastIndexOf(':')) : authority;
}

/** Does a binding put its value into TLS requests to host:port (its hosts, on their port, 443 by default)? */
function isInjectedOverTls(injection: BoundInjection, host: string, port: number): boolean {
  return injection.binding.hosts.some((pattern) => matchesHost(pattern, host, port) && (pattern.port ?? DEFAULT_INJECT_PORT) === port);
}

function wantsIdentity(injections: readonly BoundInjection[], decision: EgressDecision): boolean {
  return injections.some((i) => i.binding.responses === 'identity' && i.binding.hosts.some((p) => matchesHost(p, decision.host, decision.port)));
}

/** Does the request carry a body? Without Content-Length or Transfer-Encoding it has none (RFC 9112, 6.3), and Node parses it so. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) !== 0);
}

function isIdentity(encoding: string | undefined): boolean {
  const value = (encoding ?? '').trim().toLowerCase();
  return value === '' || value === 'identity';
}

/** The binding an injection made in code (tests, benchmarks) without one gets: the defaults, to its hosts. */
function getDefaultBinding(injection: Injection): SecretBinding {
  return Object.freeze({ ref: injection.ref, hosts: injection.hosts, delivery: 'inject', place: DEFAULT_PLACEMENT, http: Object.freeze([]), responses: 'decode' });
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
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
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
  const out = Object.create(null) as Record<string, string | string[]>;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    const existing = out[name];
    out[name] = existing === undefined ? raw[i + 1] : [...(Array.isArray(existing) ? existing : [existing]), raw[i + 1]];
  }
  return out;
}

function stripHopByHop(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (!HOP_BY_HOP.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1]);
  return out;
}

function getHeader(raw: readonly string[], lower: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() === lower) return raw[i + 1];
  return undefined;
}

/** Replace every `lower` header with one (or none, for undefined). */
function setHeader(raw: string[], lower: string, value: string | undefined): void {
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i].toLowerCase() === lower) raw.splice(i, 2);
  if (value !== undefined) raw.push(lower, value);
}
