/*
 * Streamable HTTP: one node:http server, one SDK transport + protocol server per MCP session
 * (the session id is the transport's `Mcp-Session-Id`). Every request passes the guard first
 * (Host / Origin, then the bearer token); only then does the SDK see it.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { ExecgateError, type ErrorCode } from '../errors';
import { checkHostAndOrigin, getAllowedHosts, isAuthorized, validateListenHost, validateToken } from './http-guard';
import type { ExecgateMcpServer } from './server';

export const DEFAULT_HTTP_HOST = '127.0.0.1';
export const DEFAULT_HTTP_PORT = 7337;
export const MCP_HTTP_PATH = '/mcp';

/** Largest JSON-RPC request body read (a command is at most 128 KiB). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

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
}

export class McpHttpServer {
  readonly #mcp: ExecgateMcpServer;
  readonly #http: HttpServer;
  readonly #token: string;
  readonly #transports = new Map<string, StreamableHTTPServerTransport>();
  #allowed = new Set<string>();
  #url = '';

  constructor(mcp: ExecgateMcpServer, http: HttpServer, token: string) {
    this.#mcp = mcp;
    this.#http = http;
    this.#token = token;
  }

  get url(): string {
    return this.#url;
  }

  get port(): number {
    return (this.#http.address() as AddressInfo).port;
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
    const path = (req.url ?? '').split('?')[0];
    if (path !== MCP_HTTP_PATH) return reply(res, 404, undefined, `Not found; the MCP endpoint is ${MCP_HTTP_PATH}.`);
    if (!isAuthorized(headerValue(req.headers.authorization), this.#token)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="execgate"');
      return reply(res, 401, 'EXECGATE_ERR_MCP_UNAUTHORIZED', 'A valid `Authorization: Bearer <token>` header is required.');
    }
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
      res.setHeader('Allow', 'GET, POST, DELETE');
      return reply(res, 405, undefined, 'Method not allowed.');
    }
    let body: unknown;
    if (req.method === 'POST') {
      try {
        body = JSON.parse(await readBody(req));
      } catch (error) {
        const tooLarge = error instanceof BodyTooLarge;
        return reply(res, tooLarge ? 413 : 400, undefined, tooLarge ? 'Request body too large.' : 'Parse error: the body is not JSON.', tooLarge ? -32600 : -32700);
      }
    }
    const sessionId = headerValue(req.headers['mcp-session-id']);
    if (sessionId !== undefined) {
      const transport = this.#transports.get(sessionId);
      if (!transport) return reply(res, 404, 'EXECGATE_ERR_MCP_SESSION_NOT_FOUND', 'No MCP session has this id (it was closed, or the server restarted); initialize a new one.');
      return transport.handleRequest(req, res, body);
    }
    if (req.method === 'POST' && isInitialize(body)) return this.#open(req, res, body);
    return reply(res, 400, undefined, 'Bad request: no valid Mcp-Session-Id header, and not an initialize request.', -32000);
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

  /** Stop listening and close every session (their background processes are killed). */
  async close(): Promise<void> {
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
  const server = new McpHttpServer(mcp, http, token);
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

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
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
