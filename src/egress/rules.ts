/*
 * The network policy of a run (`sandbox.network`) and the hosts each bound secret is for
 * (`secrets.bind`), as the policy loader compiles them (policy/egress-settings.ts), and the one
 * decision the proxy asks for every connection: may this run reach HOST:PORT, and by which rule?
 *
 * Order of the decision: `none` refuses everything; a deny pattern wins over any allow; in
 * `allowlist` only an allow pattern lets a connection through; in `open` everything not denied
 * does. Then a secret delivered into the sandbox's environment (`delivery: env`) narrows the whole
 * run to that secret's hosts: the value is in the child, so every connection could carry it. A
 * secret delivered by injection does not narrow the run (the child only holds a worthless
 * sentinel); its value is sent only to its own hosts, in the places its binding names
 * (placement.ts).
 */
import { isIP } from 'node:net';
import { findMatch, matchesHost, type HostPattern } from './hosts';
import type { HostKey } from './ssh/keys';

export type NetworkMode = 'open' | 'none' | 'allowlist';
export type Delivery = 'env' | 'inject' | 'aws-sigv4' | 'ssh-agent';

export interface NetworkPolicy {
  readonly mode: NetworkMode;
  readonly allow: readonly HostPattern[];
  readonly deny: readonly HostPattern[];
  /** How the proxy's own connections leave (`sandbox.network.upstream`); absent: the gateway's environment decides. */
  readonly upstream?: UpstreamPolicy;
  /** `sandbox.network.tcp`: raw TCP destinations, by name (tcp.ts); absent = none. */
  readonly tcp?: readonly TcpEntry[];
  /** `sandbox.network.hostServices`: ports of the host's loopback forwarded into every run; absent = none. */
  readonly hostServices?: readonly number[];
  /** `sandbox.network.hostServices` `{ unix: PATH }` entries: the host's UNIX sockets, at the same path in every run; absent = none. */
  readonly hostSockets?: readonly string[];
}

/** One `sandbox.network.tcp` entry: a host name (canonical, never an IP literal) and its port. */
export interface TcpEntry {
  /** As written in the policy (the rule of a decision). */
  readonly text: string;
  readonly host: string;
  readonly port: number;
}

/** `sandbox.network.upstream`: a parent proxy, hosts that bypass it, extra CA files for upstream TLS. */
export interface UpstreamPolicy {
  /** `http://[user:pass@]host:port` of a parent proxy, or `direct`; absent: the gateway's HTTPS_PROXY / HTTP_PROXY. */
  readonly proxy?: string;
  /** Hosts reached without the parent proxy (NO_PROXY syntax); absent: the gateway's NO_PROXY. */
  readonly noProxy?: readonly string[];
  /** PEM files of CAs trusted for upstream TLS on top of the system's. */
  readonly ca: readonly string[];
}

/**
 * Where an injected value may be placed in a request to its hosts. Everything not named here
 * (another header, a cookie, the path, the body) is refused when it holds the sentinel.
 */
export interface Placement {
  /** Lower-case header names; the value is the whole credential, bare, after `Bearer`/`token`, or in `Basic` credentials. */
  readonly headers: readonly string[];
  /** Query parameters whose whole value is the credential. */
  readonly query: readonly string[];
  /** Cookies whose whole value is the credential. */
  readonly cookies: readonly string[];
  /** Anywhere in the path (explicit only). */
  readonly path: boolean;
  /** Anywhere in an uncompressed body (explicit only: a body is what a server stores). */
  readonly body: boolean;
}

export interface SecretBinding {
  /** `secret:NAME` or `decrypt:ID`, as in `secrets.allow`. */
  readonly ref: string;
  readonly hosts: readonly HostPattern[];
  readonly delivery: Delivery;
  /** Injection only: where the value may go. */
  readonly place: Placement;
  /** Injection only: request methods it is put into (upper case); absent = any. */
  readonly methods?: readonly string[];
  /** Injection only: path prefixes or globs (`*` one segment, `**` any) it is put into; absent = any. */
  readonly paths?: readonly string[];
  /** Injection only: hosts (by name or address, port default 80) that may receive it over plain HTTP. */
  readonly http: readonly HostPattern[];
  /** Injection only: `decode` compressed responses to clean them, or ask for `identity` and refuse any encoded one. */
  readonly responses: 'decode' | 'identity';
  /** `aws-sigv4` only: what the proxy signs with the real key (sigv4.ts). */
  readonly aws?: AwsSettings;
  /** `ssh-agent` only: the servers' public host keys the key may log in to (egress/ssh/keys.ts). */
  readonly hostKeys?: readonly HostKey[];
}

