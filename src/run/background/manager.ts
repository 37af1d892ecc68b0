/*
 * gateway.background: the background runs one gateway started. Each operation answers from the
 * live run (in-memory ring, exact state) and falls back to the records under
 * `$EXECGATE_HOME/bg/` for runs this process no longer holds.
 */
import { rmSync } from 'node:fs';
import { ensureDir } from '../../home';
import { constants as osConstants } from 'node:os';
import { ExecgateError, describeValue, invalidOption } from '../../errors';
import type { EffectivePolicy } from '../../policy/effective';
import type { SpawnPlan } from '../../plan/prepare';
import type { DetachedAudit } from './detached';
import { getEndedFields } from './ended';
import { BackgroundRun } from './run';
import type { Spawner } from '../../process/spawner/types';
import { readOutputSlice } from './output-file';
import { settleRecord } from './lost';
import { getBackgroundDir, getOutputPath, getRecordPath, listRecords, readRecord } from './records';
import type { BackgroundProcess, BackgroundStatus, KillOptions, StatusOptions } from './types';

export interface BackgroundManagerOptions {
  readonly home: string;
  readonly getPolicy: () => EffectivePolicy;
  /** Resolve reference tokens in stdin data: returns the bytes to write (values registered with the run's redactor). */
  readonly resolveInput: (run: BackgroundRun, data: string) => Promise<Buffer>;
  /** Audit hook. */
  readonly audit: (event: string, fields: Record<string, unknown>) => void;
  /**
   * `in-process` (default): runs live in this process and end with it (or are killed by
   * close()). `detached`: each run gets its own supervisor process and outlives this one
   * (the CLI uses this); `write` is then not available from here.
   */
  readonly launcher?: 'in-process' | 'detached';
  /** For detached runs: the audit log the supervisor records the end in. */
  readonly detachedAudit?: () => DetachedAudit | undefined;
  /** What starts in-process pipe runs (the gateway's spawner). */
  readonly spawner?: Spawner;
}

/**
 * The gateway's background runs (`gateway.background`): start, list, status with paged output,
 * kill. Each run's output file holds redacted bytes only.
 */
export class BackgroundManager {
  readonly #options: BackgroundManagerOptions;
  readonly #runs = new Map<string, BackgroundRun>();

  constructor(options: BackgroundManagerOptions) {
    this.#options = options;
  }

