/*
 * One HTTP request sent on: a plain-HTTP proxy request, or a request inside a tunnel terminated
 * with the gateway CA (connections.ts). It is read once (reading.ts: target, Host, SNI and tunnel
 * agree, framing unambiguous), its sentinels are put only where a binding allows (placement.ts) or
 * the request is refused, its body is swapped and scanned as it streams (inject.ts), and it leaves
 * directly or through the parent proxy (upstream.ts). The response from a host an injected secret
 * went to is cleaned by the masker (redact-response.ts), and a redirect from such a request to
 * another scheme, host or port is noted, so that the value is not sent on to where it points.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { canonicalHost, formatAuthority } from './authority';
import { matchesHost } from './hosts';
import { maskSignatureHeaders, prepareAws, SignatureMask } from './aws-forward';
import { BodyScan, canScanEncoding, getSwaps, ScanEncoded, SentinelInBody, SwapStream } from './inject';
import { placeInjections, refuse } from './placement';
import type { BoundInjection } from './plan';
import { HOP_BY_HOP, NO_DELAY, STREAM_HIGH_WATER_MARK, TLS_BUFFERS, type ProxyCore, type RunContext } from './proxy-core';
import type { EgressDecision } from './proxy-types';
import { clip, isRefusal, readRequest, type Refusal } from './reading';
import { formatRequestHead, passResponse, ReadBuffers, type ResponseCleaner } from './passthrough';
import { getReason } from './reasons';
import { canRedactEncoding, createBodyCleaner, getAcceptedEncodings, redactBody, redactHeaders, WrappedValue } from './redact-response';
import { PayloadMismatch } from './sigv4';
import { getParent, type ParentProxy } from './upstream';

const MAX_REDIRECTS = 256;

/** A refusal: recorded against the run and answered with its reason, or the response cut off once it has begun. */
export function deny(core: ProxyCore, context: RunContext, res: ServerResponse, decision: EgressDecision, status = 403): void {
  core.record(context, { ...decision, status });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const reason = getReason(decision);
  const text = `execgate egress proxy: refused ${decision.host ? formatAuthority(decision.host, decision.port) : 'the request'} (${reason}).\n`;
  res.writeHead(status, { 'content-type': 'text/plain', 'x-execgate-egress': `refused ${decision.rule.replace(/[^\x21-\x7e]/g, '?')}`, connection: 'close' });
  res.end(context.detector ? context.detector.redactString(text).text : text);
}

