/*
 * How the proxy's own connections leave the gateway: directly, or through a parent proxy (a
 * company's HTTP proxy), and which CAs upstream TLS trusts.
 *
 * The parent comes from the run's policy (`sandbox.network.upstream.proxy`) or else the gateway's
 * own environment (`HTTPS_PROXY` for tunnels and TLS, `HTTP_PROXY` for plain HTTP, `NO_PROXY` for
 * hosts reached directly), as curl reads them. Its credentials (`http://user:pass@proxy:3128`)
 * stay in the gateway: they are sent as Proxy-Authorization on the gateway's connection to the
 * parent, never to a sandbox (whose proxy variables name the gateway's bridge) and never in a
 * decision, an error or a log. Tunnels and TLS go through the parent with CONNECT to the host
 * *name* (a parent that filters by name sees the name; one that resolves sees it first); plain
 * HTTP as an absolute-form request, which is what proxies that only CONNECT to port 443 accept.
 *
 * Extra CAs (`sandbox.network.upstream.ca`) are PEM files read when a run opens; upstream TLS
 * trusts them on top of Node's roots and the system bundle.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { ExecgateError } from '../errors';
import { canonicalHost, formatAuthority, parseAuthority } from './authority';
import { isProxyUrl, type UpstreamPolicy } from './rules';

export interface ParentProxy {
  readonly host: string;
  readonly port: number;
  /** `Basic ...` for Proxy-Authorization, when the URL has credentials. */
  readonly authorization?: string;
}

export interface UpstreamRoute {
  /** For CONNECT tunnels, SOCKS and TLS. */
  readonly https?: ParentProxy;
  /** For plain HTTP (absolute-form requests). */
  readonly http?: ParentProxy;
  readonly noProxy: readonly NoProxyEntry[];
}

interface NoProxyEntry {
  readonly host: string;
  readonly port?: number;
  readonly any?: boolean;
}

const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];

/** The route the gateway's own environment gives (its HTTPS_PROXY / HTTP_PROXY / NO_PROXY). */
export function getEnvironmentRoute(env: Readonly<Record<string, string | undefined>>): UpstreamRoute {
  const pick = (...names: string[]): string | undefined => names.map((n) => env[n]).find((v) => v !== undefined && v.trim() !== '');
  const https = pick('HTTPS_PROXY', 'https_proxy');
  const http = pick('HTTP_PROXY', 'http_proxy');
  const noProxy = pick('NO_PROXY', 'no_proxy');
  return Object.freeze({
    ...(https ? { https: parseParent(https, 'HTTPS_PROXY') } : {}),
    ...(http ? { http: parseParent(http, 'HTTP_PROXY') } : {}),
    noProxy: parseNoProxy(noProxy ? noProxy.split(',') : []),
  });
}

/** The run's route: its policy's `upstream` over the gateway's environment. */
export function getRunRoute(policy: UpstreamPolicy | undefined, environment: UpstreamRoute): UpstreamRoute {
  if (!policy || (policy.proxy === undefined && policy.noProxy === undefined)) return environment;
  const noProxy = policy.noProxy ? parseNoProxy(policy.noProxy) : environment.noProxy;
  if (policy.proxy === 'direct') return Object.freeze({ noProxy });
  if (policy.proxy !== undefined) {
    const parent = parseParent(policy.proxy, 'sandbox.network.upstream.proxy');
    return Object.freeze({ https: parent, http: parent, noProxy });
  }
  return Object.freeze({ ...environment, noProxy });
}

/** The passwords a parent proxy URL carries (environment or policy): masked in every run's output, never in a sandbox. */
export function getParentPasswords(env: Readonly<Record<string, string | undefined>>, policy: UpstreamPolicy | undefined): string[] {
  const urls = [...PROXY_VARIABLES.map((name) => env[name]), policy?.proxy];
  return urls.flatMap((text) => {
    if (!text) return [];
    try {
      const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text.trim()) ? text.trim() : `http://${text.trim()}`);
      return [decodeURIComponent(url.password), url.password].filter((p) => p !== '');
    } catch {
      return [];
    }
  });
}

/** Variables of the gateway that name its parent proxy; a sandbox gets the egress proxy's instead. */
export const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'];

function parseParent(text: string, where: string): ParentProxy {
  // A bare `host:port` is what many set; curl reads it as http://.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text.trim()) ? text.trim() : `http://${text.trim()}`;
  if (!isProxyUrl(withScheme)) {
    // The text may hold a password: say where it came from, not what it was.
    throw new ExecgateError('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID', `The parent proxy in ${where} is not an http://[user:pass@]host:port URL; the egress proxy cannot leave through it. Fix it, or set \`sandbox.network.upstream.proxy: direct\`. Nothing was run.`, { where });
  }
  const url = new URL(withScheme);
  const host = canonicalHost(url.hostname);
  if (host === undefined) throw new ExecgateError('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID', `The parent proxy in ${where} has no valid host. Nothing was run.`, { where });
  const port = url.port === '' ? 80 : Number(url.port);
  const authorization = url.username !== '' || url.password !== ''
    ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`, 'utf8').toString('base64')}`
    : undefined;
  return Object.freeze({ host, port, ...(authorization ? { authorization } : {}) });
}

