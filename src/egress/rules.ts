/*
 * The network policy of a run (`sandbox.network`) and the hosts each bound secret is for
 * (`secrets.bind`), validated once at load time, and the one decision the proxy asks for every
 * connection: may this run reach HOST:PORT, and by which rule?
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
import { describeValue, ExecgateError } from '../errors';
import { findMatch, matchesHost, parseHostPattern, parseHostPatterns, type HostPattern } from './hosts';

export type NetworkMode = 'open' | 'none' | 'allowlist';
export type Delivery = 'env' | 'inject';

export interface NetworkPolicy {
  readonly mode: NetworkMode;
  readonly allow: readonly HostPattern[];
  readonly deny: readonly HostPattern[];
  /** How the proxy's own connections leave (`sandbox.network.upstream`); absent: the gateway's environment decides. */
  readonly upstream?: UpstreamPolicy;
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
}

/** The port an injected value goes to when a binding's host pattern names none. */
export const DEFAULT_INJECT_PORT = 443;
/** The port of a binding's `http` pattern that names none. */
export const DEFAULT_HTTP_PORT = 80;

export const DEFAULT_PLACEMENT: Placement = Object.freeze({
  headers: Object.freeze(['authorization']), query: Object.freeze([]), cookies: Object.freeze([]), path: false, body: false,
});

// Headers that frame or route the request, or belong to the proxy hop: a credential has no place there.
const UNPLACEABLE_HEADERS = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'proxy-connection', 'keep-alive', 'proxy-authorization',
  'proxy-authenticate', 'te', 'trailer', 'upgrade', 'cookie', 'expect', 'content-encoding', 'content-type',
]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const BINDING_KEYS = new Set(['ref', 'hosts', 'delivery', 'headers', 'query', 'cookies', 'path', 'body', 'methods', 'paths', 'http', 'responses']);

export interface Verdict {
  readonly allowed: boolean;
  /** The rule that decided: `allow:PATTERN`, `deny:PATTERN`, `mode:none`, `mode:open`, `not-allowlisted`, `bound:REF`. */
  readonly rule: string;
}

const MODES: readonly NetworkMode[] = ['open', 'none', 'allowlist'];
const REF = /^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;

export const OPEN_NETWORK: NetworkPolicy = Object.freeze({ mode: 'open', allow: Object.freeze([]), deny: Object.freeze([]) });

export const NO_NETWORK: NetworkPolicy = Object.freeze({ mode: 'none', allow: Object.freeze([]), deny: Object.freeze([]) });

export function normalizeNetworkPolicy(input: unknown): NetworkPolicy {
  if (input === undefined) return OPEN_NETWORK;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ExecgateError('EXECGATE_ERR_POLICY_INVALID', `Expected \`sandbox.network\` to be an object with \`mode\`, \`allow\`, \`deny\`, got ${describeValue(input)}.`);
  }
  const raw = input as Record<string, unknown>;
  const mode = raw.mode ?? 'open';
  if (!MODES.includes(mode as NetworkMode)) {
    throw new ExecgateError('EXECGATE_ERR_POLICY_INVALID', `Expected \`sandbox.network.mode\` to be one of ${MODES.join(', ')}, got ${describeValue(mode)}.`);
  }
  const upstream = raw.upstream === undefined ? undefined : normalizeUpstream(raw.upstream);
  return Object.freeze({
    mode: mode as NetworkMode,
    allow: parseHostPatterns(raw.allow, 'sandbox.network.allow'),
    deny: parseHostPatterns(raw.deny, 'sandbox.network.deny'),
    ...(upstream ? { upstream } : {}),
  });
}

