/*
 * stdio: one session for the life of the process. stdout carries the protocol and nothing else;
 * everything execgate says goes to stderr (`log`), including what it refused to read and why
 * (stdio-transport.ts). The connection ends when the client closes stdin (or
 * stdout breaks); the caller then closes the server and the gateway.
 */
import type { Readable, Writable } from 'node:stream';
import type { ExecgateMcpServer } from './server';
import { ExecgateStdioTransport } from './stdio-transport';

/**
 * A served stdio session: its id, `closed` (resolves when the client went away) and `close()`.
 */
export interface McpStdioConnection {
  readonly sessionId: string;
  /** Resolves when the client went away (stdin ended, stdout broke, or the transport closed). */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves an MCP server on this process's stdin and stdout; the session ends when stdin does.
 */
export async function serveStdio(
  mcp: ExecgateMcpServer,
  streams: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
  options: { log?: (line: string) => void; maxMessageBytes?: number } = {},
): Promise<McpStdioConnection> {
  const { session, server } = mcp.openSession();
  const transport = new ExecgateStdioTransport(streams.stdin, streams.stdout, options);
  let finish!: () => void;
  const closed = new Promise<void>((resolve) => { finish = resolve; });
  const end = (): void => finish();
  streams.stdin.once('end', end);
  streams.stdin.once('close', end);
  // A client that exits without closing stdin first breaks the pipe: EPIPE on the next write.
  streams.stdout.on('error', end);
  transport.onclose = end;
  await server.connect(transport);
  return {
    sessionId: session.id,
    closed,
    close: async () => {
      await mcp.closeSession(session.id);
      end();
    },
  };
}