/** Send `req` on: a plain-HTTP proxy request, or (`tls`) one inside a terminated tunnel whose client sent `sni`. */
export async function forward(core: ProxyCore, context: RunContext, req: IncomingMessage, res: ServerResponse, asked: EgressDecision, tls: boolean, sni?: string): Promise<void> {
  let decision = asked;
  const method = req.method ?? 'GET';
  const refused = (refusal: Refusal): void => deny(core, context, res, { ...decision, allowed: false, method, rule: refusal.rule, reason: refusal.reason });
  const reading = readRequest(req, { host: decision.host, port: decision.port, tls, ...(sni !== undefined ? { sni } : {}) });
  if (isRefusal(reading)) return void refused(reading);
  const origin = `${tls ? 'https' : 'http'}://${formatAuthority(decision.host, decision.port)}`;
  const redirected = context.redirects.has(`${origin}${reading.target}`);
  const injections = context.injections;
  // A request signed with the run's AWS placeholder is checked and signed again first (aws-forward.ts).
  const aws = await prepareAws(injections, { method, target: reading.target, headers: stripHopByHop(req.rawHeaders), host: decision.host, port: decision.port, tls }, req);
  if (aws && isRefusal(aws)) return void refused(aws);
  if (aws) {
    const { resigned } = aws;
    decision = { ...decision, resigned: Object.freeze({ ref: resigned.ref, keyId: resigned.keyId, service: resigned.service, region: resigned.region }) };
  }
  const placementRequest = { method, target: aws?.target ?? reading.target, headers: aws?.headers ?? stripHopByHop(req.rawHeaders), host: decision.host, port: decision.port, tls };
  const placed = placeInjections(placementRequest, injections, context.detector, redirected);
  if (isRefusal(placed)) return void refused(placed);
  const headers = placed.headers;
  // An HTTP/1.0 request may name no host; the request sent on does, the one this tunnel or URL names.
  if (getHeader(headers, 'host') === undefined) headers.unshift('Host', formatOrigin(decision.host, decision.port, tls ? 443 : 80));
  const redact = context.redactor.size > 0;
  // What comes back must be readable to be cleaned: ask only for encodings the masker can read through.
  if (redact) setHeader(headers, 'accept-encoding', getAcceptedEncodings(getHeader(headers, 'accept-encoding'), wantsIdentity(injections, decision)));
  const encoding = String(req.headers['content-encoding'] ?? '').trim().toLowerCase();
  const encoded = encoding !== '' && encoding !== 'identity';
  if (context.detector && !canScanEncoding(encoding)) {
    return void refused({ rule: 'request-body-unreadable', reason: `the request body is encoded as \`${clip(encoding)}\`, which the proxy cannot read for sentinels` });
  }
  if (encoded && placed.bodyInjections.length > 0) {
    // A value cannot be put into compressed bytes; a sentinel found there is refused below.
  }
  const stages: Transform[] = [...(aws?.stages ?? [])];
  if (placed.bodyInjections.length > 0 && !encoded) stages.push(new SwapStream(getSwaps(placed.bodyInjections), { highWaterMark: STREAM_HIGH_WATER_MARK }));
  if (context.detector) stages.push(encoded ? new ScanEncoded(encoding, context.detector) : new BodyScan(context.detector, { highWaterMark: STREAM_HIGH_WATER_MARK }));
  const parent = decision.parent ? getParent(context.route, decision.host, decision.port, tls) : undefined;
  // Nothing to swap, scan or clean on the way back: the response passes through as bytes (passthrough.ts).
  if (!redact && !aws && stages.length === 0 && !hasBody(req) && passThrough(core, context, req, res, { ...decision, method }, tls, placed.target, headers, parent)) return;
  // A request without a body whose response is cleaned: read without Node's HTTP client too, the
  // head and body cleaned as below (a re-signed request's response stays with the client below).
  if (redact && !aws && !hasBody(req)) {
    const sent = [...placed.injected];
    const cleaner = createCleaner(core, context, res, { ...decision, method, injected: sent }, origin, reading.target, wantsIdentity(injections, decision));
    if (passThrough(core, context, req, res, { ...decision, method }, tls, placed.target, headers, parent, cleaner, sent)) return;
  }
  const upstream = request(core, context, decision, tls, method, placed.target, headers, parent);
  let answered = false;
  // Set once the request was refused on its body: the upstream's reset that follows is ours.
  let refusedBody = false;
  const injected = (): string[] => [...new Set([...(aws ? [aws.resigned.ref] : []), ...placed.injected, ...stages.flatMap((stage) => (stage instanceof SwapStream ? [...stage.used] : []))])];
  upstream.once('response', (response) => {
    answered = true;
    const base = { ...decision, method, status: response.statusCode, injected: injected() };
    if (injected().length > 0) noteRedirect(context, origin, reading.target, response.statusCode ?? 0, response.headers.location);
    const record = (): void => core.record(context, { ...base, injected: injected() });
    if (!redact) {
      res.writeHead(response.statusCode ?? 502, stripHopByHop(response.rawHeaders) as unknown as Record<string, string>);
      response.pipe(res);
      response.once('end', record);
      return;
    }
    const responseEncoding = response.headers['content-encoding'];
    if (!canRedactEncoding(responseEncoding) || (wantsIdentity(injections, decision) && !isIdentity(responseEncoding))) {
      response.destroy();
      deny(core, context, res, { ...base, allowed: false, rule: 'response-unreadable', reason: `the response is encoded as \`${clip(String(responseEncoding))}\`, which the proxy ${canRedactEncoding(responseEncoding) ? 'was told not to decode (responses: identity)' : 'cannot read'} to remove secrets` }, 502);
      return;
    }
    // A cleaned body may change length; a response to HEAD has none, and its length is the resource's.
    const drop = new Set(method === 'HEAD' ? HOP_BY_HOP : [...HOP_BY_HOP, 'content-length']);
    const cleaned = redactHeaders(response.rawHeaders, context.redactor, drop);
    // A re-signed request's response is cleaned of the signatures made for it too (an S3 error echoes the one it was given).
    res.writeHead(response.statusCode ?? 502, (aws ? maskSignatureHeaders(cleaned, aws.resigned.signatures) : cleaned) as unknown as Record<string, string>);
    const body = redactBody(response, responseEncoding, context.redactor, (error) => {
      res.destroy();
      if (error instanceof WrappedValue) {
        core.record(context, { ...base, allowed: false, rule: 'response-wrapped-value', reason: `the response holds <<${error.ref}>> split over lines, which cannot be masked where it stands; it was cut off` });
      }
    }, context.wrap);
    if (aws) body.pipe(new SignatureMask(aws.resigned.signatures)).pipe(res);
    else body.pipe(res);
    body.once('end', record);
  });
  // Every error, not only the first: a request that errs twice must not take the process down
  // (for a request with a body, the pipeline below listens too).
  let failed = false;
  upstream.on('error', (error) => {
    if (refusedBody || failed) return;
    failed = true;
    if (answered) return void res.destroy();
    deny(core, context, res, { ...decision, allowed: false, method, rule: `upstream-failed:${(error as NodeJS.ErrnoException).code ?? 'error'}` }, 502);
  });
  req.once('aborted', () => upstream.destroy());
  // The client went away before its response ended (a request whose body it had sent whole is
  // not 'aborted'): the upstream connection goes too, rather than wait paused on a body no one reads.
  res.once('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  if (!hasBody(req)) {
    // Nothing to read, swap or scan: the request is sent as it is. stream.pipeline cost some
    // 60 µs a request even so (its AbortController, and the DOMException it aborts with when
    // done): about half of what reading and placing had added to a plain forward of 1 KiB
    // (bench/egress.js CPU rows, --one-process).
    req.resume();
    upstream.end();
    return;
  }
  pipeline([aws?.source ?? req, ...stages, upstream] as unknown as [Readable, Transform], (error) => {
    if (!error) return;
    refusedBody = true;
    upstream.destroy();
    if (error instanceof SentinelInBody) {
      refused(refuse(error.ref, 'the body', injections, placementRequest, redirected));
    } else if (error instanceof PayloadMismatch) {
      refused({ rule: 'aws-sigv4-payload', reason: `${error.message}; it was cut off before its end` });
    } else if (!answered && !res.headersSent) {
      deny(core, context, res, { ...decision, allowed: false, method, rule: 'request-body-failed', reason: `the request body could not be read (${(error).code ?? error.message})` }, 400);
    }
  });
}

