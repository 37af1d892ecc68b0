/*
 * The companion tools of `bash` in background mode: status, output paging, stdin, kill, list.
 * Every id is checked against the calling session first; an id of another session (or of a
 * process this server did not start) gets the same answer as an unknown one, so sessions cannot
 * probe each other.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { formatRefusals } from '../../egress/reasons';
import { ExecgateError } from '../../errors';
import type { BackgroundProcess, BackgroundStatus, OutputSlice } from '../../run/background/types';
import { MCP_OUTPUT_LIMIT } from '../truncate';
import type { McpSession } from '../session';
import { errorResult, textResult, type McpTool, type McpToolContext } from './types';

const ID = { type: 'string', description: 'The process id returned by bash in background mode (run_...).' };

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGKILL', 'SIGUSR1', 'SIGUSR2'] as const;

/** Longest wait process_status offers, in seconds. */
const MAX_WAIT = 60;
/** Bytes process_output returns by default, and at most. */
const DEFAULT_PAGE = 64 * 1024;

const PROCESS_PROPERTIES = {
  id: { type: 'string' },
  command: { type: 'string' },
  state: { type: 'string', enum: ['running', 'exited', 'killed', 'timed_out', 'failed'] },
  pid: { type: 'integer' },
  pgid: { type: 'integer' },
  exit_code: { type: ['integer', 'null'] },
  signal: { type: ['string', 'null'] },
  started_at: { type: 'string' },
  ended_at: { type: ['string', 'null'] },
  cwd: { type: 'string' },
  output_path: { type: 'string' },
  reason: { type: 'string' },
  egress: {
    type: 'array',
    description: 'The run\'s egress decisions so far: host, port, allowed or refused, and why.',
    items: {
      type: 'object',
      properties: { host: { type: 'string' }, port: { type: 'integer' }, via: { type: 'string' }, allowed: { type: 'boolean' }, rule: { type: 'string' }, reason: { type: 'string' } },
      required: ['host', 'port', 'allowed', 'rule'],
    },
  },
};
const PROCESS_REQUIRED = ['id', 'command', 'state', 'pid', 'pgid', 'exit_code', 'signal', 'started_at', 'ended_at', 'cwd', 'output_path'];

const SLICE_SCHEMA = {
  type: 'object',
  properties: {
    text: { type: 'string' },
    offset: { type: 'integer' },
    next_offset: { type: 'integer' },
    total_bytes: { type: 'integer' },
    eof: { type: 'boolean' },
  },
  required: ['text', 'offset', 'next_offset', 'total_bytes', 'eof'],
};

function toProcessFields(shown: BackgroundProcess): Record<string, unknown> {
  return {
    id: shown.id,
    command: shown.command,
    state: shown.state,
    pid: shown.pid,
    pgid: shown.pgid,
    exit_code: shown.exitCode,
    signal: shown.signal,
    started_at: shown.startedAt,
    ended_at: shown.endedAt,
    cwd: shown.cwd,
    output_path: shown.outputPath,
    ...(shown.reason ? { reason: shown.reason } : {}),
    ...(shown.egress ? { egress: shown.egress } : {}),
  };
}

function toSliceFields(slice: OutputSlice): Record<string, unknown> {
  return { text: slice.text, offset: slice.offset, next_offset: slice.nextOffset, total_bytes: slice.totalBytes, eof: slice.eof };
}

function describeState(shown: BackgroundProcess): string {
  const ending = shown.state === 'running'
    ? 'running'
    : shown.state === 'exited'
      ? `exited with code ${shown.exitCode}`
      : `${shown.state.replace('_', ' ')}${shown.signal ? ` (${shown.signal})` : ''}${shown.reason ? `: ${shown.reason}` : ''}`;
  return `${shown.id}: ${ending}; pid ${shown.pid}, process group ${shown.pgid}`;
}

/** The calling session's process, or the same refusal an unknown id gets. */
function requireOwned(session: McpSession, id: unknown): string {
  if (!session.owns(id)) {
    const shown = typeof id === 'string' ? id.slice(0, 80) : String(id);
    throw new ExecgateError(
      'EXECGATE_ERR_BACKGROUND_NOT_FOUND',
      `No background process of this session has the id \`${shown}\`. List them with process_list.`,
      { id: shown },
    );
  }
  return id as string;
}

abstract class ProcessTool implements McpTool {
  abstract readonly name: string;
  abstract readonly inputSchema: Tool['inputSchema'];
  protected abstract readonly title: string;
  protected abstract readonly description: string;
  protected abstract readonly outputSchema: Tool['outputSchema'];
  protected readonly readOnly: boolean = true;

