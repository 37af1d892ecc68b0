/*
 * Warm sandboxes: the namespace and mount set-up of a sandboxed run, done ahead of the request.
 *
 * Starting bubblewrap (user, PID, mount, IPC, UTS namespaces, a dozen mounts, entering the shared
 * network namespace) costs several times what starting the shell does. When a sandboxed sync run
 * starts, the gateway sets the same sandbox up again (the plan's argv up to bubblewrap's `--`, same
 * working directory) with a small bash in it that waits for its program on stdin. The next run
 * with that very argv takes it: the program's argv and its whole environment (resolved values
 * included) travel over that pipe, never on an argv, and the waiting bash sets the environment
 * and execs the program. Each warm sandbox serves one run and ends with it, as a cold one does.
 *
 * What makes a warm run the same as a cold one:
 *   - the sandbox argv is compared whole; any difference (policy reload, another cwd, a hidden
 *     path that appeared, another network namespace) means a cold start;
 *   - every path the argv names is stat'ed when the sandbox starts and again when it is taken:
 *     a bind or a hiding mount sits on the inode that was there when bubblewrap ran, so a path
 *     replaced since (a directory removed and created again, a file swapped) makes it cold;
 *   - descriptors: the waiting bash closes every descriptor above 2 before anything else, so a
 *     descriptor this process held when the sandbox started (a PTY run's terminal) never
 *     reaches a later run; a program that starts with the descriptor closer (this process
 *     holds such a descriptor now) still runs it, so the environment stays a cold run's;
 *   - the environment the program receives is exactly a cold run's: the waiting bash starts with
 *     bubblewrap's PWD only, keeps it over the plan's (as bubblewrap does), and compensates for `exec` lowering
 *     SHLVL. Names bash gives a meaning of its own (dynamic, read-only or BASH_* variables) and
 *     names that are not identifiers cannot be set that way: such runs start cold;
 *   - a warm sandbox left unused for `maxIdle` is ended, and so is every one when the gateway
 *     closes (bubblewrap's --die-with-parent ends them with the gateway's process as well).
 * Only sync runs whose stdin is /dev/null are warm; PTY and background runs always start cold.
 */
import { lstatSync, statSync } from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import { ExecgateError } from '../errors';
import { CLOSE_FDS } from '../exec/inherited-fds';
import type { SpawnedProcess, Spawner, SpawnRequest } from '../exec/spawner/types';

/** How long a warm sandbox waits for a run before it is ended. */
export const DEFAULT_MAX_IDLE_MS = 120_000;
/** How long a run waits for a warm sandbox still being set up before it starts cold instead. */
const READY_TIMEOUT_MS = 5_000;

/*
 * The waiting bash. Its stdin carries one frame: a header line `A E L1 L2 ...` (argv count,
 * environment count, then each field's length in bytes) and the fields back to back. With no
 * environment of its own it reads in the C locale, where `read -N` and `${b:o:n}` count bytes,
 * and `read -N` takes the whole body in one read(2). `exec` lowers SHLVL by one and exports it:
 * the gateway sends SHLVL one higher, and where the run has none an array SHLVL (which bash
 * cannot export) keeps it out. PWD is bubblewrap's (it sets it for --chdir), as in a cold run.
 */