  /** Start a prepared background plan. */
  async start(plan: SpawnPlan): Promise<BackgroundProcess> {
    const policy = this.#options.getPolicy();
    const running = [...this.#runs.values()].filter((run) => !run.status.ended).length;
    if (running >= policy.background.maxConcurrent) {
      throw new ExecgateError(
        'EXECGATE_ERR_BACKGROUND_LIMIT',
        `${running} background processes are running, the maximum the policy allows (${policy.background.maxConcurrent}). Kill or wait for one before starting another. Nothing was started.`,
        { running, max: policy.background.maxConcurrent },
      );
    }
    ensureDir(getBackgroundDir(this.#options.home));
    if (this.#options.launcher === 'detached') {
      const { launchDetached } = await import('./detached');
      return launchDetached(plan, {
        home: this.#options.home,
        minLength: policy.secrets.minLength,
        ringBytes: policy.background.ringBytes,
        maxFileBytes: policy.background.maxFileBytes,
        audit: this.#options.detachedAudit?.(),
      });
    }
    const run = new BackgroundRun(plan, {
      home: this.#options.home,
      ringBytes: policy.background.ringBytes,
      maxFileBytes: policy.background.maxFileBytes,
      maxRuntime: plan.limits.timeout,
      spawner: this.#options.spawner,
    });
    const started = await run.start();
    this.#runs.set(run.id, run);
    void run.status.done.then((ended) => {
      try {
        this.#options.audit('background.ended', getEndedFields(ended, plan.request.actor, run.status.runtimeMs));
      } catch {
        // A run kept past close() ends after the gateway's audit log was closed: its record and
        // output file say how it ended (as the detached supervisor's do); a throw here would be an
        // unhandled rejection that ends the host process.
      }
    });
    return started;
  }

  /** Every background process of this gateway, plus recorded ones from other processes. */
  list(): BackgroundProcess[] {
    const byId = new Map<string, BackgroundProcess>();
    for (const record of listRecords(this.#options.home)) {
      if (this.#runs.has(record.id)) continue;
      const { supervisorPid: _supervisor, ...shown } = settleRecord(this.#options.home, record, this.#options.audit);
      byId.set(record.id, shown);
    }
    for (const run of this.#runs.values()) {
      // A record the disk did not take is written again now that someone looks.
      if (run.status.unrecorded !== undefined) run.status.record();
      byId.set(run.id, run.status.snapshot());
    }
    return [...byId.values()].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  }

  get(id: string): BackgroundProcess {
    const run = this.#runs.get(id);
    if (run) return run.status.snapshot();
    const record = readRecord(this.#options.home, validateId(id));
    if (!record) throw notFound(id);
    const { supervisorPid: _supervisor, ...shown } = settleRecord(this.#options.home, record, this.#options.audit);
    return shown;
  }

  /** State and output: the tail, or `length` bytes from `offset` for paging. */
  status(id: string, options: StatusOptions = {}): BackgroundStatus {
    validateStatusOptions(options);
    const shown = this.get(id);
    const ended = shown.state !== 'running';
    const output = readOutputSlice(shown.outputPath, { offset: options.offset, length: options.length, ended });
    const end = shown.endedAt ? Date.parse(shown.endedAt) : Date.now();
    return { ...shown, runtimeMs: end - Date.parse(shown.startedAt), output };
  }

  /** Write to stdin; reference tokens in `data` are resolved and their echo is masked. */
  async write(id: string, data: string, options: { end?: boolean; actor?: string } = {}): Promise<{ bytes: number }> {
    const run = this.#live(id);
    if (typeof data !== 'string') {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'Expected the data to write to be a string.', { option: 'data' });
    }
    const bytes = await this.#options.resolveInput(run, data);
    run.write(bytes);
    if (options.end) run.endInput();
    this.#options.audit('background.write', { runId: id, actor: options.actor ?? run.plan.request.actor, bytes: bytes.length });
    return { bytes: bytes.length };
  }

  async kill(id: string, options: KillOptions & { actor?: string } = {}): Promise<BackgroundProcess> {
    validateKillOptions(options);
    const run = this.#runs.get(id);
    if (!run) {
      // A run recorded by another process: signal its group and sweep by cookie directly.
      const { killRecorded } = await import('./kill-recorded');
      return killRecorded(this.#options.home, validateId(id), options);
    }
    this.#options.audit('background.kill', { runId: id, actor: options.actor ?? run.plan.request.actor, signal: options.signal ?? 'SIGTERM' });
    return run.kill(options);
  }

  /** Resolves when the process ends, or after `timeout` ms with it still running. */
  async wait(id: string, timeout = 0): Promise<BackgroundProcess> {
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_TIMEOUT', `Expected the wait \`timeout\` to be a non-negative finite number of milliseconds, got ${describeValue(timeout)}.`);
    }
    const run = this.#runs.get(id);
    if (!run) return this.get(id);
    if (timeout <= 0) return run.status.done;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<BackgroundProcess>((resolve) => {
      timer = setTimeout(() => resolve(run.status.snapshot()), timeout);
    });
    try {
      return await Promise.race([run.status.done, timedOut]);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Forget an ended process and delete its record and output file. */
  remove(id: string): void {
    const shown = this.get(id);
    if (shown.state === 'running') {
      throw new ExecgateError('EXECGATE_ERR_BACKGROUND_RUNNING', `Background process ${id} is still running; kill it before removing it.`, { id });
    }
    this.#runs.delete(id);
    rmSync(getRecordPath(this.#options.home, id), { force: true });
    rmSync(getOutputPath(this.#options.home, id), { force: true });
  }

  /** Gateway shutdown: kill running processes (default) or leave them running, recorded. */
  async close(mode: 'kill' | 'keep'): Promise<void> {
    const running = [...this.#runs.values()].filter((run) => !run.status.ended);
    if (mode === 'kill') {
      await Promise.allSettled(running.map((run) => run.kill({}, { state: 'killed', reason: 'gateway closed' })));
    } else {
      for (const run of running) run.outlive();
    }
  }

  #live(id: string): BackgroundRun {
    const run = this.#runs.get(id);
    if (run) return run;
    if (readRecord(this.#options.home, validateId(id))) {
      throw new ExecgateError('EXECGATE_ERR_BACKGROUND_ENDED', `Background process ${id} is not held by this gateway; its input cannot be written from here.`, { id });
    }
    throw notFound(id);
  }
}

/*
 * Options are checked here rather than left to fail deep inside: a bad signal name would make
 * process.kill throw inside the group kill, which treats a failed signal as "nothing left to
 * signal" and would fall straight through to the SIGKILL sweep.
 */
function validateStatusOptions(options: StatusOptions): void {
  for (const name of ['offset', 'length'] as const) {
    const value = options[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < (name === 'length' ? 1 : 0)) {
      throw invalidOption(name, value, `${name === 'length' ? 'a positive' : 'a non-negative'} integer number of bytes`, { of: 'status' });
    }
  }
}

function validateKillOptions(options: KillOptions): void {
  if (options.signal !== undefined && (typeof options.signal !== 'string' || !(options.signal in osConstants.signals))) {
    throw invalidOption('signal', options.signal, 'a signal name such as `SIGTERM` or `SIGINT`', { of: 'kill', then: 'Nothing was signalled.' });
  }
  if (options.grace !== undefined && (typeof options.grace !== 'number' || !Number.isFinite(options.grace) || options.grace < 0)) {
    throw invalidOption('grace', options.grace, 'a non-negative finite number of milliseconds', { of: 'kill', then: 'Nothing was signalled.' });
  }
}

const ID_PATTERN = /^run_[a-z0-9]+_[0-9a-f]+$/;

function validateId(id: string): string {
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) throw notFound(String(id));
  return id;
}

function notFound(id: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_BACKGROUND_NOT_FOUND', `No background process has the id \`${id.slice(0, 80)}\`. List them with gateway.background.list() or \`execgate ps\`.`, { id });
}