function normalizeUpstream(input: unknown): UpstreamPolicy {
  const where = 'sandbox.network.upstream';
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw upstreamInvalid(`Expected \`${where}\` to be an object with \`proxy\`, \`noProxy\`, \`ca\`, got ${describeValue(input)}.`);
  }
  const { proxy, noProxy, ca = [] } = input as Record<string, unknown>;
  if (proxy !== undefined && (typeof proxy !== 'string' || (proxy !== 'direct' && !isProxyUrl(proxy)))) {
    throw upstreamInvalid(`Expected \`${where}.proxy\` to be \`direct\` or an \`http://host:port\` URL of a parent proxy, got ${describeValue(proxy)}.`);
  }
  if (noProxy !== undefined && (!Array.isArray(noProxy) || noProxy.some((entry) => typeof entry !== 'string' || entry.trim() === ''))) {
    throw upstreamInvalid(`Expected \`${where}.noProxy\` to be a list of host names (NO_PROXY entries), got ${describeValue(noProxy)}.`);
  }
  if (!Array.isArray(ca) || ca.some((file) => typeof file !== 'string' || !file.startsWith('/'))) {
    throw upstreamInvalid(`Expected \`${where}.ca\` to be a list of absolute paths of PEM files, got ${describeValue(ca)}.`);
  }
  return Object.freeze({
    ...(proxy !== undefined ? { proxy: proxy } : {}),
    ...(noProxy !== undefined ? { noProxy: Object.freeze([...(noProxy as string[])]) } : {}),
    ca: Object.freeze([...(ca as string[])]),
  });
}

/** An `http://` parent proxy URL: host and port, optional credentials, nothing else. */
export function isProxyUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' && url.hostname !== '' && (url.pathname === '/' || url.pathname === '') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

export function normalizeSecretBindings(input: unknown): readonly SecretBinding[] {
  if (input === undefined) return Object.freeze([]);
  if (!Array.isArray(input)) throw bindInvalid(`Expected \`secrets.bind\` to be a list, got ${describeValue(input)}.`);
  const seen = new Set<string>();
  return Object.freeze(input.map((item, index) => {
    const where = `secrets.bind[${index}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw bindInvalid(`Expected \`${where}\` to be an object with \`ref\` and \`hosts\`, got ${describeValue(item)}.`);
    }
    const fields = item as Record<string, unknown>;
    const { ref, hosts, delivery = 'env' } = fields;
    if (typeof ref !== 'string' || !REF.test(ref)) {
      throw bindInvalid(`Expected \`${where}.ref\` to be a reference such as \`secret:github-token\`, got ${describeValue(ref)}.`);
    }
    const unknown = Object.keys(fields).find((key) => !BINDING_KEYS.has(key));
    if (unknown !== undefined) throw bindInvalid(`\`${where}\` (\`${ref}\`) has an unknown key \`${unknown}\`; a binding has ${[...BINDING_KEYS].map((k) => `\`${k}\``).join(', ')}.`);
    if (seen.has(ref)) throw bindInvalid(`\`${ref}\` is bound twice in \`secrets.bind\`; list all its hosts in one entry.`);
    seen.add(ref);
    if (!Array.isArray(hosts) || hosts.length === 0) {
      throw bindInvalid(`\`${where}\` (\`${ref}\`) lists no hosts: a bound secret must name at least one host it is for, such as \`hosts: [api.github.com]\`.`);
    }
    if (delivery !== 'env' && delivery !== 'inject') {
      throw bindInvalid(`Expected \`${where}.delivery\` to be \`env\` or \`inject\`, got ${describeValue(delivery)}.`);
    }
    const injectOnly = ['headers', 'query', 'cookies', 'path', 'body', 'methods', 'paths', 'http', 'responses'].find((key) => fields[key] !== undefined);
    if (delivery === 'env' && injectOnly !== undefined) {
      throw bindInvalid(`\`${where}.${injectOnly}\` (\`${ref}\`) applies to \`delivery: inject\` only: with \`env\` the command holds the value and places it itself.`);
    }
    const parsedHosts = parseHostPatterns(hosts, `${where}.hosts`);
    return Object.freeze({
      ref,
      hosts: parsedHosts,
      delivery,
      place: normalizePlacement(fields, where, ref),
      ...normalizeScope(fields, where, ref),
      http: normalizeHttp(fields.http, parsedHosts, where, ref),
      responses: normalizeResponses(fields.responses, where),
    });
  }));
}