const STUB = [
  CLOSE_FDS,
  // Set up and waiting: the gateway reads this NUL on stderr (bubblewrap writes none) before the sandbox counts as ready.
  'printf "\\0" >&2',
  'p=$PWD; unset -v OLDPWD SHLVL',
  'IFS=" " read -r -a l || exit 125',
  '[[ "${l[*]}" =~ ^[0-9]+( [0-9]+)+$ ]] || exit 125',
  't=0; for x in "${l[@]:2}"; do t=$((t+x)); done',
  'IFS= read -r -N "$t" b; (( ${#b} == t )) || exit 125',
  'a=(); e=(); o=0; i=0',
  'for x in "${l[@]:2}"; do if (( i < l[0] )); then a+=("${b:o:x}"); else e+=("${b:o:x}"); fi; o=$((o+x)); i=$((i+1)); done',
  '(( ${#a[@]} == l[0] && ${#e[@]} == l[1] && l[0] > 0 )) || exit 125',
  'unset -v l t b o i x',
  '(( ${#e[@]} == 0 )) || export -- "${e[@]}" 2>/dev/null || exit 125',
  'export PWD="$p"; unset -v p',
  '[[ -v SHLVL ]] || declare -a SHLVL',
  'exec </dev/null',
  'exec -- "${a[@]}"',
].join('\n');

/*
 * Variables bash computes, keeps read-only, or reads as settings of its own while the waiting
 * bash still runs: setting one there would not hand the program the plan's value. (`_`: bash's
 * `exec` passes none at all. Only a request can put one in a run's environment: the sanitizer
 * does not inherit the `_` a shell exported to the gateway, so such gateways still get warm runs.)
 */
const BASH_OWN = new Set([
  '_', 'SHELLOPTS', 'POSIXLY_CORRECT', 'RANDOM', 'SRANDOM', 'SECONDS', 'LINENO', 'HISTCMD', 'EPOCHSECONDS',
  'EPOCHREALTIME', 'GROUPS', 'FUNCNAME', 'DIRSTACK', 'PIPESTATUS', 'PPID', 'UID', 'EUID', 'TMOUT', 'OPTIND', 'OPTERR',
  'IFS', 'MAPFILE', 'REPLY', 'COPROC', 'HOSTNAME', 'HOSTTYPE', 'MACHTYPE', 'OSTYPE',
]);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SHLVL_VALUE = /^(0|[1-9][0-9]{0,2})$/;
/** The waiting bash's own variables are dropped before the run's are set (see STUB). */
const STUB_VARIABLES = new Set(['l', 't', 'b', 'o', 'i', 'x', 'a', 'e', 'p']);

/** Whether the waiting bash can hand the program exactly this environment. */
export function isWarmableEnv(env: Readonly<Record<string, string>>): boolean {
  for (const [name, value] of Object.entries(env)) {
    if (!IDENTIFIER.test(name) || BASH_OWN.has(name) || name.startsWith('BASH') || name.startsWith('COMP_')) return false;
    if (STUB_VARIABLES.has(name) || value.includes('\0')) return false;
    if (name === 'SHLVL' && !(SHLVL_VALUE.test(value) && Number(value) < 999)) return false;
  }
  return true;
}

/** The frame the waiting bash reads: the program's argv and its environment, lengths in bytes. */
export function encodeFrame(program: readonly string[], env: Readonly<Record<string, string>>): Buffer {
  const entries = Object.entries(env).map(([name, value]) => (name === 'SHLVL' ? `SHLVL=${Number(value) + 1}` : `${name}=${value}`));
  const fields = [...program, ...entries].map((field) => Buffer.from(field, 'utf8'));
  const header = `${program.length} ${entries.length} ${fields.map((field) => field.length).join(' ')}\n`;
  return Buffer.concat([Buffer.from(header, 'latin1'), ...fields]);
}

/*
 * The kernel's own file systems (`/proc`, `/sys`, `/dev` and the root itself) are what they are;
 * every other path is a bind source, a mount point over a hidden or read-only path, or the cwd.
 */
const FIXED = /^\/(proc|sys|dev)?(\/|$)/;

/** The identity of every path in the sandbox argv: (device, inode) through and of a symlink. */
function snapshotPaths(argv: readonly string[]): string {
  const parts: string[] = [];
  for (const arg of new Set(argv)) {
    if (!arg.startsWith('/') || FIXED.test(arg)) continue;
    for (const stat of [statSync, lstatSync]) {
      const info = stat(arg, { throwIfNoEntry: false });
      parts.push(info ? `${info.dev}:${info.ino}` : '-');
    }
  }
  return parts.join(',');
}

