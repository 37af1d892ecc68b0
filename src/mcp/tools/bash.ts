/*
 * The MCP `bash` tool (seeds 001 and 002 merged). Foreground runs go through the gateway in
 * sync mode (pipes, no TTY, stdin from /dev/null) in the session's tracked directory; the
 * sentinel prologue reports where the command left the shell. Background runs start through
 * the gateway and belong to the session.
 *
 * Output: the gateway keeps up to OUTPUT_CAPTURE bytes per stream (twice that combined), which
 * covers seed 002's 128 KB plus the sentinel block, so output under the limit comes back whole
 * and longer output still has the first and last 4 KB at hand for the cut made here.
 */
import { statSync } from 'node:fs';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { formatRefusals } from '../../egress/reasons';
import { ExecgateError, isExecgateError } from '../../errors';
import type { ExecResult } from '../../run/result';
import { createSentinel, stripSentinel, stripSentinelFromFile, takeSentinel } from '../sentinel';
import { cutMiddle, FullOutput, MIDDLE_CUT_KEEP, MIDDLE_CUT_LIMIT } from '../../run/output/present';
import type { McpSession } from '../session';
import { errorResult, textResult, type McpTool, type McpToolContext } from './types';

/** Seconds when neither `timeout` nor `mode` is given (seed 001). */
export const BASH_DEFAULT_TIMEOUT = 120;
/** Seconds for `mode: default` and `mode: slow` (seed 002). */
export const BASH_MODE_TIMEOUTS = Object.freeze({ default: 30, slow: 900 });

const OUTPUT_CAPTURE = MIDDLE_CUT_LIMIT + 8 * 1024;

const INPUT_SCHEMA = {
  type: 'object' as const,
  properties: {
    command: { type: 'string', minLength: 1, description: 'The shell command, run with bash -c.' },
    timeout: {
      type: 'number',
      exclusiveMinimum: 0,
      description: `Seconds before the command and every process it started are killed. Default ${BASH_DEFAULT_TIMEOUT}; with mode "default" ${BASH_MODE_TIMEOUTS.default}, with mode "slow" ${BASH_MODE_TIMEOUTS.slow}. When both are given, timeout wins. The server's policy may impose a lower maximum.`,
    },
    mode: {
      type: 'string',
      enum: ['default', 'slow', 'background'],
      description: '"default": foreground, 30 s timeout. "slow": foreground, 15 min timeout (builds, test suites). "background": start the command detached and return at once with its process id and output file (servers, watchers); manage it with the process_* tools.',
    },
  },
  required: ['command'],
  additionalProperties: false,
};

const OUTPUT_SCHEMA = {
  type: 'object' as const,
  properties: {
    stdout: { type: 'string' },
    stderr: { type: 'string' },
    exit_code: { type: ['integer', 'null'], description: 'null when the process was ended by a signal, or for a background start' },
    signal: { type: ['string', 'null'] },
    cwd: { type: 'string', description: 'The working directory for the next command' },
    timed_out: { type: 'boolean' },
    truncated: { type: 'boolean' },
    full_output_path: { type: 'string' },
    notices: { type: 'array', items: { type: 'string' }, description: 'What went wrong around the run though it ran (its full output could not be saved, its end not yet recorded)' },
    unknown_refs: {
      type: 'array',
      description: 'References no secret source knew: each was passed on as its text. `did_you_mean` lists known references with a close name.',
      items: { type: 'object', properties: { ref: { type: 'string' }, did_you_mean: { type: 'array', items: { type: 'string' } } }, required: ['ref', 'did_you_mean'] },
    },
    process_id: { type: 'string' },
    pid: { type: 'integer' },
    pgid: { type: 'integer' },
    output_path: { type: 'string' },
    state: { type: 'string' },
  },
  required: ['stdout', 'stderr', 'exit_code', 'cwd', 'timed_out', 'truncated'],
};

const CWD_GONE: ReadonlySet<string> = new Set(['EXECGATE_ERR_CWD_NOT_FOUND', 'EXECGATE_ERR_CWD_NOT_DIRECTORY']);

export class BashTool implements McpTool {
  readonly name = 'bash';
  readonly inputSchema = INPUT_SCHEMA;

