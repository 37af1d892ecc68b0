/*
 * The egress proxy's public shapes: what it is created and a run is opened with, and what it hands
 * back (a run's endpoint, its decisions, a run handed to another process). Apart from the proxy
 * (proxy.ts, which re-exports them) so that its connection handlers can name them too.
 */
import type { Resolver } from './address';
import type { EgressCa } from './ca';
import type { Injection } from './plan';
import type { NetworkPolicy, SecretBinding } from './rules';
import type { TcpDestination } from './tcp';
import type { UpstreamRoute } from './upstream';

export type EgressVia = 'connect' | 'http' | 'socks' | 'https-intercepted' | 'tcp' | 'host';

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
  /** An AWS request signed again with the real key (sigv4.ts): the binding, the run's placeholder key id, the scope. */
  readonly resigned?: { readonly ref: string; readonly keyId: string; readonly service: string; readonly region: string };
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
  /**
   * Hand a run's raw TCP connections over connected (tcp-notify.ts): the run's bytes then bypass
   * the gateway. Default true where the host supports it; false: every raw TCP byte is relayed.
   */
  readonly connectHandoff?: boolean;
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
  /** Its raw TCP destinations with their inside addresses (tcp.ts getTcpDestinations); absent = none. */
  readonly tcp?: readonly TcpDestination[];
  /**
   * The token a run's connect hand-off was given by the process that planned it, for the process
   * that adopts the run (a CLI background run's supervisor; tcp-notify.ts). Never a value.
   */
  readonly connectToken?: string;
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
  /** The run's UNIX-socket host services: its own socket (source) to bind at each host path (dest). */
  readonly hostSockets: ReadonlyArray<{ readonly source: string; readonly dest: string }>;
  /**
   * The run's process has started with this pid (its sandbox's outermost process): raw TCP
   * connections on the shared namespace's listeners are the run's when a process of that tree
   * holds them (attribution.ts).
   */
  started(pid: number): void;
  /**
   * The value behind `sentinel` was refreshed (a credential-process source gave a new one before
   * the old expired): requests from now on get `value`, and responses are cleaned of it too. False
   * (nothing changed) when no injection has that sentinel, or when the binding lets the value into
   * request bodies and the new one's length differs from the sentinel's (a body keeps its length).
   */
  replaceValue(sentinel: string, value: string): boolean;
}

/** A run's endpoint as handed between processes (JSON; holds injected values: pipes only). */
export interface HandedOffRun {
  readonly dir: string;
  readonly options: EgressRunOptions;
}
