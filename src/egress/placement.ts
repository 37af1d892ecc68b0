/*
 * Where an injected value may go. The proxy swaps a run's sentinel for the real value only where
 * the secret's binding says a credential belongs (placement: a header's whole credential, `Basic`
 * credentials, a named query parameter or cookie; the path or the body only when the binding says
 * so), only on a request to one of its hosts over TLS on the bound port (plain HTTP only to a host
 * the binding names in `http`), with the binding's methods and paths, and never on the request a
 * redirect sent to another scheme, host or port. Anything else that carries a sentinel is refused
 * whole, with the reason, and nothing of it is forwarded: a value swapped into a body is a value
 * the server stores and hands back to whoever asks (a gist, a file, a comment), and a sentinel
 * forwarded unswapped is a request that fails for a reason the agent cannot see.
 *
 * Sentinels are looked for with the masker (src/redact) in every encoding it knows (base64, hex,
 * percent- and JSON-escapes, ...), in the target, every header and, streamed and chunk-safe, the
 * body: a sentinel spelt differently is still a sentinel in a place no binding names.
 */
import { Redactor } from '../redact';
import { formatAuthority } from './authority';
import { matchesHost } from './hosts';
import type { BoundInjection as Injection } from './plan';
import type { Refusal } from './reading';
import { DEFAULT_INJECT_PORT, type SecretBinding } from './rules';

export interface PlacementRequest {
  readonly method: string;
  /** Origin-form target (`/path?query`). */
  readonly target: string;
  /** Header names and values as they will be forwarded (hop-by-hop ones already dropped). */
  readonly headers: readonly string[];
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
}

export interface Placed {
  readonly target: string;
  readonly headers: string[];
  /** Refs whose value was put into the target or a header. */
  readonly injected: Set<string>;
  /** Injections whose binding allows the body: their sentinel is swapped there (inject.ts). */
  readonly bodyInjections: readonly Injection[];
}

/** The sentinels of a run, as the masker knows them: what finds them in any spelling it knows. */
export function createSentinelDetector(injections: readonly Injection[], minLength: number): Redactor | undefined {
  if (injections.length === 0) return undefined;
  const detector = new Redactor({ minLength });
  for (const injection of injections) {
    detector.add(injection.sentinel, injection.ref);
    // Spellings no output shows but a request can carry to get around the check: every byte
    // percent-encoded, every character a JSON \u escape (either case of hex).
    const bytes = [...Buffer.from(injection.sentinel, 'utf8')];
    const units = [...injection.sentinel].map((ch) => ch.charCodeAt(0));
    for (const upper of [true, false]) {
      const hex = (n: number, width: number): string => (upper ? n.toString(16).toUpperCase() : n.toString(16)).padStart(width, '0');
      detector.add(bytes.map((b) => `%${hex(b, 2)}`).join(''), injection.ref, { encodings: false });
      detector.add(units.map((u) => `\\u${hex(u, 4)}`).join(''), injection.ref, { encodings: false });
    }
  }
  return detector;
}

/** The refs whose sentinel `text` holds (in any encoding the detector knows). */
export function findSentinels(detector: Redactor | undefined, text: string): string[] {
  if (!detector || text === '') return [];
  const { text: redacted, count } = detector.redactString(text);
  if (count === 0) return [];
  return [...new Set([...redacted.matchAll(/\[REDACTED:([^\]]+)\]/g)].map((m) => m[1]))];
}

/**
 * Put each eligible injection's value where its binding allows, then look for any sentinel left.
 * `redirected`: whether this request's URL is where a redirect from an injected request pointed,
 * across schemes, hosts or ports.
 */
export function placeInjections(
  request: PlacementRequest,
  injections: readonly Injection[],
  detector: Redactor | undefined,
  redirected: boolean,
): Placed | Refusal {
  const eligible = injections.filter((injection) => getIneligibility(injection, request, redirected) === undefined);
  const injected = new Set<string>();
  const headers: string[] = [];
  for (let i = 0; i + 1 < request.headers.length; i += 2) {
    const name = request.headers[i];
    const lower = name.toLowerCase();
    let value = request.headers[i + 1];
    for (const injection of eligible) {
      const swapped = lower === 'cookie'
        ? swapCookies(value, injection)
        : injection.binding.place.headers.includes(lower) ? swapCredential(value, injection.sentinel, injection.value) : undefined;
      if (swapped !== undefined) {
        value = swapped;
        injected.add(injection.ref);
      }
    }
    headers.push(name, value);
  }
  let target = request.target;
  for (const injection of eligible) {
    const swapped = swapTarget(target, injection);
    if (swapped !== undefined) {
      target = swapped;
      injected.add(injection.ref);
    }
  }
  // Whatever still holds a sentinel, in any spelling, is in a place no eligible binding names.
  const found = findIn(detector, target, headers);
  if (found) return refuse(found.ref, found.where, injections, request, redirected, found.header);
  return { target, headers, injected, bodyInjections: eligible.filter((injection) => injection.binding.place.body) };
}

