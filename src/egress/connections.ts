/*
 * The egress proxy's front door: every connection to a run's socket or to the shared one. One
 * socket speaks three protocols, told apart by the first byte: SOCKS5 (0x05) for any TCP
 * (socks.ts), and HTTP for CONNECT tunnels and plain-HTTP proxy requests. Every request and every
 * SOCKS5 client must present its run's credentials (proxy-core.ts says which run they are). A
 * CONNECT is decided by its authority and then refused with its reason, passed through unread
 * (tunnel.ts), or, to a host and port an injected secret is bound to, terminated with the
 * per-gateway CA, each request inside going on as a plain one does (forward.ts).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { parseAuthority } from './authority';
import { deny, forward } from './forward';
import { matchesHost } from './hosts';
import type { BoundInjection } from './plan';
import { NO_DELAY, safeEqual, STREAM_HIGH_WATER_MARK, TLS_BUFFERS, track, type ProxyCore, type RunContext } from './proxy-core';
import type { EgressDecision } from './proxy-types';
import { clip } from './reading';
import { getReason } from './reasons';
import { DEFAULT_INJECT_PORT } from './rules';
import { handleSocks } from './socks';
import { relayTcp } from './tcp';
import { ReadBuffers } from './passthrough';
import { joinSockets } from './tunnel';

/** The longest preamble a bridge sends before a raw TCP connection's bytes. */
const MAX_PREAMBLE = 512;

/**
 * A raw TCP connection carried by a run's own bridge (egress-run-bridge.js) starts with one line,
 * `\0execgate-tcp USER PASS ADDRESS PORT\n`: the run's proxy credentials (which run it is) and
 * the address and port on the run's loopback the client connected to (which of the run's
 * destinations it means). It names no outside host: what the address stands for is read from
 * the run's own policy, so a forged line reaches nothing the run's policy does not name.
 */
function readPreamble(socket: Socket, done: (preamble: { username: string; password: string; address: string; port: number } | undefined) => void): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf(0x0a);
    if (end === -1) {
      if (head.length > MAX_PREAMBLE) finish(undefined);
      return;
    }
    const rest = head.subarray(end + 1);
    const match = /^\0execgate-tcp ([A-Za-z0-9_-]{1,64}) ([A-Za-z0-9_-]{1,128}) ([0-9a-f.:]{2,45}) (\d{1,5})$/.exec(head.subarray(0, end).toString('latin1'));
    socket.pause();
    if (rest.length > 0) socket.unshift(rest);
    finish(match ? { username: match[1], password: match[2], address: match[3], port: Number(match[4]) } : undefined);
  };
  const finish = (value: Parameters<typeof done>[0]): void => {
    socket.off('data', onData);
    socket.off('end', onEnd);
    done(value);
  };
  const onEnd = (): void => finish(undefined);
  socket.on('data', onData);
  socket.once('end', onEnd);
}

/** One proxy's front door, with the HTTP servers its sockets' requests are parsed by (one per run's own socket, one for the shared socket). */
export class FrontDoor {
  readonly #core: ProxyCore;

  constructor(core: ProxyCore) {
    this.#core = core;
  }

