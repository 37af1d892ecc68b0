/*
 * The audit records of one run, written in one place: the request, its refusal or start, and
 * how it ended. The request and what follows it go out together (one lock, one write each, one
 * fdatasync), the end on its own once the run has ended. Only unresolved commands and redacted text reach them; a failure's message is
 * redacted with the run's own redactor before it is recorded.
 */
import type { AuditSink } from '../audit/log';
import { getErrorCode, getErrorMessage, isExecgateError } from '../errors';
import type { BackgroundProcess } from './background/types';
import type { NormalizedRequest } from '../plan/options';
import type { SpawnPlan } from '../plan/prepare';
import type { ExecResult } from './result';

export class RunRecords {
  readonly #audit: AuditSink;
  readonly #runId: string;
  readonly #withEnv: boolean;

  constructor(audit: AuditSink, runId: string, options: { env: boolean }) {
    this.#audit = audit;
    this.#runId = runId;
    this.#withEnv = options.env;
  }

  /**
   * Held, where the sink can (AuditSink.hold): it goes out with the run's next record, its start
   * or its refusal, in one turn of the audit lock, and the start's fdatasync covers it.
   */
  requested(request: NormalizedRequest): void {
    const { actor, command, cwd, mode, timeout } = request;
    const fields = { runId: this.#runId, actor, command, cwd, mode, timeout };
    if (this.#audit.hold) this.#audit.hold('exec.request', fields);
    else this.#audit.write('exec.request', fields);
  }

  /** A request refused before anything ran: by the policy (`exec.denied`) or as invalid. */
  refused(request: unknown, error: unknown): void {
    const denied = isExecgateError(error) && error.code === 'EXECGATE_ERR_POLICY_DENIED';
    const fields = (request ?? {}) as { actor?: unknown; command?: unknown };
    this.#audit.write(denied ? 'exec.denied' : 'exec.rejected', {
      runId: this.#runId,
      actor: typeof fields.actor === 'string' ? fields.actor : 'library',
      command: typeof fields.command === 'string' ? fields.command : undefined,
      code: getErrorCode(error),
      ...(denied ? { rule: error.details.rule, reason: error.details.reason, refs: error.details.refs ?? [] } : {}),
      message: getErrorMessage(error),
    });
  }

  /**
   * Written (write(2)) before the spawn; the promise settles once the record is durable as the
   * policy asks (fdatasync off the event loop): the run's program may act only then.
   */
  started(plan: SpawnPlan): Promise<void> {
    const fields = {
      runId: this.#runId,
      actor: plan.request.actor,
      command: plan.displayCommand,
      cwd: plan.cwd,
      mode: plan.request.mode,
      decision: plan.decision,
      refs: plan.auditRefs,
      ...(this.#withEnv ? { env: plan.envReport } : {}),
      sandbox: plan.sandbox,
      network: plan.network,
    };
    if (this.#audit.writeAndSync) return this.#audit.writeAndSync('exec.started', fields);
    this.#audit.write('exec.started', fields);
    return Promise.resolve();
  }

  backgroundStarted(plan: SpawnPlan, started: BackgroundProcess): void {
    this.#audit.write('background.started', { runId: this.#runId, actor: plan.request.actor, command: plan.displayCommand, pid: started.pid, pty: started.pty, outputPath: started.outputPath });
  }

  /**
   * The run's end. It happened whatever the log can take: a record that cannot be written now
   * is kept and written ahead of the next one, and the result says so.
   */
  finished(plan: SpawnPlan, result: ExecResult): ExecResult {
    const { exitCode, signal, timedOut, killed, durationMs, bytes, truncated, redactions } = result;
    const error = this.#end('exec.finished', { runId: this.#runId, actor: plan.request.actor, command: plan.displayCommand, exitCode, signal, timedOut, killed, durationMs, bytes, truncated, redactions });
    if (error === undefined) return result;
    const notice = `The audit log could not record the end of this run (${describeAuditError(error)}); execgate writes that record as soon as the log can be written again.`;
    return { ...result, notices: [...(result.notices ?? []), notice] };
  }

  /** A run that could not be run or waited for; the error thrown stays the run's own. */
  failed(plan: SpawnPlan, error: unknown): void {
    this.#end('exec.failed', {
      runId: this.#runId,
      actor: plan.request.actor,
      command: plan.displayCommand,
      code: getErrorCode(error),
      reason: plan.redactor.redactString(getErrorMessage(error)).text,
    });
  }

  #end(event: string, fields: Record<string, unknown>): Error | undefined {
    if (this.#audit.writeOrDefer) return this.#audit.writeOrDefer(event, fields);
    try {
      this.#audit.write(event, fields);
      return undefined;
    } catch (error) {
      return error as Error;
    }
  }
}

/** `EXECGATE_ERR_AUDIT_IO: ENOSPC`-like words for a notice: the code and the system's reason. */
export function describeAuditError(error: Error): string {
  const errno = (error.cause as NodeJS.ErrnoException | undefined)?.code ?? (error as { details?: { errno?: string } }).details?.errno;
  return `${getErrorCode(error)}${errno ? `: ${errno}` : ''}`;
}