/** The upstream request: TLS to the host (through the parent's tunnel when there is one), or plain HTTP (absolute form to the parent). */
function request(core: ProxyCore, context: RunContext, decision: EgressDecision, tls: boolean, method: string, target: string, headers: string[], parent: ParentProxy | undefined): ClientRequest {
  const proxied = !tls && parent;
  return (tls ? httpsRequest : httpRequest)({
    method,
    ...(proxied ? { host: parent.host, port: parent.port } : {}),
    path: proxied ? absoluteTarget(decision, target) : target,
    headers: toHeaderObject(proxied ? withParentAuthorization(headers, parent) : headers), setHost: false, highWaterMark: STREAM_HIGH_WATER_MARK,
    createConnection: (_options: unknown, callback: (error: Error | null, socket?: Socket) => void) => {
      open(core, context, decision, tls, parent, callback);
      return undefined;
    },
  } as never);
}

/**
 * A request whose response is passed through as bytes (passthrough.ts): sent on a connection
 * opened as for Node's client. False (nothing done) when its head cannot be written as it
 * stands; Node's client then refuses it as before.
 */
function passThrough(core: ProxyCore, context: RunContext, req: IncomingMessage, res: ServerResponse, decision: EgressDecision, tls: boolean, target: string, headers: string[], parent: ParentProxy | undefined, cleaner?: ResponseCleaner, injected: readonly string[] = []): boolean {
  const proxied = !tls && parent;
  const method = decision.method ?? 'GET';
  const head = formatRequestHead(method, proxied ? absoluteTarget(decision, target) : target, proxied ? withParentAuthorization(headers, parent) : headers);
  if (!head) return false;
  let upstream: Socket | undefined;
  let gone = false;
  const fail = (error: Error, answered: boolean): void => {
    if (answered) return void res.destroy();
    deny(core, context, res, { ...decision, allowed: false, rule: `upstream-failed:${(error as NodeJS.ErrnoException).code ?? 'error'}` }, 502);
  };
  req.once('aborted', () => {
    gone = true;
    upstream?.destroy();
  });
  req.resume();
  let opened = false;
  // A plain TCP connection reads into buffers used again (a TLS socket reads into its own); not
  // for a cleaned body, whose stages hold and pass on views of what was read after the read's
  // callback has returned (a buffer used again would change bytes the masker already decided).
  const buffers = tls || cleaner ? undefined : new ReadBuffers();
  open(core, context, decision, tls, parent, (error, socket) => {
    // Once: a socket that errs after it opened is passResponse's to handle.
    if (opened) return;
    opened = true;
    if (error || !socket) return void fail(error ?? new Error('no connection'), false);
    upstream = socket;
    if (gone) return void socket.destroy();
    let status: number | undefined;
    passResponse(socket, head, method, res, {
      onResponse: (code) => { status = code; },
      onEnd: () => core.record(context, { ...decision, status, injected: [...injected] }),
      onError: fail,
    }, buffers, cleaner);
  }, buffers);
  return true;
}