/** The refusal for a sentinel of `ref` found in the body (where === 'body'), or elsewhere. */
export function refuse(ref: string, where: string, injections: readonly Injection[], request: PlacementRequest, redirected: boolean, header?: string): Refusal {
  const injection = injections.find((i) => i.ref === ref);
  const why = injection ? getIneligibility(injection, request, redirected) : undefined;
  if (why) return { ...why, ref };
  if (injection && header !== undefined && injection.binding.place.headers.includes(header)) {
    return {
      rule: `sentinel-misplaced:${ref}`,
      reason: `<<${ref}>> is in ${where} but not as its whole credential (bare, after Bearer or token, or as the Basic user or password)`,
      ref,
    };
  }
  const named = injection ? describePlacement(injection.binding) : 'nowhere';
  return {
    rule: `sentinel-misplaced:${ref}`,
    reason: `<<${ref}>> is in ${where}; its binding puts the value only in ${named}`,
    ref,
  };
}

/** Why `injection` may not be put into this request at all, or undefined when it may. */
function getIneligibility(injection: Injection, request: PlacementRequest, redirected: boolean): Refusal | undefined {
  const { binding, ref } = injection;
  const at = formatAuthority(request.host, request.port);
  const hostBound = binding.hosts.some((pattern) => matchesHost(pattern, request.host, request.port));
  if (!hostBound) {
    return { rule: `sentinel-unbound:${ref}`, reason: `<<${ref}>> is bound to ${binding.hosts.map((h) => h.text).join(', ')}, not ${at}` };
  }
  if (!request.tls) {
    if (!binding.http.some((pattern) => matchesHost(pattern, request.host, request.port))) {
      return { rule: `inject-needs-tls:${ref}`, reason: `<<${ref}>> is injected over HTTPS only; this request to ${at} is plain HTTP` };
    }
  } else if (!binding.hosts.some((pattern) => matchesHost(pattern, request.host, request.port) && (pattern.port ?? DEFAULT_INJECT_PORT) === request.port)) {
    return { rule: `inject-port:${ref}`, reason: `<<${ref}>> is injected on port ${injectPorts(binding)} of its hosts only, not ${request.port}` };
  }
  if (redirected) {
    return { rule: `inject-redirect:${ref}`, reason: `<<${ref}>> is not sent on to ${at}: a redirect from a request it was injected into pointed here across schemes, hosts or ports` };
  }
  if (binding.methods && !binding.methods.includes(request.method.toUpperCase())) {
    return { rule: `inject-method:${ref}`, reason: `<<${ref}>> is injected on ${binding.methods.join(', ')} requests only, not ${request.method}` };
  }
  if (binding.paths) {
    const path = getPathname(request.target);
    if (path === undefined) {
      return { rule: `inject-path:${ref}`, reason: `<<${ref}>> is injected only on paths its binding lists, and this path is ambiguous (dot segments or encoded slashes)` };
    }
    if (!binding.paths.some((pattern) => matchesPath(pattern, path))) {
      return { rule: `inject-path:${ref}`, reason: `<<${ref}>> is injected on paths ${binding.paths.join(', ')} only` };
    }
  }
  return undefined;
}

function injectPorts(binding: SecretBinding): string {
  return [...new Set(binding.hosts.map((h) => h.port ?? DEFAULT_INJECT_PORT))].join(', ');
}

/** What a binding's placement allows, as a reason says it. */
export function describePlacement(binding: SecretBinding): string {
  const { place } = binding;
  const parts = [
    ...place.headers.map((h) => `the ${displayHeader(h)} header`),
    ...place.query.map((q) => `the query parameter \`${q}\``),
    ...place.cookies.map((c) => `the cookie \`${c}\``),
    ...(place.path ? ['the path'] : []),
    ...(place.body ? ['the body'] : []),
  ];
  return parts.length > 0 ? parts.join(', ') : 'no place (the binding names none)';
}

function displayHeader(lower: string): string {
  return lower.replace(/(^|-)([a-z])/g, (_m, dash: string, ch: string) => `${dash}${ch.toUpperCase()}`);
}

/*
 * A header whose whole credential is the sentinel: bare, after `Bearer` or `token` (the usual
 * schemes), or as the user or the password of `Basic` credentials (what git and curl send for
 * `https://user:TOKEN@host`). A sentinel inside other text is not a credential and stays, to be
 * refused.
 */
