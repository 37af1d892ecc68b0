/*
 * One background run: the prepared plan started on pipes or a PTY, its output redacted and
 * written to its file and a bounded in-memory ring, its end recorded. It runs in whichever
 * process holds it: the host's gateway, or the detached supervisor the CLI starts.
 */
import { BoundedCapture } from '../capture';
import { startRun, type Run } from '../lifecycle';
import type { SpawnPlan } from '../prepare';
import type { Spawner } from '../spawner/types';
import { ExecgateError } from '../../errors';
import { OutputFile } from './output-file';
import { getOutputPath, writeRecord, type BackgroundRecord } from './records';
import type { BackgroundProcess, BackgroundState, KillOptions } from './types';

export interface BackgroundRunOptions {
  readonly home: string;
  /** Bytes of recent output kept in memory. */
  readonly ringBytes: number;
  /** Cap of the output file. */
  readonly maxFileBytes: number;
  /** Kill after this many ms (0 = never). */
  readonly maxRuntime: number;
  /** What starts pipe runs; default this process. */
  readonly spawner?: Spawner;
}

export class BackgroundRun {
  readonly plan: SpawnPlan;
  readonly #options: BackgroundRunOptions;
  readonly #file: OutputFile;
  readonly #ring: BoundedCapture;
  readonly #startedAt = new Date();
  #endedAt: Date | undefined;
  #state: BackgroundState = 'running';
  #exitCode: number | null = null;
  #signal: NodeJS.Signals | null = null;
  #reason: string | undefined;
  #run: Run | undefined;
  #stopping: { state: BackgroundState; reason: string } | undefined;
  #supervisorPid = process.pid;
  readonly #done: Promise<BackgroundProcess>;
  #resolveDone!: (process: BackgroundProcess) => void;

  constructor(plan: SpawnPlan, options: BackgroundRunOptions) {
    this.plan = plan;
    this.#options = options;
    this.#file = new OutputFile(getOutputPath(options.home, plan.runId), options.maxFileBytes);
    this.#ring = new BoundedCapture(options.ringBytes, 1);
    this.#done = new Promise((resolve) => { this.#resolveDone = resolve; });
  }

  get id(): string {
    return this.plan.runId;
  }

  get ended(): boolean {
    return this.#state !== 'running';
  }

  /** Resolves with the final state once the run has ended and its file is complete. */
  get done(): Promise<BackgroundProcess> {
    return this.#done;
  }

  /** Start the command; rejects (nothing left running) if it cannot be started. */
  async start(supervisorPid = process.pid): Promise<BackgroundProcess> {
    let run: Run;
    try {
      run = await startRun(this.plan, {
        onData: (_stream, bytes) => {
          this.#file.write(bytes);
          this.#ring.push(bytes);
        },
        spawner: this.#options.spawner,
        stdin: 'pipe',
        timeout: this.#options.maxRuntime,
      });
    } catch (error) {
      this.#file.close([`[background process failed: ${(error as Error).message}]`]);
      throw error;
    }
    this.#run = run;
    this.#supervisorPid = supervisorPid;
    run.ended.then(
      (end) => this.#finish(end.exitCode, end.signal, end.stopped === 'timeout' && !this.#stopping
        ? { state: 'timed_out', reason: `timed out after ${this.#options.maxRuntime} ms` }
        : this.#stopping, end.complete),
      (error: Error) => this.#finish(null, null, { state: 'failed', reason: error.message }, false),
    );
    this.#writeRecord();
    return this.snapshot();
  }

  /** Let the run outlive this process (kept on close). */
  outlive(): void {
    this.#run?.outlive();
  }

  /** Write to the process's stdin (or terminal). The caller has resolved and registered any secret. */
  write(data: Buffer): void {
    if (this.ended) {
      throw new ExecgateError('EXECGATE_ERR_BACKGROUND_ENDED', `Background process ${this.id} has ended (${this.#state}); nothing was written.`, { id: this.id });
    }
    if (!this.#run?.write(data)) {
      throw new ExecgateError('EXECGATE_ERR_BACKGROUND_ENDED', `Background process ${this.id} closed its input; nothing was written.`, { id: this.id });
    }
  }

  /** Close stdin (end of input), e.g. for a command that reads until EOF. */
  endInput(): void {
    this.#run?.endInput();
  }

  /** Stop the whole group (SIGTERM, grace, SIGKILL) and sweep escaped descendants. */
  async kill(options: KillOptions = {}, why: { state: BackgroundState; reason: string } = { state: 'killed', reason: 'killed on request' }): Promise<BackgroundProcess> {
    if (!this.ended && this.#run) {
      this.#stopping ??= why;
      await this.#run.stop('request', { signal: options.signal, grace: options.grace });
    }
    return this.#done;
  }

  #finish(exitCode: number | null, signal: NodeJS.Signals | null, stopping: { state: BackgroundState; reason: string } | undefined, complete: boolean): void {
    if (this.ended) return;
    this.#exitCode = exitCode;
    this.#signal = signal;
    this.#endedAt = new Date();
    let line: string;
    if (stopping) {
      this.#state = stopping.state;
      this.#reason = stopping.reason;
      const how = signal ? `by ${signal}` : `with exit code ${exitCode}`;
      line = this.#state === 'timed_out'
        ? `[background process ${this.#reason}; ended ${how}]`
        : `[background process killed (${this.#reason}); ended ${how}]`;
    } else {
      this.#state = 'exited';
      line = signal ? `[background process completed: killed by ${signal}]` : `[background process completed with exit code ${exitCode}]`;
    }
    const lines = complete ? [line] : ['[execgate: the output did not end within the drain timeout; the last bytes may be missing]', line];
    this.#ring.push(Buffer.from(`\n${lines.join('\n')}\n`));
    this.#file.close(lines);
    this.#writeRecord();
    this.#resolveDone(this.snapshot());
  }

  /** Bytes of recent output held in memory (redacted). */
  recentOutput(): Buffer {
    return this.#ring.tail();
  }

  snapshot(): BackgroundProcess {
    return {
      id: this.id,
      command: this.plan.displayCommand,
      pid: this.#run?.pid ?? 0,
      pgid: this.#run?.pid ?? 0,
      state: this.#state,
      exitCode: this.#exitCode,
      signal: this.#signal,
      startedAt: this.#startedAt.toISOString(),
      endedAt: this.#endedAt ? this.#endedAt.toISOString() : null,
      outputPath: this.#file.path,
      cwd: this.plan.cwd,
      pty: this.plan.request.pty,
      sandboxed: this.plan.sandbox.sandboxed,
      ...(this.#reason ? { reason: this.#reason } : {}),
    };
  }

  get runtimeMs(): number {
    return (this.#endedAt ?? new Date()).getTime() - this.#startedAt.getTime();
  }

  #writeRecord(): void {
    const record: BackgroundRecord = { ...this.snapshot(), supervisorPid: this.#supervisorPid };
    try {
      writeRecord(this.#options.home, record);
    } catch {
      // The record is a convenience for other processes; the run itself goes on.
    }
  }
}