  /** `context`: the run whose own socket this is; undefined on the shared socket (the credentials say). */
  accept(socket: Socket, context: RunContext | undefined): void {
    // Replies and relayed bytes go out as written (proxy-core.ts NO_DELAY; no-op on a Unix socket).
    socket.setNoDelay(NO_DELAY);
    if (context) track(context, socket);
    socket.on('error', () => socket.destroy());
    socket.once('readable', () => {
      const first = socket.read(1) as Buffer | null;
      if (!first) return void socket.destroy();
      socket.unshift(first);
      if (first[0] === 0x00) {
        readPreamble(socket, (preamble) => {
          let run: RunContext | undefined;
          if (preamble) {
            const credentials = context?.options.credentials;
            if (context) run = !credentials || (safeEqual(preamble.username, credentials.username) && safeEqual(preamble.password, credentials.password)) ? context : undefined;
            else run = this.#core.findRun(preamble.username, preamble.password, socket);
          }
          if (!run) {
            this.#core.record(context, { runId: context?.options.runId ?? '', via: 'tcp', host: preamble?.address ?? '', port: preamble?.port ?? 0, allowed: false, rule: preamble ? 'proxy-auth' : 'bad-target' });
            socket.destroy();
            return;
          }
          void relayTcp(this.#core, run, socket, preamble!.address, preamble!.port);
        });
      } else if (first[0] === 0x05) {
        let run = context;
        const credentials = context?.options.credentials;
        const authenticate = context
          ? (credentials ? (username: string, password: string) => safeEqual(username, credentials.username) && safeEqual(password, credentials.password) : undefined)
          : (username: string, password: string) => (run = this.#core.findRun(username, password, socket)) !== undefined;
        void handleSocks(socket, {
          decide: (host, port) => this.#core.decide(run!, 'socks', host, port, true),
          record: (decision) => this.#core.record(run, decision),
          open: (decision, callback) => this.#core.openTcp(run!, decision, callback),
          authenticate,
          onAuthFailed: () => this.#core.record(context, { runId: context?.options.runId ?? '', via: 'socks', host: '', port: 0, allowed: false, rule: 'proxy-auth' }),
        });
      } else {
        this.#getHttpServer(context).emit('connection', socket);
      }
    });
  }

  #httpServers = new WeakMap<RunContext, HttpServer>();
  #sharedHttpServer: HttpServer | undefined;
  #getHttpServer(context: RunContext | undefined): HttpServer {
    let server = context ? this.#httpServers.get(context) : this.#sharedHttpServer;
    if (!server) {
      server = createHttpServer({ highWaterMark: STREAM_HIGH_WATER_MARK });
      server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.#onPlainRequest(context, req, res));
      server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.#onConnect(context, req, socket, head));
      server.on('clientError', (error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex) => this.#onClientError(context ?? this.#core.socketRuns.get(socket), error, socket));
      if (context) this.#httpServers.set(context, server);
      else this.#sharedHttpServer = server;
    }
    return server;
  }

  /*
   * A request Node's parser refused (conflicting Content-Length / Transfer-Encoding, duplicate
   * lengths, a malformed header): answered with the parser's reason instead of a bare 400.
   */
  #onClientError(context: RunContext | undefined, error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex): void {
    const reason = `a malformed request (${error.reason ?? error.code ?? 'unreadable'})`;
    if (context) this.#core.record(context, { runId: context.options.runId, via: 'http', host: '', port: 0, allowed: false, rule: `malformed:${error.code ?? 'error'}`, reason, status: 400 });
    if (socket.writable) {
      const body = `execgate egress proxy: refused ${reason}.\n`;
      socket.end(`HTTP/1.1 400 Bad Request\r\nX-Execgate-Egress: refused malformed\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    } else {
      socket.destroy();
    }
  }

  async #onConnect(own: RunContext | undefined, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const context = this.#core.authorize(own, req);
    if (!context) {
      this.#core.record(own, { runId: own?.options.runId ?? '', via: 'connect', host: clip(req.url ?? ''), port: 0, allowed: false, rule: 'proxy-auth' });
      client.end(`HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="execgate"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    const target = parseAuthority(req.url ?? '');
    const decision = target
      ? await this.#core.decide(context, 'connect', target.host, target.port, true)
      : { runId: context.options.runId, via: 'connect' as const, host: clip(req.url ?? ''), port: 0, allowed: false, rule: 'bad-target' };
    if (!decision.allowed || (!decision.address && !decision.parent)) {
      this.#refuseConnect(context, client, decision);
      return;
    }
    const injections = context.injections.filter((i) => isInjectedOverTls(i, decision.host, decision.port));
    if (injections.length > 0) {
      this.#core.record(context, decision);
      this.#intercept(context, client, head, decision);
      return;
    }
    let joined = false;
    // Direct, the tunnel's upstream reads into buffers used again (tunnel.ts); through a parent
    // proxy its first bytes are that proxy's answer, read by connectThrough.
    const buffers = decision.parent ? undefined : new ReadBuffers();
    const upstream = this.#core.openTcp(context, decision, (error) => {
      if (error) {
        if (joined) return;
        this.#refuseConnect(context, client, { ...decision, allowed: false, rule: `${decision.parent ? 'upstream-failed' : 'dial-failed'}:${(error as NodeJS.ErrnoException).code ?? 'error'}` }, 502);
        return;
      }
      joined = true;
      this.#core.record(context, decision);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      joinSockets(client, upstream, buffers);
    }, buffers);
    // Tracked with the run's sockets: a tunnel whose client left cleanly may still be flushing upstream.
    context.sockets.add(upstream);
    upstream.once('close', () => context.sockets.delete(upstream));
    client.once('close', () => { if (!joined) upstream.destroy(); });
  }

  /** A refused CONNECT: the reason in the status line (what Python and others show), a header and the body (curl -v). */
  #refuseConnect(context: RunContext, client: Duplex, decision: EgressDecision, status = 403): void {
    this.#core.record(context, decision);
    const reason = getReason(decision);
    const text = `refused ${decision.host}${decision.port ? `:${decision.port}` : ''} (${reason})`;
    const phrase = `execgate ${text}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 300);
    const body = `execgate egress proxy: ${text}.\n`;
    const clean = context.detector ? context.detector.redactString(phrase).text : phrase;
    client.end(`HTTP/1.1 ${status} ${clean}\r\nX-Execgate-Egress: refused ${decision.rule.replace(/[^\x21-\x7e]/g, '?')}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }

