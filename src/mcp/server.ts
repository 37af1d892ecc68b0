/*
 * The MCP server: one gateway for the whole process, one protocol Server and one McpSession per
 * client session (stdio has one; Streamable HTTP has one per session id). Tools are plain JSON
 * Schema definitions served through the SDK's low-level Server, because the bash tool's
 * description is per session (it names the session's directory) and changes as it moves.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  SetLevelRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { ExecgateError } from '../errors';
import type { Gateway } from '../gateway';
import type { ToolRegistry } from '../tools/registry';
import { ArgumentValidator } from '../tools/validate';
import { DEFAULT_PROGRESS_INTERVAL, ProgressReporter } from './progress';
import { McpSession } from './session';
import { BashTool } from './tools/bash';
import { createFileTools } from './tools/files';
import { createProcessTools } from './tools/process';
import { errorResult, type McpTool } from './tools/types';
import { maskStrings } from '../redact/deep';

const { version } = require('../../package.json') as { version: string };

/**
 * Options of {@link createMcpServer}: the gateway, the working directory sessions start in, which
 * tools to offer and their limits.
 */
export interface ExecgateMcpOptions {
  /** The gateway every tool call goes through. The server does not close it. */
  gateway: Gateway;
  /** Each session's starting directory; default `process.cwd()`. */
  workdir?: string;
  /** Register the bash tool and its process_* companions (default true). */
  bash?: boolean;
  /** Tool names not to register. */
  disabledTools?: readonly string[];
  /** Also offer the built-in file tools, confined to `workdir`. */
  fileTools?: boolean;
  /**
   * Milliseconds between two `notifications/progress` of a tool call whose client sent a
   * progressToken (default 5000): well under the 60 s request timeout of common clients.
   */
  progressInterval?: number;
}

const INSTRUCTIONS =
  'execgate runs shell commands through a policy-checked gateway. Pass secrets as <<secret:NAME>> in a command ' +
  '(or in process_write data): execgate resolves them just before the command runs and masks their values in every result. ' +
  'The bash tool keeps its working directory between calls. Errors from execgate itself come back as one line starting with an EXECGATE_ERR_ code.';

/** Log levels at which an `info` message is wanted. */
const INFO_OR_BELOW: ReadonlySet<string> = new Set(['debug', 'info']);

/**
 * An MCP server over a gateway: the `bash` tool (and the file tools when enabled), one session per
 * client. Serve it with {@link serveStdio} or {@link serveHttp}.
 */
export class ExecgateMcpServer {
  readonly gateway: Gateway;
  readonly workdir: string;
  readonly #tools = new Map<string, McpTool>();
  readonly #sessions = new Map<string, { session: McpSession; server: Server }>();
  readonly #validator = new ArgumentValidator();
  readonly #registry: ToolRegistry | undefined;
  readonly #progressInterval: number;
  #prepared = false;

