/*
 * What the egress proxy's connection handlers (connections.ts, forward.ts) share: a run's context,
 * the proxy's buffer sizes, and one ProxyCore per proxy. The core tells which run a connection
 * belongs to by the credentials it presents, decides where a connection may go (policy, then the
 * resolved address: the checked address is the one dialled), records every decision against its
 * run, and dials, directly or through the parent proxy. The proxy (proxy.ts) owns the runs; it
 * registers the runs of the shared socket here by their proxy username.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket, type SecureContext } from 'node:tls';
import type { Redactor } from '../redact';
import { resolveAllowed, systemResolver } from './address';
import { canonicalHost, formatAuthority } from './authority';
import { createEgressCa, createEgressCaAsync, type EgressCa } from './ca';
import type { BoundInjection } from './plan';
import type { EgressDecision, EgressProxyOptions, EgressRunOptions, EgressVia, ProxyCredentials } from './proxy-types';
import { clip } from './reading';
import type { WrapDetector } from './redact-response';
import { decideDestination } from './rules';
import type { ReadBuffers } from './passthrough';
import { connectThrough, getParent, type UpstreamRoute } from './upstream';

/** What the proxy keeps for an open run (built by proxy.ts when the run opens). */
export interface RunContext {
  readonly options: EgressRunOptions;
  /** Replaced whole (never changed in place) when a value is refreshed (EgressRun.replaceValue). */
  injections: readonly BoundInjection[];
  /** The injected values, for responses (the run output's masker, same settings). */
  readonly redactor: Redactor;
  /** The run's sentinels, for requests (placement.ts). */
  readonly detector: Redactor | undefined;
  /** The injected values' wrappable spellings, for responses read with line breaks taken out. */
  wrap: WrapDetector | undefined;
  readonly sockets: Set<Duplex>;
  readonly decisions: EgressDecision[];
  /** URLs a redirect from an injected request pointed to across schemes, hosts or ports. */
  readonly redirects: Set<string>;
  readonly route: UpstreamRoute;
  readonly trust: SecureContext;
  /** The pids the run's processes descend from (EgressRun.started): where its raw TCP connections are found. */
  readonly pids: Set<number>;
}

const MAX_DECISIONS = 500;

// Larger stream buffers than Node's 16 KiB default: a proxied body is copied through four streams,
// and fewer, larger chunks halve the per-chunk cost (measured with bench/egress.js).
export const STREAM_HIGH_WATER_MARK = 256 * 1024;

/*
 * Every TCP socket the proxy writes on sends what it is given at once (TCP_NODELAY): the proxy
 * relays small writes (a TLS handshake's last flight and the request after it, a response head
 * and the first bytes of its body) one after the other, and with Nagle's algorithm the second
 * waits for the peer to acknowledge the first, which a peer delaying its ACKs holds back for 40
 * ms. Through a CONNECT tunnel four requests in ten waited that long for their first byte, and
 * a download's last bytes could wait as long for the client's ACK (docs/performance.md). Clients
 * and servers set it on their own sockets for the same reason (curl, Node's HTTP server).
 */
export const NO_DELAY = true;
// The same for TLS sockets, spread into their options: Node passes it on to net.Socket, though
// @types/node does not list it for TLS.
export const TLS_BUFFERS = { highWaterMark: STREAM_HIGH_WATER_MARK };

export const HOP_BY_HOP = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'upgrade', 'transfer-encoding',
]);

export class ProxyCore {
  readonly options: EgressProxyOptions;
  /** Shared runs by their proxy username. */
  readonly sharedRuns = new Map<string, RunContext>();
  /** Which run a connection of the shared socket turned out to belong to (for a later malformed request on it). */
  readonly socketRuns = new WeakMap<Duplex, RunContext>();
  #ca: EgressCa | undefined;

  constructor(options: EgressProxyOptions) {
    this.options = options;
    this.#ca = options.ca;
  }

  #caPending: Promise<EgressCa> | undefined;

