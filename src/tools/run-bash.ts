/*
 * run_bash (seed 000): a shell command as a tool call, through the gateway's one path, so the
 * policy decides, reference tokens resolve, the environment is sanitized, the process group is
 * contained and every value is redacted, exactly as for any other caller.
 *
 * The seed's shape: a JSON string `{stdout, stderr, exit_code}`, never an exception for a
 * non-zero exit, `exit_code: -1` with a notice in stderr on timeout, and each stream cut at
 * 50 KB with a notice. The gateway keeps 2 x 50 KB per stream, so a stream under 100 KB comes
 * back whole and is cut here; a longer one comes back as head + tail, and its head is exactly
 * the first 50 KB. Either way the full redacted output is kept in a file the notice names.
 */
import { resolve } from 'node:path';
import type { Gateway } from '../gateway';
import type { ExecResult } from '../run/result';
import { cutHead, FullOutput, getSignalStatus } from '../run/output/present';
import { defineSchema, type ChatTool, type ExecutableTool } from './types';

/** Bytes of each stream run_bash returns before cutting (seed 000: 50 KB). */
export const RUN_BASH_MAX_STREAM_BYTES = 51_200;
/** Milliseconds a command may run when the call gives no timeout (seed 000: 30 s). */
export const RUN_BASH_DEFAULT_TIMEOUT = 30_000;

const SCHEMA = defineSchema(
  'run_bash',
  'Run a shell command with bash and return a JSON string with `stdout`, `stderr` and `exit_code`. A non-zero exit code is returned, not raised. On timeout the command and everything it started are killed, and `exit_code` is -1. Each stream is cut at 50 KB. Secrets can be passed as `<<secret:NAME>>`; their values never appear in the result.',
  {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The shell command.' },
      cwd: { type: 'string', description: 'Working directory (default: the current working directory).' },
      env: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'Environment variables set for the command, over the inherited ones.',
      },
      timeout: { type: 'number', exclusiveMinimum: 0, description: 'Timeout in milliseconds (default 30000).' },
    },
    required: ['command'],
    additionalProperties: false,
  },
);

/**
 * Options of {@link RunBashTool}: the gateway (or a function that creates it), whether the tool closes it, the default working directory.
 */
export interface RunBashOptions {
  /** The gateway commands run through, or a function that creates it at the first call. */
  gateway: Gateway | (() => Gateway);
  /** Close the gateway in `close()` (set when the tool created it). */
  ownsGateway?: boolean;
  /** Default working directory; default `process.cwd()` at the time of the call. */
  cwd?: string;
}

/**
 * What `run_bash` answers: redacted stdout and stderr, the exit code and the working directory
 * after the run.
 */
export interface RunBashResult {
  stdout: string;
  stderr: string;
  exit_code: number;
}

/**
 * The `run_bash` tool: runs a command through a gateway (policy, tokens, sandbox, redaction) and
 * answers its redacted output.
 */
export class RunBashTool implements ExecutableTool {
  readonly name = 'run_bash';
  readonly #gatewayOption: Gateway | (() => Gateway);
  #gateway: Gateway | undefined;
  readonly #owns: boolean;
  readonly #cwd: string | undefined;

  constructor(options: RunBashOptions) {
    this.#gatewayOption = options.gateway;
    this.#owns = options.ownsGateway === true;
    this.#cwd = options.cwd;
  }

  getSchema(): ChatTool {
    return SCHEMA;
  }

  async execute(args: Record<string, unknown>): Promise<string> {
    const gateway = this.#getGateway();
    const base = this.#cwd ?? process.cwd();
    const result = await gateway.exec({
      command: args.command as string,
      cwd: args.cwd === undefined ? base : resolve(base, args.cwd as string),
      ...(args.env === undefined ? {} : { env: args.env as Record<string, string> }),
      timeout: (args.timeout as number | undefined) ?? RUN_BASH_DEFAULT_TIMEOUT,
      maxOutput: 2 * RUN_BASH_MAX_STREAM_BYTES,
      actor: 'tool:run_bash',
    });
    return JSON.stringify(formatRunBashResult(result, gateway.home));
  }

  async close(): Promise<void> {
    if (this.#owns && this.#gateway) await this.#gateway.close();
  }

  #getGateway(): Gateway {
    this.#gateway ??= typeof this.#gatewayOption === 'function' ? this.#gatewayOption() : this.#gatewayOption;
    return this.#gateway;
  }
}

/** The seed 000 shape of an ExecResult. `home` is where a full-output file goes when one is needed. */
export function formatRunBashResult(result: ExecResult, home: string): RunBashResult {
  const full = new FullOutput(result, home);
  const where = (): string | undefined => full.getPath(() => result.output);
  const stdout = cutHead(result.stdout, result.bytes.stdout, RUN_BASH_MAX_STREAM_BYTES, 'stdout', where);
  let stderr = cutHead(result.stderr, result.bytes.stderr, RUN_BASH_MAX_STREAM_BYTES, 'stderr', where);
  if (result.killed) {
    // Timeout, or the gateway closed: say so where a human or a model reading stderr looks.
    stderr += `${stderr === '' || stderr.endsWith('\n') ? '' : '\n'}[run_bash: ${result.message}]\n`;
  }
  for (const notice of result.notices ?? []) stderr += `${stderr === '' || stderr.endsWith('\n') ? '' : '\n'}[run_bash: ${notice}]\n`;
  // Killed by execgate: -1 (seed 000); by a signal it did not send: 128 + N.
  const exitCode = result.killed ? -1 : (result.exitCode ?? getSignalStatus(result.signal) ?? -1);
  return { stdout, stderr, exit_code: exitCode };
}