  describe(_session: McpSession): Tool {
    return {
      name: this.name,
      title: this.title,
      description: this.description,
      inputSchema: this.inputSchema,
      outputSchema: this.outputSchema,
      annotations: { title: this.title, readOnlyHint: this.readOnly, destructiveHint: !this.readOnly, openWorldHint: false },
    };
  }

  async call(args: Record<string, unknown>, context: McpToolContext): Promise<CallToolResult> {
    try {
      return await this.run(args, context);
    } catch (error) {
      return errorResult(error);
    }
  }

  protected abstract run(args: Record<string, unknown>, context: McpToolContext): Promise<CallToolResult>;
}

export class ProcessStatusTool extends ProcessTool {
  readonly name = 'process_status';
  protected readonly title = 'Background process status';
  protected readonly description =
    'State of a background process started by bash (running, exited, killed, timed_out), its exit code, runtime, ' +
    `and the last 4 KB of its output. Optionally wait up to ${MAX_WAIT} seconds for it to end first.`;
  readonly inputSchema = {
    type: 'object' as const,
    properties: {
      id: ID,
      wait: { type: 'number', minimum: 0, maximum: MAX_WAIT, description: 'Seconds to wait for the process to end before answering (default 0).' },
    },
    required: ['id'],
    additionalProperties: false,
  };
  protected readonly outputSchema = {
    type: 'object' as const,
    properties: { ...PROCESS_PROPERTIES, runtime_ms: { type: 'number' }, output: SLICE_SCHEMA },
    required: [...PROCESS_REQUIRED, 'runtime_ms', 'output'],
  };

  protected async run(args: Record<string, unknown>, { gateway, session, progress }: McpToolContext): Promise<CallToolResult> {
    const id = requireOwned(session, args.id);
    const wait = (args.wait as number | undefined) ?? 0;
    if (progress) progress.label = `waiting for ${id} to end`;
    if (wait > 0) await gateway.background.wait(id, Math.round(wait * 1000));
    const status: BackgroundStatus = gateway.background.status(id);
    const { output } = status;
    const header = `${describeState(status)}; runtime ${(status.runtimeMs / 1000).toFixed(1)} s\ncommand: ${status.command}\n`;
    const what = output.totalBytes === 0
      ? 'no output yet'
      : output.offset === 0 ? `output (${output.totalBytes} bytes):` : `last ${output.totalBytes - output.offset} of ${output.totalBytes} bytes of output:`;
    let text = `${header}${what}${output.totalBytes === 0 ? '' : `\n${output.text}`}`;
    // As the bash tool ends: what the proxy refused, so that the agent can fix its own request.
    for (const line of formatRefusals(status.egress ?? [])) text += `${text.endsWith('\n') ? '' : '\n'}${line}`;
    return textResult(text, { ...toProcessFields(status), runtime_ms: status.runtimeMs, output: toSliceFields(output) });
  }
}

export class ProcessOutputTool extends ProcessTool {
  readonly name = 'process_output';
  protected readonly title = 'Read background process output';
  protected readonly description =
    'Read the output of a background process by byte offset. Start at offset 0 and continue with next_offset until eof is true ' +
    '(eof means the process has ended and everything was read; while it runs, call again later for more).';
  readonly inputSchema = {
    type: 'object' as const,
    properties: {
      id: ID,
      offset: { type: 'integer', minimum: 0, description: 'Byte offset to read from (default 0).' },
      length: { type: 'integer', minimum: 1, maximum: MCP_OUTPUT_LIMIT, description: `Bytes to read (default ${DEFAULT_PAGE}, at most ${MCP_OUTPUT_LIMIT}).` },
    },
    required: ['id'],
    additionalProperties: false,
  };
  protected readonly outputSchema = SLICE_SCHEMA as Tool['outputSchema'];

  protected async run(args: Record<string, unknown>, { gateway, session }: McpToolContext): Promise<CallToolResult> {
    const id = requireOwned(session, args.id);
    const offset = (args.offset as number | undefined) ?? 0;
    const length = (args.length as number | undefined) ?? DEFAULT_PAGE;
    const { output } = gateway.background.status(id, { offset, length });
    const where = output.eof
      ? `[execgate: bytes ${output.offset}-${output.nextOffset} of ${output.totalBytes}; end of output]`
      : `[execgate: bytes ${output.offset}-${output.nextOffset} of ${output.totalBytes} so far; continue with offset ${output.nextOffset}]`;
    const text = `${output.text}${output.text === '' || output.text.endsWith('\n') ? '' : '\n'}${where}`;
    return textResult(text, toSliceFields(output));
  }
}

