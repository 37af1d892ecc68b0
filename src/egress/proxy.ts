/*
 * The gateway-side egress proxy. A sandboxed run has no network but loopback; the only way out is
 * the proxy: a TCP listener the gateway holds on the shared network namespace's loopback
 * (bridge.ts), or a Unix socket the proxy listens on, reached through a bridge on the run's own
 * loopback. The shared listener and the gateway's one shared socket take connections of any
 * shared run: a connection belongs to whichever run's credentials it presents (runs opened with
 * `shared: true`). A socket of the run's own says by itself which run a connection belongs to.
 *
 * The runs of one gateway share a network namespace, so a run could connect to the shared
 * listener, or to another run's bridge, on the shared loopback and borrow another run's policy and
 * injections. A run opened with
 * `credentials` is therefore also identified by them: every HTTP proxy request and CONNECT must
 * carry them in Proxy-Authorization, every SOCKS5 client must give them as username/password
 * (RFC 1929); they live only in that run's environment (its own PID namespace hides it from the
 * others).
 *
 * This file holds the runs' lifecycle: opening a run (its socket, or its place on the shared one,
 * its masker, sentinel detector and upstream route), handing a run to another process and
 * adopting one, the files the sandbox binds in (the Node preload, the CA bundle), and closing.
 * What arrives on a socket is handled by connections.ts (the front door: SOCKS5, CONNECT, plain
 * HTTP), requests are sent on by forward.ts, and what both share (which run a connection belongs
 * to, deciding, recording, dialling) is proxy-core.ts.
 *
 * Every decision is recorded against its run (the audit log, and the run's own list for its
 * result); a refusal answers the client with its reason, in words an agent can act on.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { ExecgateError } from '../errors';
import { getRuntimeBase } from '../fs/runtime-dir';
import { Redactor } from '../redact';
import { formatAuthority } from './authority';
import { FrontDoor } from './connections';
import { createSentinelDetector } from './placement';
import type { BoundInjection, Injection } from './plan';
import { NO_DELAY, ProxyCore, STREAM_HIGH_WATER_MARK, type RunContext } from './proxy-core';
import type { EgressProxyOptions, EgressRun, EgressRunOptions, HandedOffRun } from './proxy-types';
import { createWrapDetector } from './redact-response';
import { getHostServices, getLocalEndpoints, relaySocket, relayTcp } from './tcp';
import { answerConnect, ConnectSupervisor, getConnectSocketPath } from './tcp-notify';
import { attributeConnection } from './attribution';
import { DEFAULT_PLACEMENT, type NetworkPolicy, type SecretBinding } from './rules';
import { getEnvironmentRoute, getRunRoute, UpstreamTrust, type UpstreamRoute } from './upstream';

export type { EgressDecision, EgressProxyOptions, EgressRun, EgressRunOptions, EgressVia, HandedOffRun, ProxyCredentials } from './proxy-types';

const RUNTIME_PREFIX = 'execgate-egress-';

export class EgressProxy {
  readonly #options: EgressProxyOptions;
  readonly #dir: string;
  readonly #runs = new Map<string, { server?: NetServer; context: RunContext; dir?: string; hostSockets?: NetServer[] }>();
  /** The connect supervisor (tcp-notify.ts), started with the first run that hands connections over. */
  #connects: ConnectSupervisor | undefined;
  /** Runs whose connections are handed over. */
  readonly #handoffs = new Set<string>();
  /** Directories of runs handed to another process (kept by close()). */
  readonly #handedOff = new Set<string>();
  /** Directories of runs adopted from another process (removed with the run). */
  readonly #adopted = new Set<string>();
  #shared: Promise<string> | undefined;
  #sharedServer: NetServer | undefined;
  /** Every connection on the shared socket, a run's or not yet anyone's: ended by close(). */
  readonly #sharedSockets = new Set<Socket>();
  readonly #core: ProxyCore;
  readonly #door: FrontDoor;
  #caBundlePath: string | undefined;
  #closed = false;

  constructor(options: EgressProxyOptions = {}) {
    this.#options = options;
    this.#core = new ProxyCore(options);
    this.#door = new FrontDoor(this.#core);
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
    if (injections.length > 0) await this.#core.prepareCa();
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
    for (const hostSocket of entry.hostSockets ?? []) hostSocket.close();
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
    if ((options.injections ?? []).length > 0) await this.#core.prepareCa();
    let caBundlePath: string | undefined;
    try {
      if ((options.injections ?? []).length > 0) {
        caBundlePath = join(dir, 'ca.pem');
        // A fresh file, not a write through the hard link the handing process made to its bundle.
        rmSync(caBundlePath, { force: true });
        writeFileSync(caBundlePath, this.#core.getCa().getTrustBundle(), { mode: 0o644 });
      }
    } catch (error) {
      if (error instanceof ExecgateError) throw error;
      throw new ExecgateError('EXECGATE_ERR_EGRESS_CA_FAILED', `Could not write the egress CA bundle for run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
    this.#adopted.add(dir);
    const run = await this.#listen(options, dir, caBundlePath);
    // Raw TCP of a handed-over run is handed over connected by this process where the handing
    // one wrapped the run's program with a token and left a file at the socket's path in the
    // run's directory (egress/run.ts). Where it cannot be, a file stays at the path, so the
    // sandbox still binds it and the run starts without the filter (its names then lead nowhere,
    // as a handed-over run's did before).
    const endpoints = getLocalEndpoints(options.tcp ?? [], getHostServices(options.network));
    const source = getConnectSocketPath(dir);
    if (endpoints.length > 0 && options.connectToken !== undefined) {
      const handoff = await this.openConnectHandoff(options.runId, endpoints, { dir, token: options.connectToken }).catch(() => undefined);
      if (!handoff && !existsSync(source)) writeFileSync(source, '', { mode: 0o644 });
    }
    return run;
  }

  async #listen(options: EgressRunOptions, dir: string, caBundlePath: string | undefined): Promise<EgressRun> {
    const socketPath = join(dir, 'egress.sock');
    const context = this.#createContext(options);
    // The accepted sockets carry every byte back to the client: the same larger buffers as upstream.
    const server = createNetServer({ highWaterMark: STREAM_HIGH_WATER_MARK }, (socket) => this.#door.accept(socket, context));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) => reject(new ExecgateError(
        'EXECGATE_ERR_EGRESS_PROXY_FAILED',
        `Could not listen on the egress socket for run ${options.runId}: ${error.message}.`,
        { runId: options.runId }, { cause: error },
      )));
      server.listen(socketPath, () => resolve());
    });
    const hostSockets = await this.#openHostSockets(context, dir);
    this.#runs.set(options.runId, { server, context, dir, hostSockets: hostSockets.servers });
    return Object.freeze({
      hostSockets: hostSockets.mounts,
      runId: options.runId,
      dir,
      socketPath,
      caBundlePath,
      credentials: options.credentials,
      close: () => this.#closeRun(options.runId, dir),
      handOff: () => this.#handOff(options.runId, dir),
      decisions: () => [...context.decisions],
      started: (pid: number) => { context.pids.add(pid); },
      replaceValue: (sentinel: string, value: string) => replaceValue(context, sentinel, value),
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
    const trust = this.#trust.prepare(options.network.upstream?.ca ?? []);
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
      pids: new Set(),
      get trust() {
        return trust();
      },
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
        this.#door.accept(socket, undefined);
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

  /**
   * Serve a TCP listener opened in the gateway's shared network namespace (bridge.ts) as the
   * shared socket is served: a connection belongs to the shared run whose credentials it
   * presents, or to none. Closed with the proxy.
   */
  serveShared(server: NetServer): void {
    if (this.#closed) {
      server.close();
      return;
    }
    // A listener received from another process is made by Node without options; its accepted
    // sockets take the server's highWaterMark (net.Server reads it per connection), and carry
    // every byte back to the client: the same larger buffers as the shared socket's.
    (server as NetServer & { highWaterMark: number }).highWaterMark = STREAM_HIGH_WATER_MARK;
    server.on('connection', (socket) => {
      this.#sharedSockets.add(socket);
      socket.once('close', () => this.#sharedSockets.delete(socket));
      this.#door.accept(socket, undefined);
    });
    server.on('error', () => undefined);
    server.once('close', () => this.#listeners.delete(server));
    // Between runs nothing waits on it: it must not keep the gateway's process alive.
    server.unref();
    this.#listeners.add(server);
  }

  /**
   * Serve a raw TCP listener of the shared network namespace (a named destination's 127.77.X.Y:PORT
   * or a host service's loopback port, tcp.ts): each connection is traced to the run whose process
   * holds it (attribution.ts; `holderPid` is a process inside the namespace) and relayed as that
   * run's policy says, or refused. Closed with the proxy.
   */
  serveTcp(server: NetServer, holderPid: () => number | undefined): void {
    if (this.#closed) {
      server.close();
      return;
    }
    (server as NetServer & { highWaterMark: number }).highWaterMark = STREAM_HIGH_WATER_MARK;
    server.on('connection', (socket) => {
      // A relay passes writes on as they come (proxy-core.ts NO_DELAY).
      socket.setNoDelay(NO_DELAY);
      this.#sharedSockets.add(socket);
      socket.once('close', () => this.#sharedSockets.delete(socket));
      const local = { address: socket.localAddress ?? '', port: socket.localPort ?? 0 };
      const peer = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
      // A run's pid is known once its spawn returned (EgressRun.started): a connection its first
      // process made before that is looked for again a few times, a few milliseconds apart.
      const attribute = async (tries: number): Promise<void> => {
        const found = await attributeConnection(holderPid(), peer, local, this.#core.sharedRuns.values()).catch(() => ({ context: undefined, refusal: 'no-run:unreadable' }));
        if (found.refusal === 'no-run:not-a-run' && tries > 0 && !socket.destroyed) {
          setTimeout(() => void attribute(tries - 1), 20);
          return;
        }
        await relayTcp(this.#core, found.context, socket, local.address, local.port, found.refusal);
      };
      socket.pause();
      void attribute(5);
    });
    server.on('error', () => undefined);
    server.once('close', () => this.#listeners.delete(server));
    server.unref();
    this.#listeners.add(server);
  }

  /**
   * The run's UNIX-socket host services (`hostServices: [{ unix: PATH }]`, tcp.ts relaySocket):
   * one listening socket of the run's own per path, in `dir` (the run's directory, so that a
   * process adopting the run listens at the same place; the proxy's own for a shared run), which
   * the sandbox binds at PATH. A connection to it is the run's: the socket is no other run's.
   */
  async #openHostSockets(context: RunContext, dir: string): Promise<{ servers: NetServer[]; mounts: Array<{ source: string; dest: string }> }> {
    const paths = context.options.network.mode === 'none' ? [] : context.options.network.hostSockets ?? [];
    const servers: NetServer[] = [];
    const mounts: Array<{ source: string; dest: string }> = [];
    const tag = createHash('sha256').update(context.options.runId).digest('hex').slice(0, 12);
    try {
      for (const [index, dest] of paths.entries()) {
        const source = join(dir, `host-${tag}-${index}.sock`);
        rmSync(source, { force: true });
        const server = createNetServer({ highWaterMark: STREAM_HIGH_WATER_MARK }, (socket) => void relaySocket(this.#core, context, socket, dest));
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(source, () => resolve());
        });
        chmodSync(source, 0o666);
        servers.push(server);
        mounts.push({ source, dest });
      }
    } catch (error) {
      for (const server of servers) server.close();
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not open the host socket services of run ${context.options.runId}: ${(error as Error).message}.`, { runId: context.options.runId }, { cause: error });
    }
    return { servers, mounts };
  }

  /** Listeners in shared network namespaces (serveShared), closed with the proxy. */
  readonly #listeners = new Set<NetServer>();

  async #openSharedRun(options: EgressRunOptions): Promise<EgressRun> {
    const credentials = options.credentials;
    if (!credentials) throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Run ${options.runId} has no proxy credentials; a shared run needs them.`, { runId: options.runId });
    const injections = options.injections ?? [];
    const socketPath = await this.sharedSocketPath();
    if (injections.length > 0) await this.#core.prepareCa();
    try {
      this.#getPreloadPath();
      if (injections.length > 0) this.#getCaBundlePath();
    } catch (error) {
      if (error instanceof ExecgateError) throw error;
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not prepare the egress files for run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
    const context = this.#createContext(options);
    const hostSockets = await this.#openHostSockets(context, this.#dir);
    this.#runs.set(options.runId, { context, hostSockets: hostSockets.servers });
    this.#core.sharedRuns.set(credentials.username, context);
    return Object.freeze({
      hostSockets: hostSockets.mounts,
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
      started: (pid: number) => { context.pids.add(pid); },
      replaceValue: (sentinel: string, value: string) => replaceValue(context, sentinel, value),
    });
  }

  /** The parent proxy (host:port) a run under `network` leaves through, if any: for its record, never with credentials. */
  getParentFor(network: NetworkPolicy): string | undefined {
    this.#environmentRoute ??= getEnvironmentRoute(this.#options.upstreamEnv ?? {});
    const route = getRunRoute(network.upstream, this.#environmentRoute);
    const parent = route.https ?? route.http;
    return parent ? formatAuthority(parent.host, parent.port) : undefined;
  }

  /**
   * Start making the interception CA ahead of the run that needs it (its keys on the thread pool),
   * without waiting: a run with an injected secret then finds it made, or waits for it without
   * holding the event loop. A failure here is the opening run's to report (it tries again).
   */
  prepareInterception(): void {
    this.#core.prepareCa().catch(() => undefined);
  }

  /** The CA certificate (PEM) the sandbox trusts, creating the CA if needed. */
  getCaCertificate(): string {
    return this.#core.getCa().certPem;
  }

  /**
   * Hand run `runId`'s connections to `endpoints` (its raw TCP destinations and host services)
   * over connected, not relayed (tcp-notify.ts): the socket to bind into the run at
   * CONNECT_SOCKET_MOUNT and the argv wrapper that starts its program under the filter; undefined
   * where the host cannot, or the proxy was told not to (the relay serves).
   */
  async openConnectHandoff(runId: string, endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>, adopted?: { readonly dir: string; readonly token: string }): Promise<{ source: string; wrap: (argv: readonly string[]) => string[] } | undefined> {
    if (this.#closed || this.#options.connectHandoff === false || endpoints.length === 0 || !this.#runs.has(runId)) return undefined;
    // `adopted`: a run another process planned (this process serves that run alone), whose
    // program was told the token, and whose sandbox binds the socket in the run's directory.
    this.#connects ??= new ConnectSupervisor(getConnectSocketPath(adopted?.dir ?? this.#dir), (id, address, port, family) => answerConnect(this.#core, this.#runs.get(id)?.context, address, port, family));
    const handoff = await this.#connects.addRun(runId, endpoints, adopted?.token);
    if (handoff) this.#handoffs.add(runId);
    return handoff;
  }

  /** Whether this proxy hands raw TCP connections over connected where the host can (`connectHandoff`). */
  get handsOverConnects(): boolean {
    return this.#options.connectHandoff !== false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#runs.entries()].map(([runId, entry]) => this.#closeRun(runId, entry.dir !== undefined && this.#adopted.has(entry.dir) ? entry.dir : undefined)));
    this.#connects?.close();
    const shared = this.#sharedServer;
    const listeners = [...this.#listeners];
    for (const server of listeners) server.close();
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
  /*
   * Node's fetch ignores proxy variables before Node 24: a preload installs undici's proxy agent,
   * on the first call of fetch() (wrapped for that), not at every Node start. Loaded at start,
   * undici cost each sandboxed Node process tens of milliseconds and, with its larger heap, a
   * quarter of the throughput of a plain socket read in it (figure 15, the same client with and
   * without the eager preload: 0.71x against 0.97x a direct read).
   */
  #getPreloadPath(): string {
    if (!this.#preloadPath) {
      const path = join(this.#publicDir(), 'node-preload.cjs');
      const undici = require.resolve('undici');
      writeFileSync(path, [
        '// execgate egress: send fetch() through the proxy named by HTTP(S)_PROXY / NO_PROXY (undici, loaded on first use).',
        'const realFetch = globalThis.fetch;',
        'if (typeof realFetch === \'function\') {',
        '  let ready = false;',
        `  const prepare = () => { if (ready) return; ready = true; try { const u = require(${JSON.stringify(undici)}); u.setGlobalDispatcher(new u.EnvHttpProxyAgent()); } catch {} };`,
        '  globalThis.fetch = function fetch(input, init) { prepare(); return realFetch.call(this, input, init); };',
        '}',
        '',
      ].join('\n'), { mode: 0o644 });
      this.#preloadPath = path;
    }
    return this.#preloadPath;
  }

  #getCaBundlePath(): string {
    if (!this.#caBundlePath) {
      const path = join(this.#publicDir(), 'ca.pem');
      try {
        writeFileSync(path, this.#core.getCa().getTrustBundle(), { mode: 0o644 });
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
    if (this.#handoffs.delete(runId)) this.#connects?.endRun(runId);
    const username = entry.context.options.credentials?.username;
    if (username !== undefined && this.#core.sharedRuns.get(username) === entry.context) this.#core.sharedRuns.delete(username);
    for (const socket of entry.context.sockets) socket.destroy();
    for (const hostSocket of entry.hostSockets ?? []) hostSocket.close();
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
}

/** The binding an injection made in code (tests, benchmarks) without one gets: the defaults, to its hosts. */
function getDefaultBinding(injection: Injection): SecretBinding {
  return Object.freeze({ ref: injection.ref, hosts: injection.hosts, delivery: 'inject', place: DEFAULT_PLACEMENT, http: Object.freeze([]), responses: 'decode' });
}

/**
 * A refreshed value for one of a run's injections (EgressRun.replaceValue): a new list (requests
 * in flight keep the one they started with), the responses' masker and wrap detector told of it.
 * The sentinel stays: it is what the run holds.
 */
function replaceValue(context: RunContext, sentinel: string, value: string): boolean {
  const index = context.injections.findIndex((injection) => injection.sentinel === sentinel);
  if (index === -1 || value === '') return false;
  const old = context.injections[index];
  if (old.value === value) return true;
  if (old.binding.place.body && Buffer.byteLength(value, 'utf8') !== Buffer.byteLength(sentinel, 'utf8')) return false;
  const injections = context.injections.map((injection, at) => (at === index ? Object.freeze({ ...injection, value }) : injection));
  context.redactor.add(value, old.ref);
  context.wrap = createWrapDetector(injections, context.options.minLength ?? 8);
  context.injections = injections;
  return true;
}
