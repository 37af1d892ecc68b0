/*
 * What is known of a background run at any moment: running, or how it ended; the snapshot built
 * from it (a BackgroundProcess, safe to hand to an agent); and its record file, which lets other
 * processes (short-lived CLI invocations) see it too.
 */
import { summarizeDecisions } from '../../egress/describe';
import type { EgressDecision } from '../../egress/proxy';
import type { SpawnPlan } from '../../plan/prepare';
import { describeEnd, type Stopping } from './end';
import { writeRecord } from './records';
import type { BackgroundProcess, BackgroundState } from './types';

export class RunStatus {
  readonly #plan: SpawnPlan;
  readonly #home: string;
  readonly #outputPath: string;
  readonly #startedAt = new Date();
  #pid = 0;
  #supervisorPid = process.pid;
  #state: BackgroundState = 'running';
  #exitCode: number | null = null;
  #signal: NodeJS.Signals | null = null;
  #reason: string | undefined;
  #endedAt: Date | undefined;
  /** Resolves with the final state once the run has ended, its file complete and its record written. */
  readonly done: Promise<BackgroundProcess>;
  #resolveDone!: (process: BackgroundProcess) => void;

  readonly #notice: () => string | undefined;
  /** Why the record file could not be written the last time (it is written again at the next chance). */
  #unrecorded: string | undefined;

  readonly #decisions: (() => readonly EgressDecision[]) | undefined;

  /** `decisions`: the run's egress decisions where another proxy than the plan's serves it. */
  constructor(plan: SpawnPlan, home: string, outputPath: string, notice: () => string | undefined = () => undefined, decisions?: () => readonly EgressDecision[]) {
    this.#plan = plan;
    this.#home = home;
    this.#outputPath = outputPath;
    this.#notice = notice;
    this.#decisions = decisions ?? (plan.resources.egress ? () => plan.resources.getEgressDecisions() : undefined);
    this.done = new Promise((resolve) => { this.#resolveDone = resolve; });
  }

  /** The shell started as `pid`, supervised by `supervisorPid`. */
  started(pid: number, supervisorPid: number): void {
    this.#pid = pid;
    this.#supervisorPid = supervisorPid;
    this.record();
  }

  get state(): BackgroundState {
    return this.#state;
  }

  get ended(): boolean {
    return this.#state !== 'running';
  }

  /** The run has ended (once): its output gets its closing lines, then the record, then `done`. */
  end(exitCode: number | null, signal: NodeJS.Signals | null, stopping: Stopping | undefined, complete: boolean, output: { close(lines: string[]): boolean }): void {
    if (this.ended) return;
    const { state, reason, lines } = describeEnd(exitCode, signal, stopping, complete);
    this.#state = state;
    this.#reason = reason;
    this.#exitCode = exitCode;
    this.#signal = signal;
    this.#endedAt = new Date();
    output.close(lines);
    this.record();
    this.#resolveDone(this.snapshot());
  }

  get runtimeMs(): number {
    return (this.#endedAt ?? new Date()).getTime() - this.#startedAt.getTime();
  }

  snapshot(): BackgroundProcess {
    const plan = this.#plan;
    const pid = this.#pid;
    return {
      id: plan.runId,
      command: plan.displayCommand,
      pid,
      pgid: pid,
      state: this.#state,
      exitCode: this.#exitCode,
      signal: this.#signal,
      startedAt: this.#startedAt.toISOString(),
      endedAt: this.#endedAt ? this.#endedAt.toISOString() : null,
      outputPath: this.#outputPath,
      cwd: plan.cwd,
      pty: plan.request.pty,
      sandboxed: plan.sandbox.sandboxed,
      ...(this.#reason ? { reason: this.#reason } : {}),
      ...(this.#notice() ? { notice: this.#notice() } : {}),
      ...(this.#decisions ? { egress: summarizeDecisions(this.#decisions()) } : {}),
    };
  }

  /** Whether the record file is behind what is known (its last write failed). */
  get unrecorded(): string | undefined {
    return this.#unrecorded;
  }

  /**
   * Write the record file (after the output file is complete, when the run has ended). A
   * failure (a full disk) does not touch the run; it is remembered, and the record is written
   * again by the next call. True when the record is written.
   */
  record(): boolean {
    try {
      writeRecord(this.#home, { ...this.snapshot(), supervisorPid: this.#supervisorPid });
      this.#unrecorded = undefined;
      return true;
    } catch (error) {
      this.#unrecorded = (error as NodeJS.ErrnoException).code ?? String(error);
      return false;
    }
  }
}