  describe(session: McpSession): Tool {
    return {
      name: this.name,
      title: 'Run a shell command',
      description:
        `Run a shell command with bash (no TTY, stdin empty) through execgate. Current working directory: ${session.cwd}\n` +
        'The working directory persists between calls: `cd` in one command applies to the next. ' +
        'Returns the combined stdout and stderr (past 128 KB the middle is cut, keeping the first and last 4 KB), ' +
        'and structured stdout, stderr, exit_code and cwd. A non-zero exit code is a normal result. ' +
        'On timeout the command and every process it started are killed. ' +
        'Pass secrets as <<secret:NAME>>: the value is resolved just before the command runs and never appears in results. ' +
        'Commands must not wait for input; use mode "background" and process_write for programs that prompt.',
      inputSchema: INPUT_SCHEMA,
      outputSchema: OUTPUT_SCHEMA,
      annotations: { title: 'Run a shell command', readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    };
  }

  async call(args: Record<string, unknown>, context: McpToolContext): Promise<CallToolResult> {
    const command = args.command as string;
    const mode = (args.mode as 'default' | 'slow' | 'background' | undefined);
    const seconds = args.timeout as number | undefined;
    if (mode === 'background') return this.#start(command, seconds, context);
    const timeout = Math.max(1, Math.round((seconds ?? (mode ? BASH_MODE_TIMEOUTS[mode] : BASH_DEFAULT_TIMEOUT)) * 1000));
    return this.#run(command, timeout, context);
  }

  async #run(command: string, timeout: number, context: McpToolContext): Promise<CallToolResult> {
    const { gateway, session } = context;
    const sentinel = createSentinel();
    const cwd = session.cwd;
    const { progress } = context;
    // The sentinel block may be the last line seen when a tick fires; it never shows.
    progress?.hide(sentinel.marker);
    let result: ExecResult;
    try {
      result = await gateway.exec({
        command,
        cwd,
        timeout,
        maxOutput: OUTPUT_CAPTURE,
        actor: session.actor,
        prologue: sentinel.prologue,
      }, {
        ...(context.signal ? { signal: context.signal } : {}),
        ...(progress ? { onOutput: (_stream, chunk) => progress.observe(chunk) } : {}),
      });
    } catch (error) {
      return this.#failed(error, context);
    }
    const { marker } = sentinel;
    const stdout = takeSentinel(result.stdout, marker);
    const stderr = stripSentinel(result.stderr, marker);
    const output = stripSentinel(result.output, marker);
    if (result.fullOutputPath) stripSentinelFromFile(result.fullOutputPath, marker);

    // Only a run that ended on its own moves the directory (a killed one may have printed a
    // block from its EXIT trap).
    const finished = !result.killed && result.exitCode !== null;
    // A directory the next run could not work in (the host's temp directory, which a run sees a
    // private copy of; a hidden path) is not followed: the session stays where it was, and says so.
    let stayed: string | undefined;
    if (finished && stdout.cwd !== undefined && stdout.cwd !== cwd && isDirectory(stdout.cwd)) {
      if (canWorkIn(gateway, stdout.cwd)) {
        session.cwd = stdout.cwd;
        await context.notifyToolsChanged().catch(() => { /* the client went away; the result still says */ });
      } else {
        stayed = stdout.cwd;
      }
    }

    const totals = { stdout: result.bytes.stdout - stdout.removedBytes, stderr: result.bytes.stderr };
    const combinedTotal = totals.stdout + totals.stderr;
    // Seed 002's budget is for the whole output: past it, the text and the structured streams
    // are each cut to their first and last 4 KB, never two full copies of a large output, and
    // every view names the one file holding it all.
    const full = new FullOutput(result, gateway.home);
    const fullOutputPath = combinedTotal > MIDDLE_CUT_LIMIT ? full.getPath(() => output) : result.fullOutputPath;
    const cut = (text: string, total: number): string | undefined =>
      combinedTotal > MIDDLE_CUT_LIMIT ? cutMiddle(text, total, fullOutputPath, MIDDLE_CUT_KEEP * 2) : undefined;
    const shownOutput = cut(output, combinedTotal);
    const shownStdout = cut(stdout.text, totals.stdout);
    const shownStderr = cut(stderr, totals.stderr);

    let text = shownOutput ?? output;
    const ending = describeEnding(result);
    if (ending) text += `${text === '' || text.endsWith('\n') ? '' : '\n'}${ending}`;
    if (stayed !== undefined) {
      text += `${text === '' || text.endsWith('\n') ? '' : '\n'}[execgate: the working directory stays \`${session.cwd}\`: \`${stayed}\` is not one a run can work in (it lies in the host's temp directory or a hidden path)]`;
    }
    // A refused connection often shows in the client only as `CONNECT tunnel failed, response
    // 403`: the reason, said last, is what lets an agent fix its own request.
    for (const line of formatRefusals(result.egress)) text += `${text === '' || text.endsWith('\n') ? '' : '\n'}${line}`;
    for (const notice of result.notices ?? []) text += `${text === '' || text.endsWith('\n') ? '' : '\n'}[execgate: ${notice}]`;
    // A mistyped name is a run that did something else than meant: say so where the agent reads.
    const unknown = result.refs.filter((ref) => !ref.found);
    for (const ref of unknown) text += `${text === '' || text.endsWith('\n') ? '' : '\n'}${describeUnknownRef(ref)}`;
    if (text === '') text = '(no output)';

    return textResult(text, {
      stdout: shownStdout ?? stdout.text,
      stderr: shownStderr ?? stderr,
      exit_code: result.exitCode,
      signal: result.signal,
      cwd: session.cwd,
      timed_out: result.timedOut,
      truncated: shownOutput !== undefined || shownStdout !== undefined || shownStderr !== undefined,
      ...(fullOutputPath ? { full_output_path: fullOutputPath } : {}),
      ...(result.notices ? { notices: result.notices } : {}),
      ...(unknown.length > 0 ? { unknown_refs: unknown.map((ref) => ({ ref: ref.ref, did_you_mean: [...(ref.suggestions ?? [])] })) } : {}),
    });
  }

