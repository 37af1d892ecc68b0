/**
 * The MCP server of execgate (`execgate mcp`), for embedders as `execgate/mcp`. Not re-exported
 * from the package root: importing execgate does not load the MCP SDK.
 *
 * @packageDocumentation
 * @module execgate/mcp
 */
export { ExecgateMcpServer, createMcpServer } from './server';
export type { ExecgateMcpOptions } from './server';
export { McpSession } from './session';
export { serveStdio } from './stdio';
export type { McpStdioConnection } from './stdio';
export {
  serveHttp, McpHttpServer, DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, MCP_HTTP_PATH, MCP_LEGACY_SSE_PATH,
  DEFAULT_MAX_BODY_BYTES, DEFAULT_SESSION_IDLE_TIMEOUT,
} from './http';
export type { McpHttpOptions } from './http';
export { generateToken } from './http-guard';
export { DEFAULT_PROGRESS_INTERVAL, ProgressReporter } from './progress';
export { MCP_OUTPUT_LIMIT, MCP_OUTPUT_KEEP } from './truncate';
export { BASH_DEFAULT_TIMEOUT, BASH_MODE_TIMEOUTS } from './tools/bash';
