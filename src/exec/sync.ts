/*
 * The sync executor: pipes, no TTY, stdin from /dev/null. It adapts I/O only; everything
 * about what runs and with which environment was settled by preparePlan.
 *
 * Reading after exit is bounded: when the shell has exited but a process it left behind still
 * holds a pipe open, the call waits at most `drainTimeout` before it stops reading, instead of
 * hanging until that process exits.
 */
import { ExecgateError, isExecgateError } from '../errors';
import { OutputCollector } from './collect';
import type { SpawnPlan } from './prepare';
import type { ExecResult } from './result';
import { directSpawner } from './spawner/direct';
import type { SpawnedProcess, Spawner } from './spawner/types';
import { isGroupAlive, terminateRun } from './terminate';

export type OutputListener = (stream: 'stdout' | 'stderr', chunk: Buffer) => void;

export interface RunHooks {
  /** State directory; full-output files go to `<home>/runs/`. */
  readonly home: string;
  /** Receives redacted bytes as they become safe to emit (the CLI streams them live). */
  readonly onOutput?: OutputListener;
  /** Aborting stops the run like a timeout does (gateway shutdown). */
  readonly signal?: AbortSignal;
  /** Called with the pid once the shell has started. */
  readonly onSpawn?: (pid: number) => void;
  /** What starts the process (see exec/spawner); default: child_process.spawn in this process. */
  readonly spawner?: Spawner;
}

export function spawnFailed(plan: SpawnPlan, error: unknown): ExecgateError {
  const code = (error as NodeJS.ErrnoException)?.code ?? 'unknown';
  return new ExecgateError(
    'EXECGATE_ERR_SPAWN_FAILED',
    `Could not start \`${plan.shell}\` in \`${plan.cwd}\` (${code}). Check that the shell exists and is executable.`,
    { shell: plan.shell, errno: code },
    { cause: error },
  );
}

export async function runSync(plan: SpawnPlan, hooks: RunHooks): Promise<ExecResult> {
  let child: SpawnedProcess;
  try {
    child = await (hooks.spawner ?? directSpawner).spawn({ shell: plan.shell, args: plan.args, env: plan.env, cwd: plan.cwd, stdin: 'ignore' });
  } catch (error) {
    throw isExecgateError(error) ? error : spawnFailed(plan, error);
  }
  return collectSync(plan, hooks, child);
}

function collectSync(plan: SpawnPlan, hooks: RunHooks, child: SpawnedProcess): Promise<ExecResult> {
  return new Promise<ExecResult>((resolve, reject) => {
    const pid = child.pid;
    hooks.onSpawn?.(pid);

    const { limits } = plan;
    const collector = new OutputCollector(plan, hooks.home, hooks.onOutput);
    const redactors = { stdout: plan.redactor.createStream(), stderr: plan.redactor.createStream() };
    const emit = (stream: 'stdout' | 'stderr', bytes: Buffer): void => collector.push(stream, bytes);

    let timedOut = false;
    let shutdown = false;
    let terminating: Promise<unknown> | undefined;
    const stop = (): void => {
      terminating ??= terminateRun({ pgid: pid, runId: plan.runId, grace: limits.grace });
    };
    const timer = limits.timeout > 0
      ? setTimeout(() => { timedOut = true; stop(); }, limits.timeout)
      : undefined;
    const onAbort = (): void => { shutdown = true; stop(); };
    hooks.signal?.addEventListener('abort', onAbort, { once: true });
    if (hooks.signal?.aborted) onAbort();

    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let exited = false;
    let openStreams = 2;
    let drainTimer: NodeJS.Timeout | undefined;
    let drained = true;
    let finished = false;

    const onStreamEnd = (): void => {
      openStreams -= 1;
      if (openStreams === 0 && exited) void finish();
    };
    for (const name of ['stdout', 'stderr'] as const) {
      const stream = child[name];
      stream.on('data', (chunk: Buffer) => emit(name, redactors[name].push(chunk)));
      stream.once('close', onStreamEnd);
      stream.on('error', () => { /* reported through exit */ });
    }

    const onLost = (error: unknown): void => {
      // Spawn errors after a pid was assigned are rare (exec failure surfaces as exit 126/127);
      // with a spawn helper, its death leaves the run's end unknowable. Either way the run is
      // stopped like a timeout would stop it, and fails.
      if (exited) return;
      exited = true;
      finished = true;
      hooks.signal?.removeEventListener('abort', onAbort);
      if (timer) clearTimeout(timer);
      stop();
      child.stdout.destroy();
      child.stderr.destroy();
      const failure = isExecgateError(error) ? error : spawnFailed(plan, error);
      void (terminating as Promise<unknown>).then(() => reject(failure), () => reject(failure));
    };

    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      if (timer) clearTimeout(timer);
      if (openStreams === 0) {
        void finish();
        return;
      }
      drainTimer = setTimeout(() => {
        drained = false;
        child.stdout.destroy();
        child.stderr.destroy();
        void finish();
      }, limits.drainTimeout);
    };
    child.exit.then(({ code, signal }) => onExit(code, signal), onLost);

    const finish = async (): Promise<void> => {
      if (finished) return;
      finished = true;
      if (drainTimer) clearTimeout(drainTimer);
      hooks.signal?.removeEventListener('abort', onAbort);
      emit('stdout', redactors.stdout.flush());
      emit('stderr', redactors.stderr.flush());
      try {
        if (terminating) {
          await terminating;
        } else if (plan.request.leftovers === 'kill' && (!drained || isGroupAlive(pid))) {
          // The shell is gone; whatever it left behind in its group, or whatever still held
          // its pipes, is ended the same way a timeout would end it.
          await terminateRun({ pgid: pid, runId: plan.runId, grace: limits.grace });
        }
      } catch {
        // Containment is best effort past this point; the result still reports the exit.
      }
      resolve(collector.finish({
        exitCode,
        signal: exitSignal,
        timedOut,
        shutdown,
        redactions: redactors.stdout.count + redactors.stderr.count,
      }));
    };
  });
}