  constructor(options: ExecgateMcpOptions) {
    this.gateway = options.gateway;
    this.workdir = options.workdir ?? process.cwd();
    this.#progressInterval = validateInterval(options.progressInterval);
    const tools: McpTool[] = [];
    if (options.bash !== false) tools.push(new BashTool(), ...createProcessTools());
    if (options.fileTools) {
      const files = createFileTools(this.gateway, this.workdir);
      this.#registry = files.registry;
      tools.push(...files.tools);
    }
    const disabled = new Set(options.disabledTools ?? []);
    const unknown = [...disabled].filter((name) => !tools.some((tool) => tool.name === name));
    if (unknown.length > 0) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_OPTION',
        `Cannot disable unknown tool${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `\`${name}\``).join(', ')}; the tools are ${tools.map((tool) => tool.name).join(', ') || '(none)'}.`,
        { option: 'disabledTools' },
      );
    }
    for (const tool of tools) if (!disabled.has(tool.name)) this.#tools.set(tool.name, tool);
  }

  /** Names of the tools every session is offered. */
  get toolNames(): string[] {
    return [...this.#tools.keys()];
  }

  get sessionCount(): number {
    return this.#sessions.size;
  }

  getSession(id: string): McpSession | undefined {
    return this.#sessions.get(id)?.session;
  }

  /** A new session and its protocol server; connect the server to the session's transport. */
  openSession(id?: string): { session: McpSession; server: Server } {
    const session = new McpSession(this.workdir, id);
    const server = new Server(
      { name: 'execgate', version, title: 'execgate' },
      { capabilities: { tools: { listChanged: true }, logging: {} }, instructions: INSTRUCTIONS },
    );
    // Log messages are opt-in: only a client that set a level gets them (see progress.ts).
    server.setRequestHandler(SetLevelRequestSchema, (request) => {
      session.logLevel = request.params.level;
      return {};
    });
    server.oninitialized = () => {
      session.clientName = server.getClientVersion()?.name;
    };
    server.onclose = () => {
      void this.closeSession(session.id);
    };
    server.setRequestHandler(ListToolsRequestSchema, () => {
      // A client that has listed the tools is about to call one: the first sandboxed run's set-up
      // (Gateway.prepare) is made now, after this answer, while the client's model thinks, instead
      // of on that first call's path. Once per server.
      if (!this.#prepared && this.#tools.has('bash')) {
        this.#prepared = true;
        setImmediate(() => { void this.gateway.prepare(); });
      }
      return { tools: [...this.#tools.values()].map((tool) => tool.describe(session)) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const { name } = request.params;
      const tool = this.#tools.get(name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      if (session.clientName === 'unknown') session.clientName = server.getClientVersion()?.name;
      const args = request.params.arguments ?? {};
      try {
        this.#validator.validate(name, tool.inputSchema, args);
      } catch (error) {
        return errorResult(error);
      }
      const token = request.params._meta?.progressToken;
      const log = session.logLevel !== undefined && INFO_OR_BELOW.has(session.logLevel);
      const progress = token === undefined && !log
        ? undefined
        : new ProgressReporter((notification) => extra.sendNotification(notification), { ...(token !== undefined ? { token } : {}), log }, this.#progressInterval, `${name} running`);
      session.beginCall();
      try {
        // Every result leaves masked with the values the gateway knows (a run's output already
        // is; a message can still name a path a run made out of a value).
        return maskStrings(await tool.call(args, {
          signal: extra.signal,
          gateway: this.gateway,
          session,
          notifyToolsChanged: () => extra.sendNotification({ method: 'notifications/tools/list_changed' }),
          ...(progress ? { progress } : {}),
        }), (text) => this.gateway.maskKnown(text));
      } finally {
        progress?.stop();
        session.endCall();
      }
    });
    this.#sessions.set(session.id, { session, server });
    return { session, server };
  }

  /**
   * End a session: kill the background processes it started (and still runs), then close its
   * protocol server. Safe to call more than once.
   */
  async closeSession(id: string): Promise<void> {
    const entry = this.#sessions.get(id);
    if (!entry || entry.session.closed) return;
    const { session, server } = entry;
    session.markClosed();
    this.#sessions.delete(id);
    await Promise.allSettled(
      session.processIds.map(async (processId) => {
        if (this.gateway.background.get(processId).state !== 'running') return;
        await this.gateway.background.kill(processId, { actor: session.actor });
      }),
    );
    await server.close().catch(() => { /* the transport is gone already */ });
  }

  /** Close every session (killing their background processes). The gateway stays open. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#sessions.keys()].map((id) => this.closeSession(id)));
    await this.#registry?.close();
  }
}

function validateInterval(value: unknown): number {
  if (value === undefined) return DEFAULT_PROGRESS_INTERVAL;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 10 || value > 600_000) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_OPTION',
      `Expected \`progressInterval\` to be a number of milliseconds from 10 to 600000, got ${JSON.stringify(value) ?? String(value)}.`,
      { option: 'progressInterval' },
    );
  }
  return value;
}

/**
 * Creates an MCP server over the gateway in its options.
 */
export function createMcpServer(options: ExecgateMcpOptions): ExecgateMcpServer {
  return new ExecgateMcpServer(options);
}