interface WarmEntry {
  readonly key: string;
  readonly process: SpawnedProcess;
  /** The run's stderr: the sandbox's, after its readiness mark. */
  readonly stderr: Readable;
  /** The paths' identities once the sandbox was set up; undefined: it never was, or they changed meanwhile. */
  readonly ready: Promise<string | undefined>;
  readonly expires: NodeJS.Timeout;
  isReady: boolean;
  ended: boolean;
}

const READY = Buffer.from([0]);

/*
 * Resolves once the waiting bash wrote its mark: bubblewrap's set-up is done. Anything else on
 * stderr first (bubblewrap's own error) or an exit means the sandbox never got ready. What
 * follows the mark is the run's stderr, handed on through `into`.
 */
function whenReady(child: SpawnedProcess, into: PassThrough): Promise<boolean> {
  return new Promise((resolve) => {
    const source = child.stderr;
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      seen = Buffer.concat([seen, chunk]);
      if (seen.length < READY.length) return;
      source.removeListener('data', onData);
      source.pause();
      const ok = seen.subarray(0, READY.length).equals(READY);
      if (!ok) {
        resolve(false);
        return;
      }
      if (seen.length > READY.length) into.write(seen.subarray(READY.length));
      source.pipe(into);
      resolve(true);
    };
    source.on('data', onData);
    source.on('error', () => into.destroy());
    into.once('close', () => source.destroy());
    child.exit.then(() => resolve(false), () => resolve(false));
  });
}

export interface WarmSandboxOptions {
  /** Warm sandboxes kept ready at most (one per sandbox argv, the most recent kept); 0: none. */
  readonly size: number;
  readonly maxIdle?: number;
}

export interface WarmStats {
  /** Runs started in a warm sandbox. */
  readonly warm: number;
  /** Sandboxed sync runs that started cold (none ready, or not warmable). */
  readonly cold: number;
  /** Warm sandboxes ended unused: their paths changed, they idled out, or the gateway closed. */
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
  #closed = false;
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