  /** TLS terminated with the gateway CA; each request inside is read, placed and forwarded. */
  #intercept(context: RunContext, client: Duplex, head: Buffer, decision: EgressDecision): void {
    const ca = this.#core.getCa();
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    const tls = new TLSSocket(client, {
      isServer: true,
      secureContext: ca.getSecureContext(decision.host),
      ALPNProtocols: ['http/1.1'],
      // The response's buffer is this socket's: at Node's 16 KiB every 16 KiB TLS record filled it,
      // so each one paused and resumed the whole chain (upstream socket, response, cleaning stage).
      // With the larger buffer the proxy's CPU per MiB intercepted fell from 4.5 to 3.2 ms (10 MiB
      // bodies) and from 4.0 to 2.4 ms (100 MiB), measured as bench/egress.js's CPU rows do.
      ...TLS_BUFFERS,
    });
    tls.on('error', () => tls.destroy());
    context.sockets.add(tls);
    tls.once('close', () => context.sockets.delete(tls));
    const server = createHttpServer((req, res) => {
      const sni = typeof tls.servername === 'string' ? tls.servername : undefined;
      void forward(this.#core, context, req, res, { ...decision, via: 'https-intercepted' }, true, sni);
    });
    server.on('clientError', (error: NodeJS.ErrnoException & { reason?: string }, socket: Duplex) => this.#onClientError(context, error, socket));
    server.emit('connection', tls);
  }

  async #onPlainRequest(own: RunContext | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const context = this.#core.authorize(own, req);
    if (!context) {
      this.#core.record(own, { runId: own?.options.runId ?? '', via: 'http', host: '', port: 0, allowed: false, rule: 'proxy-auth', method: req.method });
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="execgate"', 'content-type': 'text/plain', connection: 'close' });
      res.end('execgate egress proxy: this run\'s proxy credentials are required (they are in its HTTP_PROXY).\n');
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      deny(this.#core, context, res, { runId: context.options.runId, via: 'http', host: '', port: 0, allowed: false, rule: 'bad-target', method: req.method, reason: 'send absolute http:// URLs to this proxy, or CONNECT for TLS' }, 400);
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const decision = await this.#core.decide(context, 'http', url.hostname, port, false);
    if (!decision.allowed || (!decision.address && !decision.parent)) {
      deny(this.#core, context, res, { ...decision, method: req.method });
      return;
    }
    await forward(this.#core, context, req, res, decision, false);
  }
}

/** Does a binding put its value into TLS requests to host:port (its hosts, on their port, 443 by default)? */
function isInjectedOverTls(injection: BoundInjection, host: string, port: number): boolean {
  return injection.binding.hosts.some((pattern) => matchesHost(pattern, host, port) && (pattern.port ?? DEFAULT_INJECT_PORT) === port);
}
