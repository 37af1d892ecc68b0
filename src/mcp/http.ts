/*
 * Streamable HTTP: one node:http server, one SDK transport + protocol server per MCP session
 * (the session id is the transport's `Mcp-Session-Id`). Every request passes the guard first
 * (Host / Origin, then the bearer token); only then does the SDK see it.
 *
 * Also answered, so that no client is left with a bare status:
 *   - the deprecated HTTP+SSE transport (protocol 2024-11-05: GET opens an event stream that
 *     names where to POST): served with the SDK's SSEServerTransport on GET /mcp without a
 *     session id (and GET /sse), its messages POSTed to /mcp?sessionId=...;
 *   - a body over the limit: 413 with a JSON-RPC error, after the body was read to its end so
 *     the client sees the answer instead of a reset connection;
 *   - OAuth discovery: execgate takes a static bearer token and is no OAuth resource server, so
 *     it publishes no protected-resource metadata (the spec requires such metadata to name an
 *     authorization server) and its 401 carries no `resource_metadata`. OAuth-aware clients
 *     still probe the origin's well-known and /register URLs on a 401; those answer with an
 *     OAuth-shaped error that says which header to send.
 * Sessions unused for `sessionIdleTimeout` are closed like a DELETE: their background
 * processes are killed (each kill is audited with the session as actor). A client whose
 * connection drops mid-call has its calls cancelled at once (see #cancelOnHangUp).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { ExecgateError, type ErrorCode } from '../errors';
import { checkHostAndOrigin, getAllowedHosts, isAuthorized, validateListenHost, validateToken } from './http-guard';
import type { ExecgateMcpServer } from './server';

/**
 * The address {@link serveHttp} listens on by default: loopback only.
 */
export const DEFAULT_HTTP_HOST = '127.0.0.1';
/**
 * The port {@link serveHttp} listens on by default.
 */
export const DEFAULT_HTTP_PORT = 7337;
/**
 * The path MCP requests are served on.
 */
export const MCP_HTTP_PATH = '/mcp';
/** Where a legacy HTTP+SSE client configured with the conventional URL opens its stream. */
export const MCP_LEGACY_SSE_PATH = '/sse';

/** Default largest JSON-RPC request body (a command is at most 128 KiB). */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Default milliseconds a session may go unused before it is closed: 30 minutes. */
export const DEFAULT_SESSION_IDLE_TIMEOUT = 30 * 60 * 1000;

/** What a client must send, in every refusal of a missing or wrong token. */
const AUTH_HINT =
  'Send the header `Authorization: Bearer <token>` with the token `execgate mcp --http` was started with ' +
  '(EXECGATE_MCP_TOKEN, or the one it printed at start); execgate does not use OAuth';

/** Paths OAuth-aware clients probe after a 401 (RFC 9728, RFC 8414, OIDC, and the 2025-03-26 defaults). */
const OAUTH_DISCOVERY = /^\/\.well-known\/(oauth-protected-resource|oauth-authorization-server|openid-configuration)(\/.*)?$/;
const OAUTH_ENDPOINTS = new Set(['/register', '/authorize', '/token']);

type SessionTransport = StreamableHTTPServerTransport | SSEServerTransport;

/**
 * Options of {@link serveHttp}: address, bearer token, body limit, session idle timeout, remote
 * use.
 */
export interface McpHttpOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** The bearer token every request must carry. */
  token: string;
  /** Listen on a non-loopback address (refused otherwise). */
  allowRemote?: boolean;
  /** More Host header values to answer to (`name` or `name:port`), for remote use. */
  allowedHosts?: readonly string[];
  /** Largest request body in bytes (default 4 MiB); a larger one is answered with 413. */
  maxBodyBytes?: number;
  /** Milliseconds a session may go unused before it is closed (default 30 min; 0: never). */
  sessionIdleTimeout?: number;
  /** Serve the deprecated HTTP+SSE transport too (default true). */
  legacySse?: boolean;
  /** Told about each session closed for being idle. */
  onSessionReaped?: (info: { sessionId: string; idleMs: number; killed: string[] }) => void;
}

/**
 * An MCP server served over Streamable HTTP (and the legacy HTTP+SSE transport), bearer-token
 * authenticated, loopback-only unless told otherwise.
 */
