/*
 * The run lifecycle: what happens to every run, in every mode, once its plan exists. Written
 * once so that containment and output rules hold alike for sync, PTY and background runs:
 *   spawn exactly `plan.shell` + `plan.args` through a Spawner (pipes or a terminal), inside
 *     the plan's sandbox behind its gate (process/bwrap/gate.ts) when it has one;
 *   redact each stream as it arrives (ANSI stripped first on a terminal when asked);
 *   stop the run on timeout, abort or request (SIGTERM to the group, grace, SIGKILL, sweep);
 *   once the shell has exited, end whatever it left behind (group kill + cookie sweep), unless
 *     the plan keeps leftovers; only then wait for the output to close, so a leftover holding
 *     a pipe or the terminal cannot stretch the run;
 *   read the output to its end: pipes until they close (bounded by `drainTimeout`), a PTY
 *     master until EOF/EIO; a drain that gives up marks the run incomplete;
 *   settle once, with one RunEnd; what the plan holds open for the run (its egress proxy
 *     endpoint) is released there, and when the spawn fails.
 * Sinks (sync collector, background file + ring) receive redacted bytes through `onData`.
 */
import { registerLiveRun } from '../process/live-runs';
import { isExecgateError, spawnFailed, type ExecgateError } from '../errors';
import { startGated } from '../process/bwrap/gate';
import { AnsiStripper } from '../redact/ansi';
import type { SpawnPlan } from '../plan/prepare';
import { directSpawner } from '../process/spawner/direct';
import { ptySpawner } from '../process/spawner/pty';
import type { SpawnedProcess, Spawner } from '../process/spawner/types';
import { terminateRun } from '../process/terminate';
import { PARK_QUOTE_WINDOW, withoutPark } from '../process/park';
import { watchRun } from '../process/watchdog';
import { setTimeout as delay } from 'node:timers/promises';

export type StreamName = 'stdout' | 'stderr';

export type StopReason = 'timeout' | 'shutdown' | 'request';

export interface LifecycleOptions {
  /**
   * Receives redacted bytes as they become safe to emit. The bytes may be a view of a read
   * buffer used again for the next read: valid during the call only, copy what is kept.
   */
  readonly onData: (stream: StreamName, bytes: Buffer) => void;
  /** Starts pipe runs (PTY runs use the terminal spawner); default: this process. */
  readonly spawner?: Spawner;
  /** `pipe` keeps stdin open for writes (background); default /dev/null. */
  readonly stdin?: 'ignore' | 'pipe';
  /** Milliseconds before the run is stopped as timed out; default `plan.limits.timeout`. */
  readonly timeout?: number;
  /** Aborting stops the run (gateway shutdown, a cancelled call). */
  readonly signal?: AbortSignal;
  /**
   * Settles once the run may act (its start record is durable). A parked plan (SpawnPlan.parked)
   * is spawned at once and released then; a sandboxed one has its sandbox set up and checked
   * meanwhile, and its gate lets the program go only then (SpawnRequest.ready); any other is
   * spawned only then. A rejection fails the run with that error, and nothing of the command runs.
   */
  readonly ready?: Promise<void>;
  /** Settles once the run's result has reached its caller (SpawnRequest.settled). */
  readonly settled?: Promise<unknown>;
}

export interface RunEnd {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Why execgate stopped the run, if it did. */
  readonly stopped: StopReason | undefined;
  readonly redactions: number;
  /** False when the drain gave up before the output's end: bytes may be missing. */
  readonly complete: boolean;
}

/** A coded error for a run that could not start: its own when it has one. */
function startFailed(plan: SpawnPlan, error: unknown): ExecgateError {
  if (isExecgateError(error)) return error;
  const code = (error as NodeJS.ErrnoException)?.code ?? 'unknown';
  return spawnFailed(`\`${plan.shell}\` in \`${plan.cwd}\``, `the system said ${code}`, {
    then: 'Check that the shell exists and is executable.',
    details: { shell: plan.shell, errno: code },
    cause: error,
  });
}