export class ProcessWriteTool extends ProcessTool {
  readonly name = 'process_write';
  protected readonly title = 'Write to a background process';
  protected override readonly readOnly = false;
  protected readonly description =
    'Write text to the stdin of a background process (answer a prompt: include the trailing "\\n"). ' +
    '<<secret:NAME>> references in the data are resolved by execgate and masked in the process output (a secret the policy binds to hosts only if the command that started the process uses it too). Set end to close stdin afterwards.';
  readonly inputSchema = {
    type: 'object' as const,
    properties: {
      id: ID,
      data: { type: 'string', description: 'The text to write.' },
      end: { type: 'boolean', description: 'Close stdin after writing (end of input).' },
    },
    required: ['id', 'data'],
    additionalProperties: false,
  };
  protected readonly outputSchema = {
    type: 'object' as const,
    properties: { id: { type: 'string' }, bytes: { type: 'integer' }, ended_input: { type: 'boolean' } },
    required: ['id', 'bytes', 'ended_input'],
  };

  protected async run(args: Record<string, unknown>, { gateway, session }: McpToolContext): Promise<CallToolResult> {
    const id = requireOwned(session, args.id);
    const end = args.end === true;
    const { bytes } = await gateway.background.write(id, args.data as string, { end, actor: session.actor });
    return textResult(`Wrote ${bytes} bytes to ${id}${end ? ' and closed its input' : ''}.`, { id, bytes, ended_input: end });
  }
}

export class ProcessKillTool extends ProcessTool {
  readonly name = 'process_kill';
  protected readonly title = 'Stop a background process';
  protected override readonly readOnly = false;
  protected readonly description =
    'Stop a background process and everything it started: the signal (default SIGTERM) goes to its process group, ' +
    'then SIGKILL after the grace period.';
  readonly inputSchema = {
    type: 'object' as const,
    properties: {
      id: ID,
      signal: { type: 'string', enum: [...SIGNALS], description: 'First signal sent to the process group (default SIGTERM).' },
      grace: { type: 'number', minimum: 0, maximum: 60, description: 'Seconds before SIGKILL (default: the policy grace period).' },
    },
    required: ['id'],
    additionalProperties: false,
  };
  protected readonly outputSchema = { type: 'object' as const, properties: PROCESS_PROPERTIES, required: PROCESS_REQUIRED };

  protected async run(args: Record<string, unknown>, { gateway, session }: McpToolContext): Promise<CallToolResult> {
    const id = requireOwned(session, args.id);
    const grace = args.grace as number | undefined;
    const ended = await gateway.background.kill(id, {
      ...(args.signal !== undefined ? { signal: args.signal as NodeJS.Signals } : {}),
      ...(grace !== undefined ? { grace: Math.round(grace * 1000) } : {}),
      actor: session.actor,
    });
    return textResult(describeState(ended), toProcessFields(ended));
  }
}

export class ProcessListTool extends ProcessTool {
  readonly name = 'process_list';
  protected readonly title = 'List background processes';
  protected readonly description = 'The background processes this session started, with their state and output file.';
  readonly inputSchema = { type: 'object' as const, properties: {}, additionalProperties: false };
  protected readonly outputSchema = {
    type: 'object' as const,
    properties: {
      processes: { type: 'array', items: { type: 'object', properties: PROCESS_PROPERTIES, required: PROCESS_REQUIRED } },
    },
    required: ['processes'],
  };

  protected async run(_args: Record<string, unknown>, { gateway, session }: McpToolContext): Promise<CallToolResult> {
    const processes: BackgroundProcess[] = [];
    for (const id of session.processIds) {
      try {
        processes.push(gateway.background.get(id));
      } catch {
        // Removed meanwhile (its record was deleted): nothing to show.
      }
    }
    const text = processes.length === 0
      ? 'No background processes in this session.'
      : processes.map((shown) => `${describeState(shown)}\n  command: ${shown.command}\n  output: ${shown.outputPath}`).join('\n');
    return textResult(text, { processes: processes.map(toProcessFields) });
  }
}

export function createProcessTools(): McpTool[] {
  return [new ProcessStatusTool(), new ProcessOutputTool(), new ProcessWriteTool(), new ProcessKillTool(), new ProcessListTool()];
}
