/*
 * One reading of a request the proxy forwards. A request names its destination up to four times
 * (the CONNECT authority it arrived through, the TLS SNI, the request target, the `Host` header),
 * and a server, a CDN and the proxy may each believe a different one; the proxy decides by the
 * first and forwards the rest as sent. So all of them must name the same host and port, read by
 * the one host parser (authority.ts), or the request is refused: an absolute-form target naming
 * another host, a second `Host` header, a `Host` without the port a non-default port needs, an SNI
 * for another name. The body's framing must be just as unambiguous: Node's parser already refuses
 * `Content-Length` with `Transfer-Encoding`, duplicate lengths and malformed codings (a client
 * error, answered with its reason); what it lets through and a server behind us might read
 * differently (a transfer coding other than `chunked`, chunked HTTP/1.0) is refused here.
 */
import type { IncomingMessage } from 'node:http';
import { canonicalHost, formatAuthority, parseAuthority } from './authority';

export interface Destination {
  readonly host: string;
  readonly port: number;
  /** Inside a terminated tunnel (https), or a plain-HTTP proxy request. */
  readonly tls: boolean;
  /** The SNI the client sent on the terminated tunnel, if any. */
  readonly sni?: string;
}

export interface Refusal {
  readonly rule: string;
  /** Said to the client and in the run's result: what was wrong, never a value or a sentinel. */
  readonly reason: string;
  readonly ref?: string;
}

export interface Reading {
  /** The origin-form target to forward (`/path?query`). */
  readonly target: string;
}

export function isRefusal(value: object): value is Refusal {
  return 'rule' in value;
}

export function readRequest(req: IncomingMessage, to: Destination): Reading | Refusal {
  const where = formatAuthority(to.host, to.port);
  const scheme = to.tls ? 'https' : 'http';
  const defaultPort = to.tls ? 443 : 80;
  if (to.tls && to.sni !== undefined && to.sni !== '') {
    const sni = canonicalHost(to.sni);
    if (sni !== to.host) return { rule: 'sni-mismatch', reason: `the TLS server name \`${clip(to.sni)}\` is not ${to.host}, the host this tunnel was opened to` };
  }
  const hosts: string[] = [];
  let lengths = 0;
  let codings: string | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name === 'host') hosts.push(raw[i + 1]);
    else if (name === 'content-length') lengths += 1;
    else if (name === 'transfer-encoding') codings = codings === undefined ? raw[i + 1] : `${codings}, ${raw[i + 1]}`;
  }
  if (hosts.length > 1) return { rule: 'host-duplicate', reason: `the request has ${hosts.length} Host headers; exactly one is allowed` };
  if (hosts.length === 0 && req.httpVersion !== '1.0') return { rule: 'host-missing', reason: 'the request has no Host header' };
  if (hosts.length === 1) {
    const host = parseAuthority(hosts[0], defaultPort);
    if (!host || host.host !== to.host || host.port !== to.port) {
      return { rule: 'host-mismatch', reason: `the Host header \`${clip(hosts[0])}\` does not name ${where}${to.tls ? ', the host this tunnel was opened to' : ', the host of the request URL'}` };
    }
  }
  if (lengths > 1) return { rule: 'framing', reason: 'the request has more than one Content-Length header' };
  if (codings !== undefined) {
    if (lengths > 0) return { rule: 'framing', reason: 'the request has both Content-Length and Transfer-Encoding' };
    if (codings.trim().toLowerCase() !== 'chunked') return { rule: 'framing', reason: `the request's Transfer-Encoding is \`${clip(codings)}\`; only \`chunked\` is relayed` };
    if (req.httpVersion === '1.0') return { rule: 'framing', reason: 'an HTTP/1.0 request has no Transfer-Encoding' };
  }
  const url = req.url ?? '';
  if (url.startsWith('/')) {
    // Origin form: the tunnel (or, for plain HTTP, nothing) says where; a plain proxy request must be absolute.
    if (!to.tls) return { rule: 'bad-target', reason: 'a plain-HTTP proxy request must name an absolute http:// URL' };
    return { target: url };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { rule: 'bad-target', reason: `the request target \`${clip(url)}\` is neither a path nor an absolute URL` };
  }
  if (parsed.protocol !== `${scheme}:`) {
    return { rule: 'target-mismatch', reason: `the request target is a ${parsed.protocol.replace(':', '')} URL; ${to.tls ? 'inside a TLS tunnel only https' : 'the plain proxy takes only http'}` };
  }
  if (parsed.username !== '' || parsed.password !== '') return { rule: 'bad-target', reason: 'the request target carries user info; send credentials in a header' };
  const target = canonicalHost(parsed.hostname);
  const port = parsed.port === '' ? defaultPort : Number(parsed.port);
  if (target !== to.host || port !== to.port) {
    return { rule: 'target-mismatch', reason: `the request target names ${clip(parsed.host)}, not ${where}` };
  }
  return { target: `${parsed.pathname}${parsed.search}` };
}

/** Text from a request, cut short and made printable for a reason (a header or target can be anything). */
export function clip(text: string): string {
   
  const printable = text.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 80 ? `${printable.slice(0, 77)}...` : printable;
}