/** Start the plan; rejects with a coded error (nothing left running) if it cannot start. */
export async function startRun(plan: SpawnPlan, options: LifecycleOptions): Promise<Run> {
  const pty = plan.request.pty;
  const spawner = pty ? ptySpawner : (options.spawner ?? directSpawner);
  // Listed with the watchdog before the spawn: the gateway may die the moment after.
  const watched = watchRun(plan.runId);
  // A sandboxed run is listed alive (with its writable roots) until it has ended: the policy
  // reader refuses a policy file such a run may have written (process/live-runs.ts).
  const unlist = plan.launch === undefined ? (): void => undefined : registerLiveRun({ id: plan.runId, started: Date.now(), writable: plan.launch.check.writable.map((w) => w.path) });
  const unwatch = (now?: boolean): void => {
    unlist();
    watched(now);
  };
  let child: SpawnedProcess;
  const parked = plan.parked && !pty && options.stdin !== 'pipe';
  try {
    const launch = plan.launch;
    if (!parked && launch === undefined) await options.ready;
    const request = {
      shell: plan.shell,
      args: plan.args,
      env: plan.env,
      cwd: plan.cwd,
      stdin: pty || parked ? 'pipe' as const : (options.stdin ?? 'ignore'),
      ...(pty ? { terminal: { cols: plan.request.cols, rows: plan.request.rows } } : {}),
    };
    const sandboxed = launch === undefined ? undefined : { ...request, sandbox: launch, ...(options.ready ? { ready: options.ready } : {}), ...(options.settled ? { settled: options.settled } : {}) };
    child = sandboxed === undefined
      ? await spawner.spawn(request)
      : await (spawner.startSandboxed?.(sandboxed) ?? startGated(spawner, sandboxed));
  } catch (error) {
    unwatch();
    await plan.resources.release();
    throw startFailed(plan, error);
  }
  return new Run(plan, child, options, unwatch, parked ? release(child, options.ready) : undefined);
}

/**
 * Lets a parked shell go once `ready` resolves (one line on its stdin, then end of input); at a
 * rejection its stdin just ends, and it exits without running the command. Resolves to the
 * error that kept it parked, if any.
 */
async function release(child: SpawnedProcess, ready: Promise<void> | undefined): Promise<Error | undefined> {
  const stdin = child.stdin;
  stdin?.on('error', () => { /* the shell is gone (stopped meanwhile): its exit says so */ });
  try {
    await ready;
  } catch (error) {
    stdin?.destroy();
    return error instanceof Error ? error : new Error(String(error));
  }
  stdin?.end('\n');
  return undefined;
}

export class Run {
  readonly pid: number;
  /** Settles once, after the output has been read and leftovers ended; rejects if the end is unknowable. */
  readonly ended: Promise<RunEnd>;
  readonly #plan: SpawnPlan;
  readonly #child: SpawnedProcess;
  #stopped: StopReason | undefined;
  #terminating: Promise<unknown> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #finished = false;
  readonly #unwatch: (now?: boolean) => void;
  /** A parked run: settles once it was released, to the error that kept it parked, if any. */
  readonly #released: Promise<Error | undefined> | undefined;

  constructor(plan: SpawnPlan, child: SpawnedProcess, options: LifecycleOptions, unwatch: (now?: boolean) => void, released?: Promise<Error | undefined>) {
    this.#plan = plan;
    this.#child = child;
    this.pid = child.pid;
    plan.resources.started(child.pid);
    this.#unwatch = unwatch;
    this.#released = released;
    const timeout = options.timeout ?? plan.limits.timeout;
    if (timeout > 0) this.#timer = setTimeout(() => { void this.stop('timeout'); }, timeout);
    const onAbort = (): void => { void this.stop('shutdown'); };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    this.ended = this.#follow(options).finally(() => {
      this.#finished = true;
      if (this.#timer) clearTimeout(this.#timer);
      options.signal?.removeEventListener('abort', onAbort);
      // Kept leftovers are to outlive this process: off the watchdog's list at once.
      this.#unwatch(plan.leftovers === 'keep');
      return plan.resources.release();
    });
    this.ended.catch(() => { /* the owner handles it */ });
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** Let this run outlive the gateway process (a background run kept on close). */
  outlive(): void {
    this.#unwatch(true);
  }

  /** Write to stdin (or the terminal). */
  write(data: Buffer): boolean {
    const stdin = this.#child.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) return false;
    stdin.write(data);
    return true;
  }