  /**
   * Start making the CA (its keys on the thread pool) if it is not made or being made; resolves
   * with it. Called ahead of the first run that intercepts, and awaited before such a run opens.
   * A failure is not kept: the next call tries again.
   */
  prepareCa(): Promise<EgressCa> {
    if (this.#ca) return Promise.resolve(this.#ca);
    this.#caPending ??= createEgressCaAsync().then((ca) => {
      this.#ca ??= ca;
      return this.#ca;
    }).finally(() => { this.#caPending = undefined; });
    return this.#caPending;
  }

  /** The CA used for interception: the one prepareCa made, or one made now on this thread where none was prepared. */
  getCa(): EgressCa {
    this.#ca ??= createEgressCa();
    return this.#ca;
  }

  /** The open shared run these credentials belong to; the connection is then ended with it. */
  findRun(username: string, password: string, socket: Duplex): RunContext | undefined {
    const run = this.sharedRuns.get(username);
    const expected = run?.options.credentials;
    if (!run || !expected || !safeEqual(password, expected.password)) return undefined;
    track(run, socket);
    this.socketRuns.set(socket, run);
    return run;
  }

  /** The run a request belongs to: its own socket's run if it presents that run's credentials, or on the shared socket the run whose credentials it presents. */
  authorize(context: RunContext | undefined, req: IncomingMessage): RunContext | undefined {
    if (context) return isAuthorized(context, req) ? context : undefined;
    const given = getBasicCredentials(req);
    return given ? this.findRun(given.username, given.password, req.socket) : undefined;
  }

  /**
   * Policy + resolved-address check; returns where to dial, or the refusal. With a parent proxy
   * for this destination, a name that does not resolve here goes to the parent by name (a
   * company network often resolves only there); one that resolves is checked as always.
   */
  async decide(context: RunContext, via: EgressVia, rawHost: string, port: number, tls: boolean): Promise<EgressDecision> {
    const host = canonicalHost(rawHost) ?? '';
    const base = { runId: context.options.runId, via, host: host || clip(rawHost), port };
    if (!host || !(port >= 1 && port <= 65535)) return { ...base, allowed: false, rule: 'bad-target' };
    const verdict = decideDestination(context.options.network, context.options.narrowing ?? [], host, port);
    if (!verdict.allowed) return { ...base, ...verdict };
    const parent = getParent(context.route, host, port, tls);
    const through = parent ? { parent: formatAuthority(parent.host, parent.port) } : {};
    // An IP literal got here only through an explicit allow pattern naming it: dial it as named.
    if (isIP(host) !== 0) return { ...base, ...verdict, address: host, ...through };
    const resolution = await resolveAllowed(host, this.options.resolver ?? systemResolver);
    if (!resolution.address) {
      if (parent && resolution.refusal === 'resolve-failed') return { ...base, ...verdict, ...through };
      return { ...base, allowed: false, rule: `address:${resolution.refusal}` };
    }
    return { ...base, ...verdict, address: resolution.address, ...through };
  }

  record(context: RunContext | undefined, decision: EgressDecision): void {
    // A host or reason read from a request could hold a sentinel: decisions never do.
    const clean = context?.detector
      ? { ...decision, host: context.detector.redactString(decision.host).text, ...(decision.reason !== undefined ? { reason: context.detector.redactString(decision.reason).text } : {}) }
      : decision;
    const frozen = Object.freeze(clean);
    if (context) {
      context.decisions.push(frozen);
      if (context.decisions.length > MAX_DECISIONS) context.decisions.shift();
    }
    this.options.onDecision?.(frozen);
  }

  /** A destination that never answers must not hold a client forever: bound the connect phase only. */
  limitConnect<T extends Socket>(socket: T): T {
    const limit = this.options.connectTimeout ?? 30_000;
    socket.setTimeout(limit, () => socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })));
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => socket.setTimeout(0));
    return socket;
  }

  dialTarget(address: string, port: number): { host: string; port: number } {
    return this.options.dial ? this.options.dial(address, port) : { host: address, port };
  }

  /**
   * A TCP connection to the decided destination: through the parent proxy (CONNECT to the name)
   * when the decision says so, else to the checked address. Calls back once it is open.
   */
  openTcp(context: RunContext, decision: EgressDecision, callback: (error: Error | null, socket?: Socket) => void, buffers?: ReadBuffers): Socket {
    const parent = getParent(context.route, decision.host, decision.port, true);
    if (decision.parent && parent) {
      return this.limitConnect(connectThrough(parent, decision.host, decision.port, { highWaterMark: STREAM_HIGH_WATER_MARK, noDelay: NO_DELAY }, callback));
    }
    const dial = this.dialTarget(decision.address!, decision.port);
    // `buffers`: read into them (a tunnel passed through unread, tunnel.ts); never through a parent.
    const socket = this.limitConnect(netConnect({ port: dial.port, host: dial.host, noDelay: NO_DELAY, highWaterMark: STREAM_HIGH_WATER_MARK, ...(buffers ? { onread: buffers.onread } : {}) } as never));
    socket.once('connect', () => callback(null, socket));
    socket.once('error', (error) => callback(error));
    return socket;
  }

  /** A connection to the host's own 127.0.0.1:PORT (a host service): no name, no parent proxy. */
  openHost(port: number, callback: (error: Error | null, socket?: Socket) => void, buffers?: ReadBuffers): Socket {
    const dial = this.dialTarget('127.0.0.1', port);
    const socket = this.limitConnect(netConnect({ port: dial.port, host: dial.host, noDelay: NO_DELAY, highWaterMark: STREAM_HIGH_WATER_MARK, ...(buffers ? { onread: buffers.onread } : {}) } as never));
    socket.once('connect', () => callback(null, socket));
    socket.once('error', (error) => callback(error));
    return socket;
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
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 ? { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) } : undefined;
}

/** A connection of the run: ended when the run is closed (its credentials stop working). */
export function track(context: RunContext, socket: Duplex): void {
  if (context.sockets.has(socket)) return;
  context.sockets.add(socket);
  socket.once('close', () => context.sockets.delete(socket));
}

export function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