  async spawn(request: SpawnRequest): Promise<SpawnedProcess> {
    const at = request.programAt;
    if (at === undefined || this.#size <= 0 || request.stdin !== 'ignore' || request.terminal) return this.#base.spawn(request);
    const sandbox = request.args.slice(0, at);
    const key = JSON.stringify([request.shell, request.cwd, ...sandbox]);
    const program = request.args.slice(at);
    const warmable = isWarmableEnv(request.env);
    const entry = warmable ? await this.#take(key, [request.shell, request.cwd, ...sandbox]) : undefined;
    if (!entry) {
      this.#cold += 1;
      const started = await this.#base.spawn(request);
      if (warmable) this.#refill(key, request, sandbox);
      return started;
    }
    this.#warm += 1;
    const { process: child } = entry;
    child.setRef?.(true);
    child.stdin!.on('error', () => { /* the sandbox ended before reading: its exit says so */ });
    child.stdin!.end(encodeFrame(program, request.env));
    this.#refill(key, request, sandbox);
    return { ...child, stdin: null, stderr: entry.stderr };
  }

  /**
   * The waiting sandbox for this argv, if its set-up went through with its paths unchanged and
   * they are still the same now. One still being set up is waited for: that is sooner than a
   * cold start would be.
   */
  async #take(key: string, named: readonly string[]): Promise<WarmEntry | undefined> {
    const index = this.#entries.findIndex((entry) => entry.key === key && !entry.ended);
    if (index < 0) return undefined;
    const [entry] = this.#entries.splice(index, 1) as [WarmEntry];
    clearTimeout(entry.expires);
    let timer: NodeJS.Timeout | undefined;
    const paths = await Promise.race([entry.ready, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), READY_TIMEOUT_MS); })]);
    clearTimeout(timer);
    if (paths === undefined || entry.ended || snapshotPaths(named) !== paths) {
      this.#end(entry);
      return undefined;
    }
    return entry;
  }

  /** The next warm sandbox for this argv, started in the next turn of the event loop (after this run's own start). */
  #refill(key: string, request: SpawnRequest, sandbox: readonly string[]): void {
    if (this.#starting.has(key)) return;
    this.#starting.add(key);
    setImmediate(() => {
      void this.#start(key, request, sandbox).finally(() => this.#starting.delete(key));
    });
  }

  async #start(key: string, request: SpawnRequest, sandbox: readonly string[]): Promise<void> {
    if (this.#closed || this.#entries.some((entry) => entry.key === key)) return;
    // Taken before bubblewrap runs and again once it is set up (see whenReady below).
    const paths = snapshotPaths([request.shell, request.cwd, ...sandbox]);
    let child: SpawnedProcess;
    try {
      child = await this.#base.spawn({
        shell: request.shell,
        args: [...sandbox, '/bin/bash', '--norc', '--noprofile', '-c', STUB],
        env: {},
        cwd: request.cwd,
        stdin: 'pipe',
        programAt: sandbox.length,
      });
    } catch {
      return; // the next run starts cold and says why, if it cannot start either
    }
    // An idle warm sandbox must not keep this process alive; a taken one does, like any run.
    child.setRef?.(false);
    const expires = setTimeout(() => this.#discard(entry), this.#maxIdle).unref();
    const stderr = new PassThrough();
    // Set up with its paths as they were before bubblewrap ran, or not at all: a path replaced
    // while bubblewrap was mounting could be in the sandbox either way.
    const ready = whenReady(child, stderr).then((ok) => {
      const after = ok ? snapshotPaths([request.shell, request.cwd, ...sandbox]) : undefined;
      if (after !== paths) return undefined;
      entry.isReady = true;
      return paths;
    });
    const entry: WarmEntry = { key, process: child, stderr, ready, expires, isReady: false, ended: false };
    const gone = (): void => {
      entry.ended = true;
      const index = this.#entries.indexOf(entry);
      if (index >= 0) this.#entries.splice(index, 1);
      clearTimeout(expires);
    };
    child.exit.then(gone, gone);
    if (this.#closed) {
      this.#end(entry);
      return;
    }
    this.#entries.push(entry);
    while (this.#entries.length > this.#size) this.#discard(this.#entries[0]!);
  }

  #discard(entry: WarmEntry): void {
    const index = this.#entries.indexOf(entry);
    if (index >= 0) this.#entries.splice(index, 1);
    this.#end(entry);
  }

  #end(entry: WarmEntry): void {
    clearTimeout(entry.expires);
    if (entry.ended) return;
    this.#discarded += 1;
    // Held until it has exited: close() waits for that.
    entry.process.setRef?.(true);
    // Its own process group (spawned detached); nothing in it has seen a run.
    try {
      process.kill(-entry.process.pid, 'SIGKILL');
    } catch { /* already gone */ }
    entry.process.stdin?.destroy();
    entry.process.stdout.destroy();
    entry.process.stderr.destroy();
    entry.stderr.destroy();
  }

  async close(): Promise<void> {
    this.#closed = true;
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
  const shown = typeof value === 'number' ? String(value) : `${String(value).slice(0, 40)} (${typeof value})`;
  throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected the \`warmSandboxes\` option to be a whole number from 0 to ${MAX_WARM_SANDBOXES}, got ${shown}.`, { option: 'warmSandboxes' });
}

/** The spawner a gateway's runs use: `base`, behind warm sandboxes when there are any. */
export function withWarmSandboxes(base: Spawner, size: number): { spawner: Spawner; warm: WarmSandboxes | undefined } {
  const warm = size > 0 ? new WarmSandboxes(base, { size }) : undefined;
  return { spawner: warm ?? base, warm };
}