  endInput(): void {
    if (!this.#plan.request.pty) this.#child.stdin?.end();
  }

  /** Stop the whole group (signal, grace, SIGKILL) and sweep escaped descendants. */
  stop(reason: StopReason, how: { signal?: NodeJS.Signals; grace?: number } = {}): Promise<unknown> {
    if (this.#finished) return Promise.resolve();
    this.#stopped ??= reason;
    if (this.#timer) clearTimeout(this.#timer);
    this.#terminating ??= terminateRun({
      pgid: this.pid,
      runId: this.#plan.runId,
      grace: how.grace ?? this.#plan.limits.grace,
      signal: how.signal,
      sincePid: this.pid,
      ...(this.#child.sandboxInit !== undefined ? { sandboxInit: this.#child.sandboxInit } : {}),
    }).catch(() => undefined);
    return this.#terminating;
  }

  async #follow(options: LifecycleOptions): Promise<RunEnd> {
    const plan = this.#plan;
    const child = this.#child;
    const stripper = plan.request.pty && plan.request.ansi === 'strip' ? new AnsiStripper() : undefined;
    const redactors = { stdout: plan.redactor.createStream(), stderr: plan.redactor.createStream() };
    const emit = (name: StreamName, bytes: Buffer): void => { if (bytes.length > 0) options.onData(name, bytes); };
    // What the redactor decides goes on in pieces, not joined: joining held bytes to each chunk copied it (redact/stream.ts pushTo).
    const sinks = { stdout: (bytes: Buffer): void => options.onData('stdout', bytes), stderr: (bytes: Buffer): void => options.onData('stderr', bytes) };
    const closed = (['stdout', 'stderr'] as const).map((name) => new Promise<void>((resolve) => {
      const stream = child[name];
      // A parked shell's syntax error on the first line quotes the park with it: removed, so
      // the caller's command comes back as written.
      let parkWindow = name === 'stderr' && plan.parked ? PARK_QUOTE_WINDOW : 0;
      const read = (raw: Buffer): void => {
        let chunk = raw;
        if (parkWindow > 0) {
          parkWindow -= chunk.length;
          chunk = withoutPark(chunk);
        }
        redactors[name].pushTo(stripper ? stripper.push(chunk) : chunk, sinks[name]);
      };
      stream.on('data', read);
      stream.on('error', () => { /* EIO ends a terminal; the close that follows settles */ });
      stream.once('close', () => resolve());
      // Reads straight from the spawner's pipe into a reused buffer where it can (the stream then
      // carries what it held and its end): no Buffer allocated per read. So what `onData` gets is
      // only good during the call; sinks copy what they keep.
      child.claim?.(name, read);
    }));
    child.stdin?.on('error', () => { /* the process closed its input; writes report it */ });

    try {
      await (child.exited ?? child.exit);
    } catch (error) {
      // The end can no longer be known (the spawn helper died): stop the run and fail.
      await this.stop('shutdown');
      child.stdout.destroy();
      child.stderr.destroy();
      throw startFailed(plan, error);
    }
    if (this.#timer) clearTimeout(this.#timer);
    // A parked shell that was never released ran nothing: the run fails with what kept it.
    const unreleased = await this.#released;
    if (unreleased !== undefined) throw unreleased;
    // The shell is gone. Whatever it left behind (its group, or escaped by setsid) is ended
    // now, before waiting for the output: a leftover holding a pipe or the terminal would
    // otherwise hold the run open, and keeps the run's resolved values in its environment.
    // A sandboxed run's PID namespace ended with it, so only its group is looked at.
    if (this.#terminating) await this.#terminating;
    else if (plan.leftovers !== 'keep') {
      const sweep = !plan.sandbox.sandboxed;
      await terminateRun({ pgid: this.pid, runId: plan.runId, grace: plan.limits.grace, sincePid: this.pid, sweep }).catch(() => undefined);
    }
    let complete = true;
    const all = Promise.all(closed);
    if (child.readRest) {
      const deadline = Date.now() + plan.limits.drainTimeout;
      while (!child.readRest() && Date.now() < deadline) await delay(10);
    }
    let drainTimer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => {
      drainTimer = setTimeout(() => {
        complete = false;
        if (child.release) child.release();
        else {
          child.stdout.destroy();
          child.stderr.destroy();
        }
        resolve();
      }, plan.limits.drainTimeout);
    });
    await Promise.race([all, gaveUp]);
    clearTimeout(drainTimer);
    const { code, signal } = await child.exit.catch(() => ({ code: null, signal: null }));
    child.stdin?.destroy(); // nothing reads it any more; its descriptor is released now
    if (stripper) emit('stdout', redactors.stdout.push(stripper.flush()));
    emit('stdout', redactors.stdout.flush());
    emit('stderr', redactors.stderr.flush());
    return {
      exitCode: code,
      signal,
      stopped: this.#stopped,
      redactions: redactors.stdout.count + redactors.stderr.count,
      complete,
    };
  }
}
