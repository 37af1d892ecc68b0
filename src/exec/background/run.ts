/*
 * One background run: the prepared plan started on pipes or a PTY, its output redacted and
 * written to its file and a bounded in-memory ring, its end recorded. It runs in whichever
 * process holds it: the host's gateway, or the detached supervisor the CLI starts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { BoundedCapture } from '../capture';
import { AnsiStripper } from '../ansi';
import type { SpawnPlan } from '../prepare';
import { getSignalName, spawnPty } from '../pty-spawn';
import { spawnFailed } from '../sync';
import { terminateRun } from '../terminate';
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
  #pid = 0;
  #child: ChildProcess | undefined;
  #term: ReturnType<typeof spawnPty> | undefined;
  #stopping: { state: BackgroundState; reason: string } | undefined;
  #terminating: Promise<unknown> | undefined;
  #timer: NodeJS.Timeout | undefined;
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

  /** Start the command; throws (nothing left running) if it cannot be started. */
  start(supervisorPid = process.pid): BackgroundProcess {
    const plan = this.plan;
    const stripper = plan.request.pty && plan.request.ansi === 'strip' ? new AnsiStripper() : undefined;
    if (plan.request.pty) {
      try {
        this.#term = spawnPty(plan);
      } catch (error) {
        this.#file.close([`[background process failed: ${(error as Error).message}]`]);
        throw error;
      }
      this.#pid = this.#term.pid;
      const redactor = plan.redactor.createStream();
      const take = (chunk: Buffer): void => this.#emit(redactor.push(stripper ? stripper.push(chunk) : chunk));
      let lastData = Date.now();
      const subscription = this.#term.onData((data: string | Buffer) => {
        lastData = Date.now();
        take(typeof data === 'string' ? Buffer.from(data) : data);
      });
      this.#term.onExit(({ exitCode, signal }) => {
        const exitedAt = Date.now();
        const settle = async (): Promise<void> => {
          while (Date.now() - lastData < 30 && Date.now() - exitedAt < plan.limits.drainTimeout) await new Promise((r) => setTimeout(r, 30));
          subscription.dispose();
          if (stripper) this.#emit(redactor.push(stripper.flush()));
          this.#emit(redactor.flush());
          const name = getSignalName(signal);
          await this.#finish(name ? null : exitCode, name);
        };
        void settle();
      });
    } else {
      let child: ChildProcess;
      try {
        child = spawn(plan.shell, plan.args as string[], { cwd: plan.cwd, env: plan.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
      } catch (error) {
        this.#file.close([`[background process failed: ${(error as Error).message}]`]);
        throw spawnFailed(plan, error);
      }
      if (child.pid === undefined) {
        this.#file.close(['[background process failed: the shell could not be started]']);
        child.once('error', () => { /* reported by the throw below */ });
        throw spawnFailed(plan, new Error('no pid'));
      }
      this.#child = child;
      this.#pid = child.pid;
      child.stdin?.on('error', () => { /* the process closed its stdin; writes report it */ });
      const redactors = { stdout: plan.redactor.createStream(), stderr: plan.redactor.createStream() };
      let open = 2;
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      let drainTimer: NodeJS.Timeout | undefined;
      const settle = (): void => {
        if (!exit || (open > 0 && drainTimer)) return;
        if (drainTimer) clearTimeout(drainTimer);
        this.#emit(redactors.stdout.flush());
        this.#emit(redactors.stderr.flush());
        void this.#finish(exit.code, exit.signal);
        exit = undefined;
      };
      for (const name of ['stdout', 'stderr'] as const) {
        const stream = child[name]!;
        stream.on('data', (chunk: Buffer) => this.#emit(redactors[name].push(chunk)));
        stream.once('close', () => {
          open -= 1;
          if (open === 0 && exit) {
            if (drainTimer) clearTimeout(drainTimer);
            drainTimer = undefined;
            settle();
          }
        });
      }
      child.once('exit', (code, signal) => {
        exit = { code, signal };
        if (open === 0) {
          settle();
          return;
        }
        // A process the command left behind may hold the pipes: bound the wait.
        drainTimer = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          drainTimer = undefined;
          settle();
        }, plan.limits.drainTimeout);
      });
    }
    if (this.#options.maxRuntime > 0) {
      this.#timer = setTimeout(() => {
        void this.kill({}, { state: 'timed_out', reason: `timed out after ${this.#options.maxRuntime} ms` });
      }, this.#options.maxRuntime);
      this.#timer.unref?.();
    }
    this.#supervisorPid = supervisorPid;
    this.#writeRecord();
    return this.snapshot();
  }

  #supervisorPid = process.pid;

  #emit(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.#file.write(bytes);
    this.#ring.push(bytes);
  }

  /** Write to the process's stdin (or terminal). The caller has resolved and registered any secret. */
  write(data: Buffer): void {
    if (this.ended) {
      throw new ExecgateError('EXECGATE_ERR_BACKGROUND_ENDED', `Background process ${this.id} has ended (${this.#state}); nothing was written.`, { id: this.id });
    }
    if (this.#term) this.#term.write(data.toString('utf8'));
    else if (this.#child?.stdin && !this.#child.stdin.destroyed) this.#child.stdin.write(data);
    else throw new ExecgateError('EXECGATE_ERR_BACKGROUND_ENDED', `Background process ${this.id} closed its input; nothing was written.`, { id: this.id });
  }

  /** Close stdin (end of input), e.g. for a command that reads until EOF. */
  endInput(): void {
    this.#child?.stdin?.end();
  }

  /** Stop the whole group (SIGTERM, grace, SIGKILL) and sweep escaped descendants. */
  async kill(options: KillOptions = {}, why: { state: BackgroundState; reason: string } = { state: 'killed', reason: 'killed on request' }): Promise<BackgroundProcess> {
    if (!this.ended) {
      this.#stopping ??= why;
      this.#terminating ??= terminateRun({
        pgid: this.#pid,
        runId: this.id,
        grace: options.grace ?? this.plan.limits.grace,
        signal: options.signal,
      });
      await this.#terminating;
    }
    return this.#done;
  }

  async #finish(exitCode: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (this.ended) return;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#terminating) await this.#terminating.catch(() => undefined);
    this.#exitCode = exitCode;
    this.#signal = signal;
    this.#endedAt = new Date();
    let line: string;
    if (this.#stopping) {
      this.#state = this.#stopping.state;
      this.#reason = this.#stopping.reason;
      const how = signal ? `by ${signal}` : `with exit code ${exitCode}`;
      line = this.#state === 'timed_out'
        ? `[background process ${this.#reason}; ended ${how}]`
        : `[background process killed (${this.#reason}); ended ${how}]`;
    } else {
      this.#state = 'exited';
      line = signal ? `[background process completed: killed by ${signal}]` : `[background process completed with exit code ${exitCode}]`;
    }
    this.#ring.push(Buffer.from(`\n${line}\n`));
    this.#file.close([line]);
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
      pid: this.#pid,
      pgid: this.#pid,
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