function normalizePlacement(fields: Record<string, unknown>, where: string, ref: string): Placement {
  const names = (key: 'headers' | 'query' | 'cookies', fallback: readonly string[]): readonly string[] => {
    const value = fields[key];
    if (value === undefined) return fallback;
    if (!Array.isArray(value) || value.some((name) => typeof name !== 'string' || !TOKEN.test(name))) {
      throw bindInvalid(`Expected \`${where}.${key}\` (\`${ref}\`) to be a list of ${key === 'headers' ? 'header' : key === 'query' ? 'query parameter' : 'cookie'} names, got ${describeValue(value)}.`);
    }
    return Object.freeze((value as string[]).map((name) => (key === 'headers' ? name.toLowerCase() : name)));
  };
  const flag = (key: 'path' | 'body'): boolean => {
    const value = fields[key] ?? false;
    if (typeof value !== 'boolean') throw bindInvalid(`Expected \`${where}.${key}\` (\`${ref}\`) to be true or false, got ${describeValue(value)}.`);
    return value;
  };
  const headers = names('headers', DEFAULT_PLACEMENT.headers);
  const framing = headers.find((name) => UNPLACEABLE_HEADERS.has(name));
  if (framing !== undefined) {
    const hint = framing === 'cookie' ? ' (name the cookie in `cookies` instead)' : '';
    throw bindInvalid(`\`${where}.headers\` (\`${ref}\`) names \`${framing}\`, which frames or routes the request; a credential cannot be placed there${hint}.`);
  }
  return Object.freeze({ headers, query: names('query', []), cookies: names('cookies', []), path: flag('path'), body: flag('body') });
}

function normalizeScope(fields: Record<string, unknown>, where: string, ref: string): { methods?: readonly string[]; paths?: readonly string[] } {
  const out: { methods?: readonly string[]; paths?: readonly string[] } = {};
  if (fields.methods !== undefined) {
    const methods = fields.methods;
    if (!Array.isArray(methods) || methods.length === 0 || methods.some((m) => typeof m !== 'string' || !TOKEN.test(m))) {
      throw bindInvalid(`Expected \`${where}.methods\` (\`${ref}\`) to be a non-empty list of request methods such as \`GET\`, got ${describeValue(methods)}.`);
    }
    out.methods = Object.freeze((methods as string[]).map((m) => m.toUpperCase()));
  }
  if (fields.paths !== undefined) {
    const paths = fields.paths;
    if (!Array.isArray(paths) || paths.length === 0 || paths.some((p) => typeof p !== 'string' || !p.startsWith('/') || /[\s?#%\\]/.test(p))) {
      throw bindInvalid(`Expected \`${where}.paths\` (\`${ref}\`) to be a non-empty list of paths starting with \`/\` (a prefix, or a glob with \`*\` and \`**\`; no query, no percent-escapes), got ${describeValue(paths)}.`);
    }
    out.paths = Object.freeze([...(paths as string[])]);
  }
  return out;
}

function normalizeHttp(input: unknown, hosts: readonly HostPattern[], where: string, ref: string): readonly HostPattern[] {
  if (input === undefined) return Object.freeze([]);
  if (!Array.isArray(input)) throw bindInvalid(`Expected \`${where}.http\` (\`${ref}\`) to be a list of hosts that may receive the value over plain HTTP, got ${describeValue(input)}.`);
  return Object.freeze(input.map((item, index) => {
    const pattern = parseHostPattern(item, `${where}.http[${index}]`);
    // By name: plain HTTP is for a named test or intranet service, never for a family of hosts.
    if (pattern.kind !== 'name' && pattern.kind !== 'ip') {
      throw bindInvalid(`\`${where}.http[${index}]\` (\`${ref}\`) is \`${pattern.text}\`; plain HTTP is allowed only to a host named exactly, not to a wildcard.`);
    }
    const withPort = Object.freeze({ ...pattern, port: pattern.port ?? DEFAULT_HTTP_PORT });
    if (!hosts.some((host) => matchesHost(host, withPort.host, withPort.port) || matchesHost(host, withPort.host, DEFAULT_INJECT_PORT))) {
      throw bindInvalid(`\`${where}.http[${index}]\` (\`${ref}\`) is \`${pattern.text}\`, which is not one of the binding's \`hosts\`.`);
    }
    return withPort;
  }));
}

function normalizeResponses(input: unknown, where: string): 'decode' | 'identity' {
  if (input === undefined) return 'decode';
  if (input === 'decode' || input === 'identity') return input;
  throw bindInvalid(`Expected \`${where}.responses\` to be \`decode\` or \`identity\`, got ${describeValue(input)}.`);
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

function bindInvalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_BIND_INVALID', message);
}

function upstreamInvalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID', message);
}
