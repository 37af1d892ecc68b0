/*
 * How a sandboxed run reaches the proxy. The run's network namespace has nothing but loopback, so
 * it cannot reach any host port. Tools find the proxy through the usual proxy variables, which
 * carry the run's proxy credentials (`http://USER:PASS@127.0.0.1:PORT`): the credentials, not the
 * port, tell the proxy which run a connection belongs to, and so which rules, bound secrets and
 * sentinels apply to it.
 *
 * Two ways in:
 *  - shared (the usual case): the runs of a gateway share one network namespace (process/bwrap/
 *    network.ts), and the gateway holds one TCP listener inside it, on 127.0.0.1 and a port the
 *    kernel picks. A short-lived process entered into the namespace opens it and hands it to the
 *    gateway over an IPC channel (egress-listener.js); from then on the gateway's proxy accepts
 *    the runs' connections itself, as it accepts those on its shared socket: no process inside
 *    the sandbox relays their bytes, and a run costs no process for its network (the variables
 *    are set in its environment before it starts). The listener is the gateway's: it ends with
 *    the gateway's process however that ends, and a run cannot take its port while it is open.
 *    It is opened again (on a new port) only when the namespace was replaced.
 *  - per run (a run with a network namespace of its own: a narrowed run, or where joining the
 *    shared one is not possible): a bridge inside the sandbox that starts listening *before* it
 *    spawns the command (so the command's first connection cannot race it), carries each
 *    connection to the proxy's Unix socket bound in, passes signals on and exits the way the
 *    command did. In a PID namespace it dies with the sandbox like everything else.
 *
 * Both programs are run by the gateway's own `node`, so nothing extra must be installed (the
 * sandbox-runtime peer relays with socat). Node's built-in fetch ignores proxy variables before
 * Node 24, so Node children get a `--require` preload that installs undici's EnvHttpProxyAgent
 * (it reads the same variables).
 */
import type { Server as NetServer } from 'node:net';
import { ExecgateError } from '../errors';
import { getRunBridgeSource } from '../process/programs';
import type { BwrapMount } from '../process/bwrap/spec';
import type { HostPattern } from './hosts';
import type { EgressRun } from './proxy';
import { HOSTS_MOUNT } from './tcp';

/** Where the proxy's public files (Node preload, CA bundle) appear inside the sandbox (on its private /tmp). */
export const EGRESS_MOUNT = '/tmp/.execgate-egress';
/** Where a run with a bridge of its own finds the proxy's socket. */
export const SOCKET_MOUNT = '/tmp/.execgate-egress.sock';
/** 0: an ephemeral port, so that bridges sharing a network namespace never collide. */
export const DEFAULT_BRIDGE_PORT = 0;

// The programs: src/programs/egress-run-bridge.js and egress-listener.js.

export interface SandboxEgress {
  /** The proxy's files (and, for a bridge of its own, its socket) bound in. Mounted after the /tmp tmpfs. */
  readonly mounts: readonly BwrapMount[];
  /** Variables for the child (proxy, CA trust); with a bridge of its own the bridge sets the proxy ones. */
  readonly env: Readonly<Record<string, string>>;
  /** To add to the child's NODE_OPTIONS (the fetch preload). */
  readonly nodeOptions: string;
  /** The command line to run inside the sandbox in place of `argv` (the run's own bridge, which spawns `argv`; `argv` itself with the shared bridge). */
  wrap(argv: readonly string[]): string[];
}

/*
 * NO_PROXY inside a sandbox: the run's own loopback (a dev server one run starts for the next) is
 * reached directly, everything else through the proxy. A loopback address the policy allows by
 * name (`allow: ["127.0.0.1:5432"]`) means the host's, which only the proxy reaches: it is left
 * out, so clients send it through the proxy as the policy says (the run's own servers are then
 * reached at `localhost` or another loopback address).
 */
export function getNoProxy(allow: readonly HostPattern[] = []): string {
  const named = new Set(allow.filter((pattern) => pattern.kind === 'ip').map((pattern) => pattern.host));
  return ['localhost', '127.0.0.1', '::1'].filter((entry) => !named.has(entry)).join(',');
}