/*
 * How the response to an injected request without a body is cleaned when it is read without
 * Node's client (passthrough.ts): what the 'response' handler in forward() does, on the parsed
 * head. `base` is the decision as recorded (method and the values injected in it).
 */
function createCleaner(core: ProxyCore, context: RunContext, res: ServerResponse, base: EgressDecision, origin: string, target: string, identityOnly: boolean): ResponseCleaner {
  let encoding: string | undefined;
  let status = 0;
  return {
    head: (code, fields) => {
      status = code;
      if ((base.injected?.length ?? 0) > 0) noteRedirect(context, origin, target, code, getHeader(fields, 'location'));
      // As Node's client reads it: repeated fields joined (`gzip, gzip` cannot be read).
      const codings: string[] = [];
      for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i].toLowerCase() === 'content-encoding') codings.push(fields[i + 1]);
      encoding = codings.length > 0 ? codings.join(', ') : undefined;
      if (!canRedactEncoding(encoding) || (identityOnly && !isIdentity(encoding))) {
        deny(core, context, res, { ...base, status: code, allowed: false, rule: 'response-unreadable', reason: `the response is encoded as \`${clip(String(encoding))}\`, which the proxy ${canRedactEncoding(encoding) ? 'was told not to decode (responses: identity)' : 'cannot read'} to remove secrets` }, 502);
        return undefined;
      }
      // A cleaned body may change length; a response to HEAD has none, and its length is the resource's.
      return redactHeaders(fields, context.redactor, base.method === 'HEAD' ? HOP_BY_HOP : CLEANED_DROP);
    },
    body: () => createBodyCleaner(encoding, context.redactor, (error) => {
      res.destroy();
      if (error instanceof WrappedValue) {
        core.record(context, { ...base, status, allowed: false, rule: 'response-wrapped-value', reason: `the response holds <<${error.ref}>> split over lines, which cannot be masked where it stands; it was cut off` });
      }
    }, context.wrap),
  };
}

const CLEANED_DROP = new Set([...HOP_BY_HOP, 'content-length']);