export class McpHttpServer {
  readonly #mcp: ExecgateMcpServer;
  readonly #http: HttpServer;
  readonly #token: string;
  readonly #maxBody: number;
  readonly #idleTimeout: number;
  readonly #legacySse: boolean;
  readonly #onReaped: McpHttpOptions['onSessionReaped'];
  readonly #transports = new Map<string, SessionTransport>();
  #reaper: NodeJS.Timeout | undefined;
  #allowed = new Set<string>();
  #url = '';

  constructor(mcp: ExecgateMcpServer, http: HttpServer, token: string, options: Omit<McpHttpOptions, 'token'> = {}) {
    this.#mcp = mcp;
    this.#http = http;
    this.#token = token;
    this.#maxBody = validateLimit('maxBodyBytes', options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 1024);
    this.#idleTimeout = validateLimit('sessionIdleTimeout', options.sessionIdleTimeout, DEFAULT_SESSION_IDLE_TIMEOUT, 0);
    this.#legacySse = options.legacySse !== false;
    this.#onReaped = options.onSessionReaped;
    if (this.#idleTimeout > 0) {
      // Checked a few times per timeout, so a session goes at most a quarter late.
      this.#reaper = setInterval(() => { void this.reapIdle(); }, Math.max(50, Math.min(60_000, this.#idleTimeout / 4)));
      this.#reaper.unref();
    }
  }

  get url(): string {
    return this.#url;
  }

