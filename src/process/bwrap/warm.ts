/*
 * Warm sandboxes: the namespace and mount set-up of a sandboxed run, done ahead of the request.
 *
 * Starting bubblewrap (user, PID, mount, IPC, UTS namespaces, a dozen mounts, entering the shared
 * network namespace) costs several times what starting the shell does. Once a sandboxed sync run
 * has ended and its result is back with its caller (or has run for a moment: #refillAfter), the
 * gateway sets the same sandbox up again
 * (the plan's launch, its working directory aside) with a small bash in it that waits for its
 * program on stdin (src/programs/
 * warm-stub.bash). The next run with that very launch takes it: the working directory, the
 * program's argv and its whole environment (resolved values included) travel over that pipe,
 * never on an argv, and the waiting bash enters the directory, sets the environment and execs the
 * program. Each warm sandbox serves one run and ends with it, as a cold one does.
 *
 * What makes a warm run the same as a cold one:
 *   - the launch is compared whole (but for the working directory, entered inside); any
 *     difference (policy reload, a hidden path that appeared, another network namespace) means a
 *     cold start;
 *   - the sandbox's mounts are checked against the plan (verify.ts, the whole check a cold run's
 *     gate makes, its first process included) twice: once it is set up, against the launch it
 *     was set up for, before it counts as ready (#start); and when it is taken, against the
 *     launch planned for this run, before the program may start: a host path deleted since it
 *     was set up (a hidden directory removed and made again) takes its mount with it, which the
 *     check sees, and the run starts cold;
 *   - the frame (resolved values included) is sent as soon as the sandbox is taken, before the
 *     check at the take and while the start record is made durable, so that the waiting bash
 *     reads it, enters the directory and sets the environment meanwhile; the program itself
 *     starts only at the `go` byte, sent once the check has passed, the start record is durable
 *     and the waiting bash's SOH has been read. That the values reach the waiting bash before
 *     the check at the take is sound: the process that reads them is the bash bubblewrap started
 *     when the sandbox was set up, whose mounts were checked then, before anything was sent (so
 *     its program and libraries are the plan's); it reads the frame from a pipe, enters a
 *     directory and sets variables, writing nothing anywhere; no program of the run has started,
 *     and nothing else runs in its PID namespace but bubblewrap's init. What a host change since
 *     the set-up can alter is what the program would see, which the check at the take decides
 *     before `go`; a sandbox that fails it, or whose start record cannot be made durable, is
 *     killed with its process group, the values with it, and the program never starts;
 *   - descriptors: the waiting bash closes every descriptor above 2 before anything else, so a
 *     descriptor this process held when the sandbox started (a PTY run's terminal) never
 *     reaches a later run;
 *   - the environment the program receives is exactly a cold run's: the waiting bash starts with
 *     none, sets PWD to the working directory (as bubblewrap does), and compensates for `exec`
 *     lowering SHLVL. Names bash gives a meaning of its own (dynamic, read-only or BASH_*
 *     variables) and names that are not identifiers cannot be set that way: such runs start cold;
 *   - a warm sandbox left unused for `maxIdle` is ended, and so is every one when the gateway
 *     closes (bubblewrap's --die-with-parent ends them with the gateway's process as well).
 * Only sync runs whose stdin is /dev/null are warm; PTY and background runs always start cold.
 */
import { PassThrough } from 'node:stream';
import { invalidOption } from '../../errors';
import { CLOSE_FDS } from '../inherited-fds';
import type { SpawnedProcess, Spawner, SpawnRequest } from '../spawner/types';
import { abandon, abandonAndWait, afterNextPoll, checkSandbox, helperFailed, readMark, READY, relay, startGated, STARTED, type SandboxedRequest } from './gate';
import type { SandboxLaunch } from './launch';
import { getSpecKey } from './spec';
import { getWarmStubScript } from '../programs';

/** How long a warm sandbox waits for a run before it is ended. */
export const DEFAULT_MAX_IDLE_MS = 120_000;
/** A run still going this long gets its launch's next warm sandbox set up during it (#refillAfter). */
const REFILL_AFTER_MS = 200;
/** How long a run waits for a warm sandbox still being set up before it starts cold instead. */
const READY_TIMEOUT_MS = 5_000;

/*
 * Variables bash computes, keeps read-only, or reads as settings of its own while the waiting
 * bash still runs: setting one there would not hand the program the plan's value. (`_`: bash's
 * `exec` passes none at all. Only a request can put one in a run's environment: the sanitizer
 * does not inherit the `_` a shell exported to the gateway, so such gateways still get warm runs.)
 */