/** A connection to the upstream: TLS to the host (through the parent's tunnel when there is one), plain TCP to the host, or to the parent for plain HTTP. */
function open(core: ProxyCore, context: RunContext, decision: EgressDecision, tls: boolean, parent: ParentProxy | undefined, callback: (error: Error | null, socket?: Socket) => void, buffers?: ReadBuffers): void {
  if (!tls) {
    const dial = parent ? { host: parent.host, port: parent.port } : core.dialTarget(decision.address!, decision.port);
    const socket = core.limitConnect(netConnect({ port: dial.port, host: dial.host, noDelay: NO_DELAY, highWaterMark: STREAM_HIGH_WATER_MARK, ...(buffers ? { onread: buffers.onread } : {}) } as never));
    socket.once('connect', () => callback(null, socket));
    socket.once('error', (error: Error) => callback(error));
    return;
  }
  const servername = isIP(decision.host) === 0 ? decision.host : undefined;
  const secure = (raw?: Socket): void => {
    // Made on first use (upstream.ts): a CA file the policy names that is gone by now fails this request, not the gateway.
    let secureContext;
    try {
      secureContext = context.trust;
    } catch (error) {
      raw?.destroy();
      callback(error as Error);
      return;
    }
    const dial = raw ? undefined : core.dialTarget(decision.address!, decision.port);
    const socket = core.limitConnect(tlsConnect({
      ...(raw ? { socket: raw } : { host: dial!.host, port: dial!.port }),
      servername,
      secureContext,
      ALPNProtocols: ['http/1.1'],
      // The response read from it takes this buffer size (Node gives an IncomingMessage its socket's).
      ...TLS_BUFFERS,
    }));
    // Its TCP connection's (proxy-core.ts NO_DELAY); on a tunnel through the parent, that socket's.
    socket.setNoDelay(NO_DELAY);
    socket.once('secureConnect', () => callback(null, socket));
    socket.once('error', (error: Error) => callback(error));
  };
  if (parent) core.openTcp(context, decision, (error, socket) => (error ? callback(error) : secure(socket)));
  else secure();
}

/** The absolute form a plain-HTTP request takes to the parent proxy. */
function absoluteTarget(decision: EgressDecision, target: string): string {
  return `http://${formatOrigin(decision.host, decision.port, 80)}${target}`;
}

function withParentAuthorization(headers: readonly string[], parent: ParentProxy): string[] {
  return [...headers, ...(parent.authorization ? ['Proxy-Authorization', parent.authorization] : [])];
}

/** A redirect from an injected request that leaves its scheme, host or port: the value is not sent on to where it points. */
function noteRedirect(context: RunContext, origin: string, target: string, status: number, location: string | undefined): void {
  if (status < 300 || status > 399 || typeof location !== 'string') return;
  let next: URL;
  try {
    next = new URL(location, `${origin}${target}`);
  } catch {
    return;
  }
  if (next.origin === new URL(origin).origin) return;
  const host = canonicalHost(next.hostname);
  if (!host) return;
  const port = next.port === '' ? (next.protocol === 'https:' ? 443 : 80) : Number(next.port);
  context.redirects.add(`${next.protocol}//${formatAuthority(host, port)}${next.pathname}${next.search}`);
  if (context.redirects.size > MAX_REDIRECTS) context.redirects.delete(context.redirects.values().next().value as string);
}

/** `host:port`, or `host` alone on the scheme's default port (as a Host header or URL says it). */
function formatOrigin(host: string, port: number, defaultPort: number): string {
  const authority = formatAuthority(host, port);
  return port === defaultPort ? authority.slice(0, authority.lastIndexOf(':')) : authority;
}

function wantsIdentity(injections: readonly BoundInjection[], decision: EgressDecision): boolean {
  return injections.some((i) => i.binding.responses === 'identity' && i.binding.hosts.some((p) => matchesHost(p, decision.host, decision.port)));
}

/** Does the request carry a body? Without Content-Length or Transfer-Encoding it has none (RFC 9112, 6.3), and Node parses it so. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) !== 0);
}

function isIdentity(encoding: string | undefined): boolean {
  const value = (encoding ?? '').trim().toLowerCase();
  return value === '' || value === 'identity';
}

function toHeaderObject(raw: readonly string[]): Record<string, string | string[]> {
  const out = Object.create(null) as Record<string, string | string[]>;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    const existing = out[name];
    out[name] = existing === undefined ? raw[i + 1] : [...(Array.isArray(existing) ? existing : [existing]), raw[i + 1]];
  }
  return out;
}

function stripHopByHop(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (!HOP_BY_HOP.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1]);
  return out;
}

function getHeader(raw: readonly string[], lower: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() === lower) return raw[i + 1];
  return undefined;
}

/** Replace every `lower` header with one (or none, for undefined). */
function setHeader(raw: string[], lower: string, value: string | undefined): void {
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i].toLowerCase() === lower) raw.splice(i, 2);
  if (value !== undefined) raw.push(lower, value);
}