  get port(): number {
    return (this.#http.address() as AddressInfo).port;
  }

  /** Ids of the open sessions (Streamable HTTP and legacy SSE). */
  get sessionIds(): string[] {
    return [...this.#transports.keys()];
  }

  /** Called once listening: the allowed hosts depend on the port actually bound. */
  setAddress(host: string, port: number, extra: readonly string[]): void {
    this.#allowed = getAllowedHosts(host, port, extra);
    const shown = host.includes(':') ? `[${host}]` : host;
    this.#url = `http://${shown === '0.0.0.0' || shown === '[::]' ? '127.0.0.1' : shown}:${port}${MCP_HTTP_PATH}`;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refused = checkHostAndOrigin(req.headers.host, headerValue(req.headers.origin), this.#allowed);
    if (refused) return reply(res, 403, 'EXECGATE_ERR_MCP_HOST_REFUSED', `Refused: ${refused} (DNS rebinding protection).`);
    const [path = '', query = ''] = (req.url ?? '').split('?', 2);
    if (OAUTH_DISCOVERY.test(path) || OAUTH_ENDPOINTS.has(path)) return replyOAuth(res, path);
    const legacyPath = this.#legacySse && path === MCP_LEGACY_SSE_PATH;
    if (path !== MCP_HTTP_PATH && !legacyPath) return reply(res, 404, undefined, `Not found; the MCP endpoint is ${MCP_HTTP_PATH} (Streamable HTTP).`);
    const authorization = headerValue(req.headers.authorization);
    if (!isAuthorized(authorization, this.#token)) {
      const wrong = authorization !== undefined;
      // RFC 6750: no error code when no credentials were sent; invalid_token for a wrong one.
      res.setHeader('WWW-Authenticate', `Bearer realm="execgate"${wrong ? ', error="invalid_token"' : ''}, error_description="${AUTH_HINT.replace(/`/g, '')}"`);
      return reply(res, 401, 'EXECGATE_ERR_MCP_UNAUTHORIZED', `${wrong ? 'The bearer token is not the one this server was started with' : 'No `Authorization` header was sent'}. ${AUTH_HINT}.`);
    }
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
      res.setHeader('Allow', 'GET, POST, DELETE');
      return reply(res, 405, undefined, 'Method not allowed.');
    }
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readBody(req, this.#maxBody);
      if (read.tooLarge) {
        if (read.cut) res.setHeader('Connection', 'close');
        return reply(res, 413, 'EXECGATE_ERR_MCP_REQUEST_TOO_LARGE',
          `The request body is ${read.size} bytes or more; this server accepts at most ${this.#maxBody} (set with --max-request-bytes). A command is at most 128 KiB; send large data as a file.`, -32600);
      }
      try {
        body = JSON.parse(read.text);
      } catch {
        return reply(res, 400, undefined, 'Parse error: the body is not JSON.', -32700);
      }
    }
    const legacyId = new URLSearchParams(query).get('sessionId');
    const sessionId = headerValue(req.headers['mcp-session-id']) ?? (req.method === 'POST' && legacyId !== null ? legacyId : undefined);
    if (sessionId !== undefined) {
      const transport = this.#transports.get(sessionId);
      if (!transport) return reply(res, 404, 'EXECGATE_ERR_MCP_SESSION_NOT_FOUND', 'No MCP session has this id (it was closed, timed out for being idle, or the server restarted); initialize a new one.');
      this.#mcp.getSession(sessionId)?.touch();
      if (transport instanceof SSEServerTransport) {
        if (req.method !== 'POST') return reply(res, 405, undefined, 'A legacy HTTP+SSE session takes POSTed messages only.');
        return transport.handlePostMessage(req, res, body);
      }
      this.#cancelOnHangUp(transport, res, body);
      return transport.handleRequest(req, res, body);
    }
    // A Streamable HTTP client names its session on every GET; a GET without one is a client
    // of the deprecated HTTP+SSE transport opening its stream.
    if (req.method === 'GET') {
      if (this.#legacySse) return this.#openLegacy(res);
      return reply(res, 405, 'EXECGATE_ERR_MCP_TRANSPORT_UNSUPPORTED', `This server speaks Streamable HTTP only: POST an initialize request to ${MCP_HTTP_PATH}; the deprecated HTTP+SSE transport is turned off.`);
    }
    if (req.method === 'POST' && isInitialize(body)) return this.#open(req, res, body);
    return reply(res, 400, undefined, 'Bad request: no valid Mcp-Session-Id header, and not an initialize request.', -32000);
  }

  /**
   * A client whose connection drops before its answer was sent will never read it: its requests
   * are cancelled as if it had sent notifications/cancelled, so a command it started is stopped
   * within the grace period instead of running to its own timeout. The session itself (and its
   * background processes) stays until DELETE or the idle timeout: the client may come back.
   */
  #cancelOnHangUp(transport: StreamableHTTPServerTransport, res: ServerResponse, body: unknown): void {
    const ids = (Array.isArray(body) ? body : [body])
      .filter((message) => message !== null && typeof message === 'object' && 'method' in message && 'id' in message)
      .map((message) => (message as { id: string | number }).id);
    if (ids.length === 0) return;
    res.once('close', () => {
      if (res.writableFinished) return;
      for (const requestId of ids) {
        transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'the client went away (its connection closed before the answer)' } });
      }
    });
  }

  async #open(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const id = randomUUID();
    const { server } = this.#mcp.openSession(id);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: (sid) => { this.#transports.set(sid, transport); },
      // DELETE: the response waits for the session's background processes to be killed.
      onsessionclosed: async (sid) => { await this.#mcp.closeSession(sid); },
    });
    transport.onclose = () => {
      this.#transports.delete(id);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    // An initialize that failed leaves no session behind.
    if (!this.#transports.has(id)) await this.#mcp.closeSession(id);
  }

  /** A deprecated HTTP+SSE session: the stream stays open; messages come by POST. */
  async #openLegacy(res: ServerResponse): Promise<void> {
    const transport = new SSEServerTransport(MCP_HTTP_PATH, res);
    const id = transport.sessionId;
    const { server } = this.#mcp.openSession(id);
    this.#transports.set(id, transport);
    transport.onclose = () => {
      this.#transports.delete(id);
      // The stream is the session: a client that went away leaves nothing running.
      void this.#mcp.closeSession(id);
    };
    await server.connect(transport);
  }

  /**
   * Close every session unused for longer than the idle timeout (a call under way counts as
   * use). Runs on a timer; returns the ids closed.
   */
  async reapIdle(now = Date.now()): Promise<string[]> {
    if (this.#idleTimeout <= 0) return [];
    const reaped: string[] = [];
    for (const [id, transport] of [...this.#transports]) {
      const session = this.#mcp.getSession(id);
      const idleMs = session ? session.idleFor(now) : Infinity;
      if (idleMs <= this.#idleTimeout) continue;
      const killed = session ? session.processIds.filter((pid) => this.#isRunning(pid)) : [];
      this.#transports.delete(id);
      await this.#mcp.closeSession(id);
      await transport.close().catch(() => undefined);
      reaped.push(id);
      this.#onReaped?.({ sessionId: id, idleMs: Number.isFinite(idleMs) ? idleMs : 0, killed });
    }
    return reaped;
  }

  #isRunning(processId: string): boolean {
    try {
      return this.#mcp.gateway.background.get(processId).state === 'running';
    } catch {
      return false;
    }
  }

  /** Stop listening and close every session (their background processes are killed). */
  async close(): Promise<void> {
    if (this.#reaper) clearInterval(this.#reaper);
    const closed = new Promise<void>((resolve) => this.#http.close(() => resolve()));
    this.#http.closeAllConnections();
    await this.#mcp.close();
    for (const transport of this.#transports.values()) await transport.close().catch(() => undefined);
    this.#transports.clear();
    await closed;
  }
}

/** Start the Streamable HTTP server; resolves once it listens. */
export async function serveHttp(mcp: ExecgateMcpServer, options: McpHttpOptions): Promise<McpHttpServer> {
  const host = options.host ?? DEFAULT_HTTP_HOST;
  validateListenHost(host, options.allowRemote === true);
  const token = validateToken(options.token);
  const http = createServer();
  const { token: _token, ...rest } = options;
  const server = new McpHttpServer(mcp, http, token, rest);
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    server.handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) reply(res, 500, 'EXECGATE_ERR_UNEXPECTED', error instanceof Error ? error.message : String(error));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ExecgateError(
        'EXECGATE_ERR_MCP_LISTEN_FAILED',
        `Cannot listen on ${host}:${options.port ?? DEFAULT_HTTP_PORT} (${error.code ?? error.message}). Choose another --port or --host.`,
        { host, port: options.port ?? DEFAULT_HTTP_PORT, errno: error.code },
        { cause: error },
      ));
    });
    http.listen(options.port ?? DEFAULT_HTTP_PORT, host, () => resolve());
  });
  server.setAddress(host, server.port, options.allowedHosts ?? []);
  return server;
}

