/*
 * The PTY executor: the same prepared plan as sync mode, run on a pseudo-terminal. The
 * terminal merges stdout and stderr, so everything is reported as stdout. Redaction runs on
 * the terminal stream; with `ansi: 'strip'` escape sequences are removed first, so a value
 * that a program printed with colour codes inside it is still caught.
 */
import type { SpawnPlan } from './prepare';
import { AnsiStripper } from './ansi';
import { OutputCollector } from './collect';
import type { ExecResult } from './result';
import type { RunHooks } from './sync';
import { getSignalName, spawnPty } from './pty-spawn';
import { isGroupAlive, terminateRun } from './terminate';

/** After exit, output still in the terminal buffer arrives within a few ms; stop once it is quiet. */
const QUIET_AFTER_EXIT_MS = 30;

export function runPty(plan: SpawnPlan, hooks: RunHooks): Promise<ExecResult> {
  return new Promise<ExecResult>((resolve, reject) => {
    let term: ReturnType<typeof spawnPty>;
    try {
      term = spawnPty(plan);
    } catch (error) {
      reject(error);
      return;
    }
    const pid = term.pid;
    hooks.onSpawn?.(pid);
    const { limits } = plan;
    const collector = new OutputCollector(plan, hooks.home, hooks.onOutput);
    const redactor = plan.redactor.createStream();
    const stripper = plan.request.ansi === 'strip' ? new AnsiStripper() : undefined;
    const take = (chunk: Buffer): void => {
      const text = stripper ? stripper.push(chunk) : chunk;
      collector.push('stdout', redactor.push(text));
    };

    let timedOut = false;
    let shutdown = false;
    let terminating: Promise<unknown> | undefined;
    const stop = (): void => {
      terminating ??= terminateRun({ pgid: pid, runId: plan.runId, grace: limits.grace });
    };
    const timer = limits.timeout > 0 ? setTimeout(() => { timedOut = true; stop(); }, limits.timeout) : undefined;
    const onAbort = (): void => { shutdown = true; stop(); };
    hooks.signal?.addEventListener('abort', onAbort, { once: true });
    if (hooks.signal?.aborted) onAbort();

    let lastData = Date.now();
    const dataSubscription = term.onData((data: string | Buffer) => {
      lastData = Date.now();
      take(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
    });

    term.onExit(({ exitCode, signal }) => {
      if (timer) clearTimeout(timer);
      const exitedAt = Date.now();
      const settle = async (): Promise<void> => {
        while (Date.now() - lastData < QUIET_AFTER_EXIT_MS && Date.now() - exitedAt < limits.drainTimeout) {
          await new Promise((r) => setTimeout(r, QUIET_AFTER_EXIT_MS));
        }
        dataSubscription.dispose();
        hooks.signal?.removeEventListener('abort', onAbort);
        if (stripper) collector.push('stdout', redactor.push(stripper.flush()));
        collector.push('stdout', redactor.flush());
        try {
          if (terminating) await terminating;
          else if (plan.request.leftovers === 'kill' && isGroupAlive(pid)) {
            await terminateRun({ pgid: pid, runId: plan.runId, grace: limits.grace });
          }
        } catch {
          // Containment past this point is best effort; the result still reports the exit.
        }
        const signalName = getSignalName(signal);
        resolve(collector.finish({
          exitCode: signalName ? null : exitCode,
          signal: signalName,
          timedOut,
          shutdown,
          redactions: redactor.count,
        }));
      };
      void settle();
    });
  });
}