  async #start(command: string, seconds: number | undefined, context: McpToolContext): Promise<CallToolResult> {
    const { gateway, session } = context;
    try {
      const started = await gateway.exec({
        command,
        mode: 'background',
        cwd: session.cwd,
        actor: session.actor,
        ...(seconds !== undefined ? { timeout: Math.max(1, Math.round(seconds * 1000)) } : {}),
      });
      session.adopt(started.id);
      if (session.closed) {
        // The session ended while the process was starting: nobody can reach it any more.
        await gateway.background.kill(started.id, { actor: session.actor }).catch(() => undefined);
      }
      const text =
        `Started background process ${started.id} (pid ${started.pid}, process group ${started.pgid}).\n` +
        `Output file: ${started.outputPath}\n` +
        'Check it with process_status or process_output, answer prompts with process_write, ' +
        `and stop it with process_kill (or \`kill -9 -${started.pgid}\`).`;
      return textResult(text, {
        stdout: '',
        stderr: '',
        exit_code: null,
        signal: null,
        cwd: session.cwd,
        timed_out: false,
        truncated: false,
        process_id: started.id,
        pid: started.pid,
        pgid: started.pgid,
        output_path: started.outputPath,
        state: started.state,
      });
    } catch (error) {
      return this.#failed(error, context);
    }
  }

  async #failed(error: unknown, context: McpToolContext): Promise<CallToolResult> {
    const { session } = context;
    // The tracked directory was removed (by this session or anything else), or became one the
    // sandbox refuses: fall back to the starting directory so the session is not stuck, and say so.
    if (isExecgateError(error) && (CWD_GONE.has(error.code) || error.code === 'EXECGATE_ERR_SANDBOX_PATH' && error.details?.cwd !== undefined) && session.cwd !== session.workdir) {
      const gone = session.cwd;
      session.cwd = session.workdir;
      await context.notifyToolsChanged().catch(() => { /* see above */ });
      return errorResult(new ExecgateError(
        error.code,
        `${error.message} The working directory \`${gone}\` ${CWD_GONE.has(error.code) ? 'is gone' : 'cannot be worked in'}; it was reset to \`${session.workdir}\`. Nothing was run.`,
        { ...error.details },
      ));
    }
    return errorResult(error);
  }
}

function canWorkIn(gateway: McpToolContext['gateway'], cwd: string): boolean {
  try {
    gateway.checkWorkingDirectory(cwd);
    return true;
  } catch {
    return false;
  }
}

function describeUnknownRef(ref: ExecResult['refs'][number]): string {
  const close = ref.suggestions ?? [];
  return `[execgate: no secret source knows ${ref.ref}; it was passed on as written${close.length > 0 ? ` (did you mean ${close.join(' or ')}?)` : ''}]`;
}

function describeEnding(result: ExecResult): string | undefined {
  if (result.killed) return `[execgate: ${result.message}]`;
  if (result.signal) return `[killed by ${result.signal}]`;
  if (result.exitCode !== 0) return `[exit code: ${result.exitCode}]`;
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