function parseNoProxy(entries: readonly string[]): readonly NoProxyEntry[] {
  return Object.freeze(entries.map((entry) => entry.trim()).filter((entry) => entry !== '').flatMap((entry): NoProxyEntry[] => {
    if (entry === '*') return [{ host: '*', any: true }];
    const bare = entry.replace(/^\*?\./, '');
    if (isIP(bare) === 6) return [{ host: canonicalHost(bare)! }];
    const authority = parseAuthority(bare) ?? parseAuthority(bare, 0);
    return authority ? [{ host: authority.host, ...(authority.port !== 0 ? { port: authority.port } : {}) }] : [];
  }));
}

/** The parent to use for `host:port` (undefined: direct), as curl reads NO_PROXY: the name, its subdomains, or `*`. */
export function getParent(route: UpstreamRoute, host: string, port: number, tls: boolean): ParentProxy | undefined {
  const parent = tls ? route.https : route.http;
  if (!parent) return undefined;
  const bypass = route.noProxy.some((entry) => entry.any || ((entry.port === undefined || entry.port === port) &&
    (entry.host === host || (isIP(host) === 0 && host.endsWith(`.${entry.host}`)))));
  return bypass ? undefined : parent;
}

/**
 * A TCP connection to `host:port` through `parent` (CONNECT to the name): calls back with the
 * tunnelled socket once the parent said 2xx, or an error naming the parent's answer.
 */
export function connectThrough(parent: ParentProxy, host: string, port: number, options: { highWaterMark?: number; noDelay?: boolean }, callback: (error: Error | null, socket?: Socket) => void): Socket {
  const socket = netConnect({ host: parent.host, port: parent.port, highWaterMark: options.highWaterMark, noDelay: options.noDelay } as never);
  const authority = formatAuthority(host, port);
  let head = Buffer.alloc(0);
  let done = false;
  const finish = (error: Error | null): void => {
    if (done) return;
    done = true;
    socket.off('data', onData);
    if (error) {
      socket.destroy();
      callback(error);
    } else {
      callback(null, socket);
    }
  };
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) {
      if (head.length > 16_384) finish(parentError('its answer to CONNECT had no end'));
      return;
    }
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1'))?.[1];
    if (!status || !status.startsWith('2')) return finish(parentError(`it answered CONNECT ${authority} with ${status ?? 'something other than HTTP'}`, `parent-${status ?? 'bad'}`));
    if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
    finish(null);
  };
  socket.on('data', onData);
  socket.once('error', (error) => finish(error));
  socket.once('close', () => finish(parentError('it closed the connection')));
  socket.once('connect', () => {
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${parent.authorization ? `Proxy-Authorization: ${parent.authorization}\r\n` : ''}\r\n`);
  });
  return socket;
}

function parentError(message: string, code = 'EPARENT'): Error {
  return Object.assign(new Error(`the parent proxy refused: ${message}`), { code });
}

/*
 * Secure contexts for upstream TLS, one per set of CA files (and their modification times, so an
 * edited file is read again). Node's roots and the system bundle are always in: a private CA is
 * trusted on top of the public ones, never instead.
 */
export class UpstreamTrust {
  readonly #extra: readonly string[];
  readonly #contexts = new Map<string, SecureContext>();

  /** `extra`: PEM text trusted for every run (the gateway's `egress.upstreamCa` option). */
  constructor(extra: readonly string[] = []) {
    this.#extra = extra;
  }

  /**
   * The context for a run whose policy names `files`, made when first asked for: the files are
   * read now (EXECGATE_ERR_EGRESS_UPSTREAM_INVALID if one cannot be), the context, some 280
   * certificates parsed (tens of milliseconds on the event loop), only when the run's proxy first
   * speaks TLS upstream: a run that only forwards plain HTTP or tunnels never pays for it.
   */
  prepare(files: readonly string[]): () => SecureContext {
    for (const file of files) readCaFile(file);
    let context: SecureContext | undefined;
    return () => {
      context ??= this.getContext(files);
      return context;
    };
  }

  /** The context for a run whose policy names `files`; throws EXECGATE_ERR_EGRESS_UPSTREAM_INVALID if one cannot be read. */
  getContext(files: readonly string[]): SecureContext {
    const key = files.map((file) => `${file}\0${mtimeOf(file)}`).join('\n');
    let context = this.#contexts.get(key);
    if (!context) {
      const pems = files.map((file) => readCaFile(file));
      context = createSecureContext({ ca: [...getSystemCertificates(), ...this.#extra, ...pems] });
      this.#contexts.set(key, context);
    }
    return context;
  }
}

/*
 * Node's roots and the system bundle, read again for each new context (a few per gateway) rather
 * than kept: the bundle's text is some 200 KiB that every later garbage collection would mark.
 */
function getSystemCertificates(): string[] {
  const path = SYSTEM_BUNDLES.find((candidate) => existsSync(candidate));
  let bundle: string[] = [];
  try {
    bundle = path ? splitPem(readFileSync(path, 'utf8')) : [];
  } catch {
    // Node's own roots still apply.
  }
  return [...rootCertificates, ...bundle];
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

function readCaFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ExecgateError('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID', `The CA file ${file} in \`sandbox.network.upstream.ca\` cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}). Nothing was run.`, { file }, { cause: error });
  }
  if (splitPem(text).length === 0) {
    throw new ExecgateError('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID', `The CA file ${file} in \`sandbox.network.upstream.ca\` holds no PEM certificate. Nothing was run.`, { file });
  }
  return text;
}

function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