const BASH_OWN = new Set([
  '_', 'SHELLOPTS', 'POSIXLY_CORRECT', 'RANDOM', 'SRANDOM', 'SECONDS', 'LINENO', 'HISTCMD', 'EPOCHSECONDS',
  'EPOCHREALTIME', 'GROUPS', 'FUNCNAME', 'DIRSTACK', 'PIPESTATUS', 'PPID', 'UID', 'EUID', 'TMOUT', 'OPTIND', 'OPTERR',
  'IFS', 'MAPFILE', 'REPLY', 'COPROC', 'HOSTNAME', 'HOSTTYPE', 'MACHTYPE', 'OSTYPE', 'CDPATH',
]);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SHLVL_VALUE = /^(0|[1-9][0-9]{0,2})$/;
/** The waiting bash's own variables are dropped before the run's are set (see warm-stub.bash). */
const STUB_VARIABLES = new Set(['l', 't', 'b', 'o', 'i', 'x', 'a', 'e']);

/** Whether the waiting bash can hand the program exactly this environment. */
export function isWarmableEnv(env: Readonly<Record<string, string>>): boolean {
  for (const [name, value] of Object.entries(env)) {
    if (!IDENTIFIER.test(name) || BASH_OWN.has(name) || name.startsWith('BASH') || name.startsWith('COMP_')) return false;
    if (STUB_VARIABLES.has(name) || value.includes('\0')) return false;
    if (name === 'SHLVL' && !(SHLVL_VALUE.test(value) && Number(value) < 999)) return false;
  }
  return true;
}

/** The frame the waiting bash reads: cwd, stdin mode, the program's argv and its environment, lengths in bytes. */
export function encodeFrame(cwd: string, program: readonly string[], env: Readonly<Record<string, string>>): Buffer {
  const entries = Object.entries(env).map(([name, value]) => (name === 'SHLVL' ? `SHLVL=${Number(value) + 1}` : `${name}=${value}`));
  const argv = [cwd, 'null', ...program];
  const fields = [...argv, ...entries].map((field) => Buffer.from(field, 'utf8'));
  const header = `${argv.length} ${entries.length} ${fields.map((field) => field.length).join(' ')}\n`;
  return Buffer.concat([Buffer.from(header, 'latin1'), ...fields]);
}

/** The launch without its working directory (entered by the waiting bash): what a warm sandbox is kept by. */
function getWarmKey(launch: SandboxLaunch): string {
  return getSpecKey(launch.launcher, launch.spec, { withoutChdir: true });
}

interface ScheduledRefill {
  /** Drops it (the gateway is closing). */
  readonly cancel: () => void;
  /** Starts it at once: a request for its launch came first (see startSandboxed). */
  readonly now: () => void;
}

interface WarmEntry {
  readonly key: string;
  readonly launch: SandboxLaunch;
  readonly process: SpawnedProcess;
  /** The run's stderr: the sandbox's, after the waiting bash's marks. */
  readonly stderr: PassThrough;
  /**
   * The run's stdout, read from the moment the sandbox starts like its stderr: a stream that
   * only began to be read when the run was taken lost the race against stderr, and a command
   * writing `one` (stdout), `two` (stderr), `three` (stdout) came back `two one three`.
   */
  readonly stdout: PassThrough;
  /** Whether the sandbox got set up and matched its plan. */
  readonly ready: Promise<boolean>;
  readonly expires: NodeJS.Timeout;
  isReady: boolean;
  ended: boolean;
}

export interface WarmSandboxOptions {
  /** Warm sandboxes kept ready at most (one per launch, the most recent kept); 0: none. */
  readonly size: number;
  readonly maxIdle?: number;
}

export interface WarmStats {
  /** Runs started in a warm sandbox. */
  readonly warm: number;
  /** Sandboxed sync runs that started cold (none ready, or not warmable). */
  readonly cold: number;
  /** Warm sandboxes ended unused: they did not match their plan any more, idled out, or the gateway closed. */
  readonly discarded: number;
  /** Warm sandboxes ready now. */
  readonly waiting: number;
}

