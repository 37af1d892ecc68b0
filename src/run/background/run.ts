/*
 * One background run: the prepared plan started by the lifecycle on pipes or a PTY, its
 * redacted output sent to its sink (sink.ts), its state kept (status.ts) and recorded for other
 * processes. It runs in whichever process holds it: the host's gateway, or the detached
 * supervisor the CLI starts.
 */
import { ExecgateError } from '../../errors';
import { untilEntered } from '../../process/bwrap/network';
import { startRun, type Run } from '../lifecycle';
import type { SpawnPlan } from '../../plan/prepare';
import { getStopping, type Stopping } from './end';
import { BackgroundSink } from './sink';
import { RunStatus } from './status';
import type { BackgroundProcess, BackgroundRunOptions, KillOptions } from './types';

export class BackgroundRun {
  readonly id: string;
  readonly plan: SpawnPlan;
  /** Running or how it ended, its snapshot, its `done` promise. */
  readonly status: RunStatus;
  readonly #options: BackgroundRunOptions;
  readonly #sink: BackgroundSink;
  #run: Run | undefined;
  #stopping: Stopping | undefined;

  constructor(plan: SpawnPlan, options: BackgroundRunOptions) {
    this.id = plan.runId;
    this.plan = plan;
    this.#options = options;
    this.#sink = new BackgroundSink(options.home, plan.runId, options);
    this.status = new RunStatus(plan, options.home, this.#sink.path, () => this.#sink.notice, options.egressDecisions);
  }

  /** Start the command; rejects (nothing left running) if it cannot be started. */
  async start(supervisorPid = process.pid): Promise<BackgroundProcess> {
    const { spawner, maxRuntime } = this.#options;
    try {
      this.#run = await startRun(this.plan, { onData: (_stream, bytes) => this.#sink.push(bytes), spawner, stdin: 'pipe', timeout: maxRuntime });
    } catch (error) {
      this.#sink.failed((error as Error).message);
      throw error;
    }
    this.#run.ended.then(
      (end) => this.status.end(end.exitCode, end.signal, getStopping(end, this.#stopping, maxRuntime), end.complete, this.#sink),
      (error: Error) => this.status.end(null, null, { state: 'failed', reason: error.message }, false, this.#sink),
    );
    // Inside the gateway's shared network namespace before anyone is told it started: the
    // gateway (a CLI call) may end, and its namespace holder with it, the moment it knows.
    const network = this.plan.sandbox.sandboxed ? this.plan.sandbox.network : undefined;
    if (network?.namespace) await untilEntered(this.#run.pid, network.namespace);
    this.status.started(this.#run.pid, supervisorPid);
    return this.status.snapshot();
  }

  /** Let the run outlive this process (kept on close). */
  outlive(): void {
    this.#run?.outlive();
  }

  /** Write to the process's stdin (or terminal). The caller has resolved and registered any secret. */
  write(data: Buffer): void {
    const why = this.status.ended ? `has ended (${this.status.state})` : (this.#run?.write(data) ? undefined : 'closed its input');
    if (why) throw new ExecgateError('EXECGATE_ERR_BACKGROUND_ENDED', `Background process ${this.id} ${why}; nothing was written.`, { id: this.id });
  }

  /** Close stdin (end of input), e.g. for a command that reads until EOF. */
  endInput(): void {
    this.#run?.endInput();
  }

  /** Stop the whole group (SIGTERM, grace, SIGKILL) and sweep escaped descendants. */
  async kill(options: KillOptions = {}, why: Stopping = { state: 'killed', reason: 'killed on request' }): Promise<BackgroundProcess> {
    if (!this.status.ended && this.#run) {
      this.#stopping ??= why;
      await this.#run.stop('request', { signal: options.signal, grace: options.grace });
    }
    return this.status.done;
  }

  /** Bytes of recent output held in memory (redacted). */
  recentOutput(): Buffer {
    return this.#sink.recent();
  }
}
