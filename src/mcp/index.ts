/*
 * The MCP server of execgate (`execgate mcp`). Not re-exported from the package root: importing
 * execgate does not load the MCP SDK.
 */
export { ExecgateMcpServer, createMcpServer } from './server';
export type { ExecgateMcpOptions } from './server';
export { McpSession } from './session';
export { serveStdio } from './stdio';
export type { McpStdioConnection } from './stdio';
export { serveHttp, McpHttpServer, DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, MCP_HTTP_PATH } from './http';
export type { McpHttpOptions } from './http';
export { generateToken } from './http-guard';
export { MCP_OUTPUT_LIMIT, MCP_OUTPUT_KEEP } from './truncate';
export { BASH_DEFAULT_TIMEOUT, BASH_MODE_TIMEOUTS } from './tools/bash';
