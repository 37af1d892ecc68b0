/*
 * Real MCP clients (the official SDK's) against the built `execgate mcp`.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

export function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error('dist/cli/main.js is missing: run `npm run build` before the MCP tests.');
}

let userHome: string | undefined;

/**
 * The servers' home directory: one of their own, apart from every workspace and state directory
 * (a workspace may not hold the home directory: EXECGATE_ERR_WORKSPACE_HOLDS_HOME).
 */
export function getUserHome(): string {
  if (userHome === undefined) {
    const made = mkdtempSync(join(tmpdir(), 'execgate-mcp-user-'));
    process.on('exit', () => rmSync(made, { recursive: true, force: true }));
    userHome = made;
  }
  return userHome;
}

/** PATH of the system plus node's own directory; nothing else from the test runner's env. */
export function serverEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: `/usr/bin:/bin:${dirname(process.execPath)}`,
    HOME: getUserHome(),
    LANG: 'C.UTF-8',
    EXECGATE_HOME: home,
    EXECGATE_KEYRING: 'off',
    ...extra,
  };
}

export interface StdioServer {
  client: Client;
  transport: StdioClientTransport;
  /** Every text the server returned (content and structured content), for leak checks. */
  seen: string[];
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  bash(command: string, extra?: Record<string, unknown>): Promise<CallToolResult>;
  stderr(): string;
  close(): Promise<void>;
}

export async function startStdio(options: { args?: string[]; cwd: string; env: Record<string, string>; clientName?: string }): Promise<StdioServer> {
  requireBuild();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', ...(options.args ?? [])],
    cwd: options.cwd,
    env: options.env,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
  const client = new Client({ name: options.clientName ?? 'execgate-test', version: '1.0.0' });
  await client.connect(transport);
  const seen: string[] = [];
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    seen.push(JSON.stringify(result));
    return result;
  };
  return {
    client,
    transport,
    seen,
    call,
    bash: (command, extra = {}) => call('bash', { command, ...extra }),
    stderr: () => stderr,
    close: () => client.close(),
  };
}

export function textOf(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export function structured(result: CallToolResult): Record<string, any> {
  return (result.structuredContent ?? {}) as Record<string, any>;
}

/** The process exists and is not a zombie (the suite-wide helper). */
export { isAlive } from '../helpers/tmp';

export function isGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000, stepMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}
