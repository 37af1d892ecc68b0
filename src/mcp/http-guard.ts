/*
 * The checks in front of the Streamable HTTP transport. Whoever holds the bearer token can run
 * commands as this user, so:
 *   - the token is compared in constant time (both sides hashed first, so neither the length nor
 *     a common prefix leaks through timing);
 *   - the Host header must name this server (127.0.0.1:PORT, localhost:PORT, [::1]:PORT, or an
 *     address the operator added), and an Origin header, when present, must too. A web page the
 *     user visits cannot reach the server through a DNS name rebound to 127.0.0.1: its requests
 *     carry the attacker's host name (and origin). Browsers also cannot read the token.
 *   - the server listens on loopback unless the operator asks for remote access explicitly.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { ExecgateError } from '../errors';

/** Shortest token accepted from EXECGATE_MCP_TOKEN. */
export const MIN_TOKEN_LENGTH = 16;

const TOKEN_CHARACTERS = /^[\x21-\x7e]+$/;

/**
 * A random bearer token for {@link serveHttp} (URL-safe, 256 bits).
 */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Throws EXECGATE_ERR_MCP_TOKEN_INVALID for a token too short or not sendable in a header. */
export function validateToken(token: string): string {
  if (token.length < MIN_TOKEN_LENGTH || !TOKEN_CHARACTERS.test(token)) {
    throw new ExecgateError(
      'EXECGATE_ERR_MCP_TOKEN_INVALID',
      `EXECGATE_MCP_TOKEN must be at least ${MIN_TOKEN_LENGTH} printable ASCII characters without spaces (got ${token.length} characters). Unset it to have a random token generated.`,
    );
  }
  return token;
}

/** Whether an `Authorization` header carries exactly `Bearer <token>`. */
export function isAuthorized(header: string | undefined, token: string): boolean {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  const given = match ? match[1] : '';
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  // Compare digests of equal length in constant time; the `match` check costs the same either way.
  return timingSafeEqual(a, b) && match !== null;
}

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

/** Refuses a non-loopback listen address unless remote access was asked for. */
export function validateListenHost(host: string, allowRemote: boolean): void {
  if (isLoopbackHost(host) || allowRemote) return;
  throw new ExecgateError(
    'EXECGATE_ERR_MCP_REMOTE_REFUSED',
    `Refusing to listen on \`${host}\`, which is not a loopback address: anyone who reaches it with the token can run commands as this user. ` +
      'Pass --allow-remote to do it anyway (and put TLS in front), or use the default 127.0.0.1.',
    { host },
  );
}

/** The Host header values this server answers to. */
export function getAllowedHosts(listenHost: string, port: number, extra: readonly string[] = []): Set<string> {
  const names = ['127.0.0.1', 'localhost', '[::1]'];
  const bare = listenHost.replace(/^\[|\]$/g, '');
  const wildcard = bare === '0.0.0.0' || bare === '::';
  if (!wildcard && !isLoopbackHost(bare)) names.push(isIP(bare) === 6 ? `[${bare}]` : bare);
  const allowed = new Set<string>();
  for (const name of names) {
    allowed.add(`${name.toLowerCase()}:${port}`);
    if (port === 80) allowed.add(name.toLowerCase());
  }
  for (const entry of extra) {
    const value = entry.trim().toLowerCase();
    if (value === '') continue;
    allowed.add(/:\d+$/.test(value) && !/^[^[]*:.*:/.test(value) ? value : `${value}:${port}`);
  }
  return allowed;
}

/** Why a request's Host / Origin headers are refused, or undefined when they are fine. */
export function checkHostAndOrigin(host: string | undefined, origin: string | undefined, allowed: ReadonlySet<string>): string | undefined {
  if (host === undefined || !allowed.has(host.toLowerCase())) {
    return `the Host header ${host === undefined ? 'is missing' : `\`${host.slice(0, 100)}\` is not one this server answers to`}`;
  }
  if (origin === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return `the Origin header \`${origin.slice(0, 100)}\` is not a URL`;
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !allowed.has(hostWithPort(parsed))) {
    return `the Origin \`${origin.slice(0, 100)}\` is not this server`;
  }
  return undefined;
}

function hostWithPort(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return `${url.hostname.toLowerCase()}:${port}`;
}
