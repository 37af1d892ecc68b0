/*
 * The foreground sink for sync and PTY runs: the lifecycle runs the plan (pipes, or a terminal
 * for `mode: 'pty'`, where both streams arrive as stdout), the collector keeps bounded captures
 * and the full-output file, and the result is built once the run has settled.
 */
import { OutputCollector } from './output/collect';
import { startRun } from './lifecycle';
import type { SpawnPlan } from '../plan/prepare';
import type { ExecResult } from './result';
import type { Spawner } from '../process/spawner/types';

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
  /** What starts the process (see process/spawner); default: child_process.spawn in this process. */
  readonly spawner?: Spawner;
  /** Settles once the run may act: its start record is durable (LifecycleOptions.ready). */
  readonly ready?: Promise<void>;
  /** Settles once the run's result has reached its caller (SpawnRequest.settled). */
  readonly settled?: Promise<unknown>;
}

export async function runForeground(plan: SpawnPlan, hooks: RunHooks): Promise<ExecResult> {
  const collector = new OutputCollector(plan, hooks.home, hooks.onOutput);
  const run = await startRun(plan, {
    onData: (stream, bytes) => collector.push(stream, bytes),
    spawner: hooks.spawner,
    signal: hooks.signal,
    ...(hooks.ready ? { ready: hooks.ready } : {}),
    ...(hooks.settled ? { settled: hooks.settled } : {}),
  });
  hooks.onSpawn?.(run.pid);
  return collector.finish(await run.ended);
}