interface BodyRead {
  text: string;
  size: number;
  tooLarge: boolean;
  /** The body was not read to its end: close the connection behind the answer. */
  cut: boolean;
}

/**
 * Read a request body up to `limit` bytes. A larger one is still read to its end (and dropped)
 * so the 413 reaches the client instead of a reset connection, up to a hard cap past which the
 * connection is closed behind the answer.
 */
function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  const declared = Number(req.headers['content-length']);
  const hardCap = Math.max(limit * 4, 64 * 1024 * 1024);
  if (Number.isFinite(declared) && declared > hardCap) return Promise.resolve({ text: '', size: declared, tooLarge: true, cut: true });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number.isFinite(declared) && declared > limit;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      if (!tooLarge) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      if (size > hardCap) {
        req.pause();
        resolve({ text: '', size, tooLarge: true, cut: true });
      }
    });
    req.on('end', () => resolve({ text: tooLarge ? '' : Buffer.concat(chunks).toString('utf8'), size: Math.max(size, Number.isFinite(declared) ? declared : 0), tooLarge, cut: false }));
    req.on('error', reject);
  });
}

function validateLimit(option: string, value: unknown, fallback: number, minimum: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_OPTION',
      `Expected \`${option}\` to be an integer of at least ${minimum}, got ${JSON.stringify(value) ?? String(value)}.`,
      { option },
    );
  }
  return value;
}

/** The OAuth URLs a client probes after a 401: an OAuth-shaped answer that says what to send. */
function replyOAuth(res: ServerResponse, path: string): void {
  const discovery = path.startsWith('/.well-known/');
  res.writeHead(discovery ? 404 : 400, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify({
    error: discovery ? 'not_found' : path === '/register' ? 'invalid_client_metadata' : 'invalid_request',
    error_description: `execgate has no OAuth authorization server and publishes no OAuth metadata. ${AUTH_HINT}. With mcp-remote: --header "Authorization: Bearer <token>".`,
  }));
}

function isInitialize(body: unknown): boolean {
  return Array.isArray(body) ? body.some((message) => isInitializeRequest(message)) : isInitializeRequest(body);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A JSON-RPC error body; execgate's own refusals carry the coded one-line message. */
function reply(res: ServerResponse, status: number, code: ErrorCode | undefined, message: string, rpcCode = -32001): void {
  // Headers set before (WWW-Authenticate, Allow) are merged in by writeHead.
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: rpcCode, message: code ? `${code}: ${message}` : message }, id: null }));
}