/** Limits of an AWS binding (`delivery: aws-sigv4`). */
export interface AwsSettings {
  /** Service names of the credential scope (`s3`, `sts`, ...); absent = any. */
  readonly services?: readonly string[];
  /** Regions of the credential scope; absent = any. */
  readonly regions?: readonly string[];
  /** Whether query-signed (presigned) requests are signed again. */
  readonly presign: boolean;
  /** The longest X-Amz-Expires of a presigned request signed again, in seconds. */
  readonly presignMaxExpiry?: number;
}

/** The hosts an AWS binding is for when it names none. */
export const AWS_DEFAULT_HOSTS = Object.freeze(['*.amazonaws.com', 'amazonaws.com']);

/** The port an injected value goes to when a binding's host pattern names none. */
export const DEFAULT_INJECT_PORT = 443;
/** The port of a `delivery: ssh-agent` binding's host that names none. */
export const DEFAULT_SSH_PORT = 22;
/** The port of a binding's `http` pattern that names none. */
export const DEFAULT_HTTP_PORT = 80;

export const DEFAULT_PLACEMENT: Placement = Object.freeze({
  headers: Object.freeze(['authorization']), query: Object.freeze([]), cookies: Object.freeze([]), path: false, body: false,
});

/** Headers that frame or route the request, or belong to the proxy hop: a credential has no place there. */
export const UNPLACEABLE_HEADERS: ReadonlySet<string> = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'proxy-connection', 'keep-alive', 'proxy-authorization',
  'proxy-authenticate', 'te', 'trailer', 'upgrade', 'cookie', 'expect', 'content-encoding', 'content-type',
]);

export interface Verdict {
  readonly allowed: boolean;
  /** The rule that decided: `allow:PATTERN`, `deny:PATTERN`, `mode:none`, `mode:open`, `not-allowlisted`, `bound:REF`. */
  readonly rule: string;
}

export const OPEN_NETWORK: NetworkPolicy = Object.freeze({ mode: 'open', allow: Object.freeze([]), deny: Object.freeze([]) });


/** An `http://` parent proxy URL: host and port, optional credentials, nothing else. */
export function isProxyUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' && url.hostname !== '' && (url.pathname === '/' || url.pathname === '') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** May a run under `policy`, holding the env-delivered bound secrets `narrowing`, reach host:port? */
export function decideDestination(
  policy: NetworkPolicy,
  narrowing: readonly SecretBinding[],
  host: string,
  port: number,
): Verdict {
  if (policy.mode === 'none') return { allowed: false, rule: 'mode:none' };
  const denied = findMatch(policy.deny, host, port);
  if (denied) return { allowed: false, rule: `deny:${denied.text}` };
  let rule = 'mode:open';
  if (policy.mode === 'allowlist') {
    const allowed = findMatch(policy.allow, host, port);
    if (!allowed) return { allowed: false, rule: 'not-allowlisted' };
    rule = `allow:${allowed.text}`;
  } else {
    // An IP literal is reached only when a pattern names it, even in `open`: `*` covers names.
    if (isIP(host) !== 0) {
      const allowed = findMatch(policy.allow, host, port);
      if (!allowed) return { allowed: false, rule: 'ip-literal-not-allowed' };
      rule = `allow:${allowed.text}`;
    }
  }
  for (const binding of narrowing) {
    if (!binding.hosts.some((pattern) => matchesHost(pattern, host, port))) {
      return { allowed: false, rule: `bound:${binding.ref}` };
    }
  }
  return { allowed: true, rule };
}
