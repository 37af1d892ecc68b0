/*
 * What an MCP tool of execgate is: a definition computed per session (the bash tool's
 * description names the session's directory) and a call that always resolves to a result. A
 * failure the model can act on (refused by policy, bad arguments, unknown process) is an
 * `isError` result with the coded line; only protocol faults throw.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Gateway } from '../../gateway';
import { isExecgateError } from '../../errors';
import type { ProgressReporter } from '../progress';
import type { McpSession } from '../session';

export interface McpToolContext {
  readonly gateway: Gateway;
  readonly session: McpSession;
  /** Aborted when the client cancels the call (notifications/cancelled): the command is stopped. */
  readonly signal?: AbortSignal;
  /** Tells the client the tool list changed (the bash description shows the directory). */
  readonly notifyToolsChanged: () => Promise<void>;
  /** Present when the client asked for progress: feed it output, it sends the notifications. */
  readonly progress?: ProgressReporter;
}

export interface McpTool {
  readonly name: string;
  /** JSON Schema of the arguments, checked before `call`. */
  readonly inputSchema: Tool['inputSchema'];
  describe(session: McpSession): Tool;
  call(args: Record<string, unknown>, context: McpToolContext): Promise<CallToolResult>;
}

export function textResult(text: string, structuredContent?: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    ...(structuredContent ? { structuredContent } : {}),
  };
}

/** The coded one-line form of an error, as an `isError` result. */
export function errorResult(error: unknown): CallToolResult {
  return { content: [{ type: 'text', text: describeError(error) }], isError: true };
}

export function describeError(error: unknown): string {
  if (isExecgateError(error)) return error.toLine();
  const message = error instanceof Error ? error.message : String(error);
  return `EXECGATE_ERR_UNEXPECTED: ${message}`;
}