/** A Spawner that starts eligible sandboxed sync runs in a sandbox set up ahead of the request. */
export class WarmSandboxes implements Spawner {
  readonly #base: Spawner;
  readonly #size: number;
  readonly #maxIdle: number;
  readonly #entries: WarmEntry[] = [];
  readonly #starting = new Set<string>();
  /** Refills waiting for their run to end (see #refillAfter). */
  readonly #scheduled = new Map<string, ScheduledRefill>();
  /** Refills being spawned (until the sandbox is listed in #entries, or failed to start). */
  readonly #inflight = new Map<string, Promise<void>>();
  #closed = false;
  /** Starts in progress (a spawn not yet answered). */
  readonly #pending = new Set<Promise<void>>();
  #warm = 0;
  #cold = 0;
  #discarded = 0;

  constructor(base: Spawner, options: WarmSandboxOptions) {
    this.#base = base;
    this.#size = options.size;
    this.#maxIdle = options.maxIdle ?? DEFAULT_MAX_IDLE_MS;
  }

  get stats(): WarmStats {
    return { warm: this.#warm, cold: this.#cold, discarded: this.#discarded, waiting: this.#entries.filter((entry) => entry.isReady).length };
  }

  /** Pids of the warm sandboxes ready now (tests, diagnostics). */
  get waiting(): number[] {
    return this.#entries.filter((entry) => entry.isReady).map((entry) => entry.process.pid);
  }

  spawn(request: SpawnRequest): Promise<SpawnedProcess> {
    return this.#base.spawn(request);
  }

  async startSandboxed(request: SandboxedRequest): Promise<SpawnedProcess> {
    if (this.#size <= 0 || request.stdin !== 'ignore' || request.terminal) return startGated(this.#base, request);
    const key = getWarmKey(request.sandbox);
    const warmable = isWarmableEnv(request.env);
    if (warmable) {
      // A run asked right after the last one ended (a tight loop): its sandbox's set-up, not yet
      // begun or still being spawned, is waited for rather than raced by a cold start.
      this.#scheduled.get(key)?.now();
      await this.#inflight.get(key)?.catch(() => undefined);
    }
    const entry = warmable ? await this.#take(key) : undefined;
    // Sent at once (see the header: the waiting bash prepares the run while the sandbox is
    // checked and the start record made durable); the program waits for `go`.
    const sent = entry === undefined ? undefined : this.#send(entry, request);
    if (!entry || !sent || !this.#matches(entry, request.sandbox)) {
      if (entry) this.#end(entry);
      this.#cold += 1;
      const started = await startGated(this.#base, request);
      if (warmable) this.#refillAfter(key, request.sandbox, started, request.settled);
      return started;
    }
    const { process: child } = entry;
    this.#refillAfter(key, request.sandbox, child, request.settled);
    // Once the SOH is read, the event loop's next poll (afterNextPoll) is counted from there: the
    // SOH usually comes while the start record is still being made durable, and `go` then
    // follows the record at once.
    const polled = sent.started.then(async (said) => {
      if (said === true) await afterNextPoll();
      return said;
    });
    let said: true | string;
    try {
      // The start record made durable while the sandbox was taken and checked; the program acts only after.
      [said] = await Promise.all([polled, request.ready]);
    } catch (error) {
      // Its start record failed, or the gateway closed first: ended unused, and gone (bounded
      // wait) before the error reaches the caller, as a failed cold start is.
      this.#end(entry);
      await abandonAndWait(child);
      throw error;
    }
    if (said !== true) {
      await abandonAndWait(child);
      throw said.startsWith('\x02cwd') ? helperFailed(`bwrap: Can't chdir to ${request.cwd}: No such file or directory`, request.cwd) : helperFailed(said, request.cwd);
    }
    this.#warm += 1;
    // The mark is read and stderr polled empty since: now the program may start (see warm-stub.bash).
    child.stdin!.end('\n');
    entry.stderr.pipe(sent.stderr);
    return { ...child, stdin: null, stdout: entry.stdout, stderr: sent.stderr };
  }

  /**
   * Writes the run's frame to a taken sandbox and starts reading for its SOH; undefined when the
   * sandbox is gone already.
   */
  #send(entry: WarmEntry, request: SandboxedRequest): { started: Promise<true | string>; stderr: PassThrough } | undefined {
    if (entry.ended) return undefined;
    const { process: child } = entry;
    child.setRef?.(true);
    child.stdin!.on('error', () => { /* the sandbox ended before reading: its exit says so */ });
    const stderr = new PassThrough();
    stderr.once('close', () => entry.stderr.destroy());
    const started = readMark(entry.stderr, STARTED, stderr);
    child.stdin!.write(encodeFrame(request.cwd, [request.shell, ...request.args], request.env));
    return { started, stderr };
  }

  /**
   * The waiting sandbox for this launch, if it got set up and passed the check made then. One
   * still being set up is waited for: that is sooner than a cold start would be. Whether it
   * matches the plan as it is now (the request's: a writable root replaced since is another
   * directory) is checked by the caller, after the frame is sent (#matches).
   */
  async #take(key: string): Promise<WarmEntry | undefined> {
    const index = this.#entries.findIndex((entry) => entry.key === key && !entry.ended);
    if (index < 0) return undefined;
    const [entry] = this.#entries.splice(index, 1) as [WarmEntry];
    clearTimeout(entry.expires);
    let ready = entry.isReady;
    if (!ready) {
      let timer: NodeJS.Timeout | undefined;
      ready = await Promise.race([entry.ready, new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS); })]);
      clearTimeout(timer);
    }
    if (!ready || entry.ended) {
      this.#end(entry);
      return undefined;
    }
    return entry;
  }

  /** The gate's check (gate.ts, checkSandbox) on a waiting sandbox: its mounts as planned, its first process in a PID namespace of its own. */
  #matches(entry: WarmEntry, launch: SandboxLaunch): boolean {
    try {
      checkSandbox(entry.process.pid, launch.check);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The next warm sandbox for this launch, set up once `run` (the run this launch just served)
   * has ended and its result has reached its caller (`settled`), or has run for REFILL_AFTER_MS: setting a sandbox up costs a fork of this process
   * (its event loop waits) and bubblewrap's namespace and mount work, which on a small machine
   * took the cores from the very run it was made after (a warm `true` cost twice a raw bubblewrap
   * in CPU, half of it the next sandbox). After the end of a short run, the set-up falls in the
   * pause before the next request; a long run's next sandbox is ready during it. A request for
   * this launch that comes first starts it at once and waits for it.
   */
  /**
   * Sets a sandbox for `launch` up now, ahead of the first run that wants it (Gateway.prepare),
   * unless one is waiting or being set up already. Resolves once it is ready (set up and checked)
   * or could not be set up (never rejects: the run that wants it then starts cold and says why).
   */
  prepare(launch: SandboxLaunch): Promise<void> {
    const key = getWarmKey(launch);
    // Resolved once the sandbox of this launch (set up now or before) is ready or gone.
    const ready = (): Promise<void> => (this.#entries.find((entry) => entry.key === key && !entry.ended)?.ready ?? Promise.resolve()).then(() => undefined, () => undefined);
    if (this.#closed || this.#entries.some((entry) => entry.key === key && !entry.ended)) return ready();
    const inflight = this.#inflight.get(key);
    if (inflight !== undefined) return inflight.then(ready, ready);
    if (this.#starting.has(key)) return Promise.resolve();
    this.#starting.add(key);
    const started = this.#start(key, launch).finally(() => {
      this.#starting.delete(key);
      this.#pending.delete(started);
      if (this.#inflight.get(key) === started) this.#inflight.delete(key);
    });
    this.#pending.add(started);
    this.#inflight.set(key, started);
    return started.then(ready, ready);
  }

  #refillAfter(key: string, launch: SandboxLaunch, run: SpawnedProcess, settled: Promise<unknown> | undefined): void {
    if (this.#starting.has(key) || this.#closed) return;
    this.#starting.add(key);
    const timer = setTimeout(() => go(false), REFILL_AFTER_MS).unref();
    const refill: ScheduledRefill = {
      cancel: (): void => {
        clearTimeout(timer);
        this.#starting.delete(key);
      },
      now: (): void => go(true),
    };
    // Once: by the run's end, the timer or a request for this launch, whichever comes first, and not after close().
    const go = (now: boolean): void => {
      if (this.#scheduled.get(key) !== refill) return;
      this.#scheduled.delete(key);
      clearTimeout(timer);
      // After the run's exit is handled (its output's end and its record come first), unless a
      // request is waiting for it.
      const turn = now ? Promise.resolve() : new Promise<void>((resolve) => { setImmediate(resolve); });
      const started = turn.then(() => this.#start(key, launch)).finally(() => {
        this.#starting.delete(key);
        this.#pending.delete(started);
        if (this.#inflight.get(key) === started) this.#inflight.delete(key);
      });
      this.#pending.add(started);
      this.#inflight.set(key, started);
    };
    this.#scheduled.set(key, refill);
    // After the run's result has reached its caller where the gateway says when (its end record
    // written), else after its exit: the fork and bubblewrap's set-up delayed the result they
    // followed by a few milliseconds when they began at the exit.
    const after = (): void => {
      if (settled === undefined) go(false);
      else settled.then(() => go(false), () => go(false));
    };
    run.exit.then(after, after);
  }

  async #start(key: string, launch: SandboxLaunch): Promise<void> {
    if (this.#closed || this.#entries.some((entry) => entry.key === key)) return;
    let child: SpawnedProcess;
    try {
      child = await this.#base.spawn({
        shell: '/bin/bash',
        args: ['--norc', '--noprofile', '-c', `${CLOSE_FDS}\n${getWarmStubScript()}`],
        env: {},
        cwd: '/',
        stdin: 'pipe',
        sandbox: launch,
      });
    } catch {
      return; // the next run starts cold and says why, if it cannot start either
    }
    // An idle warm sandbox must not keep this process alive; a taken one does, like any run.
    child.setRef?.(false);
    const expires = setTimeout(() => this.#discard(entry), this.#maxIdle).unref();
    const stderr = new PassThrough();
    stderr.once('close', () => child.stderr.destroy());
    const stdout = relay(child.stdout);
    // Set up and matching the plan it was set up for, or not ready at all: a run's values are
    // sent only to a sandbox checked before (see the header); it is checked again at the take.
    const ready = readMark(child.stderr, READY, stderr).then((mark) => {
      if (mark !== true || entry.ended || !this.#matches(entry, launch)) {
        this.#end(entry);
        return false;
      }
      child.stderr.pipe(stderr);
      entry.isReady = true;
      return true;
    });
    const entry: WarmEntry = { key, launch, process: child, stderr, stdout, ready, expires, isReady: false, ended: false };
    const gone = (): void => {
      entry.ended = true;
      const index = this.#entries.indexOf(entry);
      if (index >= 0) this.#entries.splice(index, 1);
      clearTimeout(expires);
    };
    child.exit.then(gone, gone);
    if (this.#closed) {
      // Closed while it was being spawned: close() waits for this too, so that no bubblewrap of
      // this gateway is still setting up (and making mount points) once close() has resolved.
      this.#end(entry);
      await child.exit.catch(() => undefined);
      return;
    }
    this.#entries.push(entry);
    while (this.#entries.length > this.#size) this.#discard(this.#entries[0]);
  }

  #discard(entry: WarmEntry): void {
    const index = this.#entries.indexOf(entry);
    if (index >= 0) this.#entries.splice(index, 1);
    this.#end(entry);
  }

  #end(entry: WarmEntry): void {
    clearTimeout(entry.expires);
    if (entry.ended) return;
    entry.ended = true;
    this.#discarded += 1;
    // Held until it has exited: close() waits for that.
    entry.process.setRef?.(true);
    // Its own process group (spawned detached), its PID namespace with it (bubblewrap's
    // --die-with-parent): no program of a run has started in it, and a frame it may hold goes with it.
    abandon(entry.process);
    entry.stderr.destroy();
    entry.stdout.destroy();
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const refill of this.#scheduled.values()) refill.cancel();
    this.#scheduled.clear();
    // Sandboxes being spawned end as soon as they are (see #start).
    await Promise.all([...this.#pending]);
    const waiting = this.#entries.splice(0);
    for (const entry of waiting) this.#end(entry);
    await Promise.all(waiting.map((entry) => entry.process.exit.catch(() => undefined)));
    await this.#base.close();
  }
}

const MAX_WARM_SANDBOXES = 4;

/** The gateway option `warmSandboxes`: 0 to 4, default 1. */
export function validateWarmSandboxes(value: unknown): number {
  if (value === undefined) return 1;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_WARM_SANDBOXES) return value;
  throw invalidOption('warmSandboxes', value, `a whole number from 0 to ${MAX_WARM_SANDBOXES}`);
}

/** The spawner a gateway's runs use: `base`, behind warm sandboxes when there are any. */
export function withWarmSandboxes(base: Spawner, size: number): { spawner: Spawner; warm: WarmSandboxes | undefined } {
  const warm = size > 0 ? new WarmSandboxes(base, { size }) : undefined;
  return { spawner: warm ?? base, warm };
}