export function getSandboxEgress(run: EgressRun, options: {
  port?: number; nodePath?: string; sharedPort?: number; allow?: readonly HostPattern[];
  /** The run's generated /etc/hosts (its raw TCP destinations' names), bound read-only over the sandbox's. */
  hostsFile?: string;
  /** Loopback addresses and ports a bridge of the run's own listens on for raw TCP (tcp.ts getLocalEndpoints). */
  tcpEndpoints?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** The run's own sockets for the host's UNIX sockets (source), bound at the host's paths (dest). */
  hostSockets?: ReadonlyArray<{ readonly source: string; readonly dest: string }>;
} = {}): SandboxEgress {
  const nodePath = options.nodePath ?? process.execPath;
  const nodeOptions = `--require ${EGRESS_MOUNT}/node-preload.cjs`;
  const auth = run.credentials ? `${encodeURIComponent(run.credentials.username)}:${encodeURIComponent(run.credentials.password)}` : undefined;
  const noProxy = getNoProxy(options.allow);
  const env: Record<string, string> = { NO_PROXY: noProxy, no_proxy: noProxy };
  if (run.caBundlePath) {
    const bundle = `${EGRESS_MOUNT}/ca.pem`;
    for (const name of ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO']) env[name] = bundle;
  }
  // Read-only: connect(2) on a socket still works, while the CA bundle and the Node preload
  // (shared by every run of the gateway) cannot be rewritten from inside.
  const files: BwrapMount[] = [{ kind: 'bind', source: run.dir, dest: EGRESS_MOUNT, readOnly: true }];
  if (options.hostsFile) files.push({ kind: 'bind', source: options.hostsFile, dest: HOSTS_MOUNT, readOnly: true });
  // Read-only: connect(2) works on it, and the run cannot replace it.
  for (const socket of options.hostSockets ?? []) files.push({ kind: 'bind', source: socket.source, dest: socket.dest, readOnly: true });
  if (options.sharedPort !== undefined) {
    const at = `${auth ? `${auth}@` : ''}127.0.0.1:${options.sharedPort}`;
    for (const name of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy']) env[name] = `http://${at}`;
    for (const name of ['ALL_PROXY', 'all_proxy']) env[name] = `socks5h://${at}`;
    return Object.freeze({ mounts: Object.freeze(files), env: Object.freeze(env), nodeOptions, wrap: (argv: readonly string[]) => [...argv] });
  }
  // The run's own bridge sets HTTP(S)_PROXY / ALL_PROXY (it alone knows the port it got).
  if (auth) env.EXECGATE_EGRESS_AUTH = auth;
  if (options.tcpEndpoints && options.tcpEndpoints.length > 0) env.EXECGATE_EGRESS_TCP = JSON.stringify(options.tcpEndpoints.map((e) => [e.host, e.port]));
  env.EXECGATE_EGRESS_NODE_OPTIONS = nodeOptions;
  const port = options.port ?? DEFAULT_BRIDGE_PORT;
  return Object.freeze({
    mounts: Object.freeze([...files, { kind: 'bind', source: run.socketPath, dest: SOCKET_MOUNT, readOnly: true } satisfies BwrapMount]),
    env: Object.freeze(env),
    nodeOptions: '',
    wrap: (argv: readonly string[]) => [nodePath, '-e', getRunBridgeSource(), '--', SOCKET_MOUNT, String(port), ...argv],
  });
}

/** Opens listeners inside the shared network namespace (process/bwrap/network.ts). */
export interface NamespaceLauncher {
  /** The namespace's identity (`net:[N]`), starting its holder if needed; undefined = no shared namespace. */
  current(): Promise<string | undefined>;
  /** A TCP listener on 127.0.0.1 inside namespace `namespace`, held by this process; undefined when that namespace is gone. */
  listenInside(namespace: string): Promise<NetServer | undefined>;
  /** Listeners on several addresses inside the namespace in one go (each: the listener, or the error code); undefined when it is gone. */
  listenInsideMany?(namespace: string, endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>): Promise<Array<NetServer | string> | undefined>;
  /** A process inside the namespace, whose /proc/PID/net lists its sockets; undefined when it is gone. */
  holderPid?(namespace: string): number | undefined;
}

/**
 * The raw TCP listeners of one shared network namespace (tcp.ts): one per loopback address and
 * port any run of the gateway needs (a destination's 127.77.X.Y:PORT, a host service's
 * 127.0.0.1:PORT and [::1]:PORT), opened when a run first needs them, all of a run's missing ones
 * by one process, and kept while the namespace lives: they are the gateway's, so no run can take
 * their ports. A run whose policy does not name one is refused on it (the proxy decides per run).
 */
export class SharedTcpListeners {
  readonly #launcher: NamespaceLauncher;
  readonly #serve: (server: NetServer, holderPid: () => number | undefined) => void;
  /** address:port -> its listener, or null where the namespace has no such address (::1 without IPv6). */
  readonly #open = new Map<string, NetServer | null>();
  #namespace = '';
  #queue: Promise<unknown> = Promise.resolve();

  constructor(launcher: NamespaceLauncher, serve: (server: NetServer, holderPid: () => number | undefined) => void) {
    this.#launcher = launcher;
    this.#serve = serve;
  }

  /** Listeners on all of `endpoints` in the current shared namespace (one at a time: runs opening together wait for each other). */
  ensure(endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>): Promise<void> {
    const next = this.#queue.then(() => this.#ensure(endpoints));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #ensure(endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>): Promise<void> {
    const namespace = await this.#launcher.current();
    if (namespace === undefined) throw failed('the shared network namespace is gone');
    if (namespace !== this.#namespace) {
      this.stop();
      this.#namespace = namespace;
    }
    const missing = endpoints.filter((e) => !this.#open.has(key(e)));
    if (missing.length === 0) return;
    if (!this.#launcher.listenInsideMany || !this.#launcher.holderPid) throw failed('it cannot open raw TCP listeners');
    let results: Array<NetServer | string> | undefined;
    try {
      results = await this.#launcher.listenInsideMany(namespace, missing);
    } catch (error) {
      throw failed((error as Error).message);
    }
    if (!results) throw failed('the shared network namespace is gone');
    const launcher = this.#launcher;
    let problem: string | undefined;
    results.forEach((result, index) => {
      const endpoint = missing[index];
      if (typeof result === 'string') {
        if (endpoint.host === '::1' && (result === 'EADDRNOTAVAIL' || result === 'EAFNOSUPPORT')) this.#open.set(key(endpoint), null);
        else problem ??= `${endpoint.host === '::1' ? '[::1]' : endpoint.host}:${endpoint.port} is taken (${result}${result === 'EADDRINUSE' ? ': a run listens there' : ''})`;
        return;
      }
      this.#serve(result, () => launcher.holderPid!(namespace));
      this.#open.set(key(endpoint), result);
    });
    if (problem) throw failed(`raw TCP listener ${problem}`);
  }

  /** Close every listener (the gateway closes, or the namespace was replaced). */
  stop(): void {
    for (const server of this.#open.values()) server?.close();
    this.#open.clear();
  }
}

function key(endpoint: { readonly host: string; readonly port: number }): string {
  return `${endpoint.host}|${endpoint.port}`;
}

/** Where a listener's connections go: the proxy's front door, as for its shared socket. */
export type ListenerSink = (server: NetServer) => void;

/**
 * One listener per shared network namespace, held by the gateway's process and served by its
 * proxy. `port()` is called once per proxied run: with the listener open in the current namespace
 * it is a check of its state, nothing more.
 */
export class SharedListener {
  readonly #launcher: NamespaceLauncher;
  readonly #sink: ListenerSink;
  #server: NetServer | undefined;
  #port = 0;
  #namespace = '';
  #starting: Promise<number> | undefined;

  constructor(launcher: NamespaceLauncher, sink: ListenerSink) {
    this.#launcher = launcher;
    this.#sink = sink;
  }

  /** The loopback port the listener has in the current shared namespace, opening one if needed. */
  async port(): Promise<number> {
    const namespace = await this.#launcher.current();
    if (namespace === undefined) throw failed('the shared network namespace is gone');
    if (this.#server?.listening && this.#namespace === namespace) return this.#port;
    this.#starting ??= this.#start(namespace).finally(() => { this.#starting = undefined; });
    return this.#starting;
  }

  async #start(namespace: string): Promise<number> {
    this.stop();
    let server: NetServer | undefined;
    try {
      server = await this.#launcher.listenInside(namespace);
    } catch (error) {
      throw failed((error as Error).message);
    }
    if (!server) throw failed('the shared network namespace is gone');
    const address = server.address();
    if (address === null || typeof address === 'string') {
      server.close();
      throw failed('its listener has no TCP address');
    }
    this.#sink(server);
    this.#server = server;
    this.#port = address.port;
    this.#namespace = namespace;
    return address.port;
  }

  /** Close the listener (the gateway closes, or it is replaced); connections it accepted are the proxy's. */
  stop(): void {
    const server = this.#server;
    this.#server = undefined;
    server?.close();
  }
}

function failed(why: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not open the gateway's egress listener in the shared network namespace: ${why}. Nothing was run.`, {});
}
