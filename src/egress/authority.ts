/*
 * The one reading of a host name. Every place the proxy learns where a connection goes (a CONNECT
 * authority, a SOCKS5 domain, an absolute request target, a `Host` header, the TLS SNI) and every
 * host pattern in a policy goes through `canonicalHost`, which is the WHATWG URL host parser as
 * Node's `URL` applies it: case folded, percent-decoded, IDNA-mapped, and the IPv4 spellings a
 * URL accepts (`0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`) turned into the dotted address they
 * are. Two readings of one host (a name here, an address there) are how `deny: [203.0.113.10]`
 * was walked around with `0xcb00710a`; with one parser there is nothing to walk around.
 *
 * Text a URL would read as something other than a host (user info, a path, a query, a port where
 * none belongs, whitespace, controls) is refused rather than trimmed: a request that names its
 * destination ambiguously is not sent anywhere.
 */
import { isIP } from 'node:net';

export interface Authority {
  /** Canonical host: lower-case name without trailing dot, dotted IPv4, or compressed IPv6 (no brackets). */
  readonly host: string;
  readonly port: number;
}

// Anything a URL parser would read as the end of the host or as user info, and every control.
const NOT_HOST = /[\s@/\\?#\x00-\x1f\x7f]/;

/** The canonical host of `text` (a bare host or a bracketed IPv6 literal), or undefined when it is not one. */
export function canonicalHost(text: string): string | undefined {
  if (typeof text !== 'string' || text === '' || text.length > 1024 || NOT_HOST.test(text)) return undefined;
  let input = text;
  if (input.startsWith('[')) {
    if (!input.endsWith(']')) return undefined;
  } else if (input.includes(':')) {
    // A bare IPv6 literal (SOCKS5 address type 4 is spelt this way); any other colon is a port.
    if (isIP(input) !== 6) return undefined;
    input = `[${input}]`;
  }
  let hostname: string;
  try {
    hostname = new URL(`http://${input}/`).hostname;
  } catch {
    return undefined;
  }
  if (hostname.startsWith('[')) return unmapIpv4(hostname.slice(1, -1));
  if (hostname.endsWith('.')) hostname = hostname.slice(0, -1);
  if (hostname === '' || hostname.split('.').some((label) => label === '')) return undefined;
  return hostname;
}

/**
 * `host:port` (a CONNECT target, a `Host` header), or `host` alone when `defaultPort` is given.
 * The port is decimal digits only, 1 to 65535.
 */
export function parseAuthority(text: string, defaultPort?: number): Authority | undefined {
  if (typeof text !== 'string') return undefined;
  const trimmed = text.trim();
  let hostPart = trimmed;
  let portText: string | undefined;
  if (trimmed.startsWith('[')) {
    const end = trimmed.indexOf(']');
    if (end === -1) return undefined;
    hostPart = trimmed.slice(0, end + 1);
    const rest = trimmed.slice(end + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined;
      portText = rest.slice(1);
    }
  } else {
    const colon = trimmed.lastIndexOf(':');
    if (colon !== -1) {
      hostPart = trimmed.slice(0, colon);
      portText = trimmed.slice(colon + 1);
    }
  }
  const host = canonicalHost(hostPart);
  if (host === undefined) return undefined;
  if (portText === undefined) return defaultPort === undefined ? undefined : { host, port: defaultPort };
  if (!/^[0-9]{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  return port >= 1 && port <= 65535 ? { host, port } : undefined;
}

/** `host:port` as a client would write it (IPv6 in brackets). */
export function formatAuthority(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/*
 * An IPv4-mapped IPv6 address is the IPv4 address it maps, whichever way it is spelt
 * (`::ffff:127.0.0.1`, or `::ffff:7f00:1` as the URL parser prints it): checked and matched as that.
 */
export function unmapIpv4(address: string): string {
  if (isIP(address) !== 6) return address;
  // The URL parser prints the one compressed, lower-case spelling, the embedded IPv4 part as hex.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!hex) return canonical;
  const high = Number.parseInt(hex[1], 16);
  const low = Number.parseInt(hex[2], 16);
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}