export function swapCredential(value: string, sentinel: string, real: string): string | undefined {
  const scheme = /^(\s*)((?:bearer|token)\s+)?(\S+)(\s*)$/i.exec(value);
  if (scheme && scheme[3] === sentinel) return `${scheme[1]}${scheme[2] ?? ''}${real}${scheme[4]}`;
  const basic = /^(\s*basic\s+)([A-Za-z0-9+/=]+)(\s*)$/i.exec(value);
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[2], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if (user !== sentinel && password !== sentinel) return undefined;
  const swapped = `${user === sentinel ? real : user}:${password === sentinel ? real : password}`;
  return `${basic[1]}${Buffer.from(swapped, 'utf8').toString('base64')}${basic[3]}`;
}

function swapCookies(value: string, injection: Injection): string | undefined {
  const names = injection.binding.place.cookies;
  if (names.length === 0) return undefined;
  let changed = false;
  const parts = value.split(';').map((part) => {
    const eq = part.indexOf('=');
    if (eq === -1) return part;
    const name = part.slice(0, eq).trim();
    const raw = part.slice(eq + 1).trim();
    const quoted = raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"');
    if (!names.includes(name) || (quoted ? raw.slice(1, -1) : raw) !== injection.sentinel) return part;
    changed = true;
    return `${part.slice(0, eq + 1)}${quoted ? `"${injection.value}"` : injection.value}`;
  });
  return changed ? parts.join(';') : undefined;
}

/** Named query parameters whose whole (decoded) value is the sentinel, and the path when allowed. */
function swapTarget(target: string, injection: Injection): string | undefined {
  const { place } = injection.binding;
  const q = target.indexOf('?');
  let path = q === -1 ? target : target.slice(0, q);
  let query = q === -1 ? undefined : target.slice(q + 1);
  let changed = false;
  if (place.path && path.includes(injection.sentinel)) {
    path = path.split(injection.sentinel).join(encodeURIComponent(injection.value));
    changed = true;
  }
  if (query !== undefined && place.query.length > 0) {
    query = query.split('&').map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      const name = decodeComponent(pair.slice(0, eq));
      if (name === undefined || !place.query.includes(name) || decodeComponent(pair.slice(eq + 1)) !== injection.sentinel) return pair;
      changed = true;
      return `${pair.slice(0, eq + 1)}${encodeURIComponent(injection.value)}`;
    }).join('&');
  }
  return changed ? (query === undefined ? path : `${path}?${query}`) : undefined;
}

function decodeComponent(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

function findIn(detector: Redactor | undefined, target: string, headers: readonly string[]): { ref: string; where: string; header?: string } | undefined {
  if (!detector) return undefined;
  const q = target.indexOf('?');
  const [path, query] = q === -1 ? [target, ''] : [target.slice(0, q), target.slice(q + 1)];
  const inPath = findSentinels(detector, path)[0];
  if (inPath) return { ref: inPath, where: 'the path' };
  const inQuery = findSentinels(detector, query)[0];
  if (inQuery) return { ref: inQuery, where: 'the query' };
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i];
    const ref = findSentinels(detector, name)[0] ?? findSentinels(detector, headers[i + 1])[0];
    const lower = name.toLowerCase();
    if (ref) return { ref, where: lower === 'cookie' ? 'a cookie' : `the ${displayHeader(lower)} header`, header: lower };
  }
  return undefined;
}

/**
 * The request's path as a server will read it, or undefined when that reading is ambiguous (dot
 * segments, encoded slashes, backslashes): a path rule must judge the path the server acts on.
 */
function getPathname(target: string): string | undefined {
  const raw = target.split('?')[0];
  if (/%2f|%5c|%2e|\\/i.test(raw)) return undefined;
  let normalized: string;
  try {
    normalized = new URL(raw, 'https://host.invalid').pathname;
  } catch {
    return undefined;
  }
  return normalized === raw ? normalized : undefined;
}

/*
 * A path rule: a prefix that ends at a segment boundary (`/repos` covers `/repos` and `/repos/x`,
 * not `/reposx`), or a glob where `*` is one segment's characters and `**` anything. Two wildcards
 * and nothing else (no braces, classes or negation): a policy should mean what it looks like.
 */
export function matchesPath(pattern: string, path: string): boolean {
  if (!pattern.includes('*')) {
    if (pattern.endsWith('/')) return path.startsWith(pattern);
    return path === pattern || path.startsWith(`${pattern}/`);
  }
  const source = pattern.split(/(\*\*|\*)/).map((part) => (part === '**' ? '.*' : part === '*' ? '[^/]*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${source}$`).test(path);
}
