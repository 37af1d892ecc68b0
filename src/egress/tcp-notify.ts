/*
 * Raw TCP without a relay on the data path: a run's connect(2) to one of its named destinations
 * (tcp.ts) answered with a socket already connected to the real host.
 *
 * The relay (tcp.ts relayTcp) copies every byte through the gateway: measured at about half the
 * throughput of a direct connection on a 2-core host (bench/tcp.js, figure 15), whatever relays
 * (a Node pipe, socat, splice(2)): two more copies and a third busy process. So a run with raw
 * TCP destinations starts under one more seccomp filter (src/programs/tcp-install.py installs it
 * inside the sandbox, before the run's program) whose connect(2) calls wait for this gateway's
 * supervisor (src/programs/tcp-supervisor.py, a Python process outside every sandbox: Node cannot
 * make the ioctls). For a connect to one of the run's 127.77.X.Y:PORT names or host services, the
 * supervisor reads the address, takes a copy of the run's socket (its kind and flags), and asks
 * here; the decision is the relay's own (decideTcp: deny lists, narrowing, the resolved address's
 * checks) and is recorded the same way (`egress.decision`, `via: tcp` or `host`). The supervisor
 * then dials the decided address from outside and puts that socket at the run's descriptor
 * number (SECCOMP_IOCTL_NOTIF_ADDFD): the call returns 0, and the run's bytes go through the
 * kernel alone. A refused connect fails with ECONNREFUSED. Every other connect goes on as made,
 * which reaches only what the run's network namespace reaches: the relay is still there, and
 * still decides, for whatever the supervisor lets go on (a parent proxy's route, a socket it
 * could not take, an address read that no longer names a destination).
 *
 * Each run's filter has a listener of its own, handed over once with the run's token (256 random
 * bits on its first program's argv, which no other run can see) through the supervisor's one
 * socket, bound into every such run at the same path (so warm sandboxes serve them too): the first
 * listener with a token is that run's, and the token is spent. The program sends the token's
 * first half and hands its listener over only to a socket that answers with the second (a socket
 * a run put at the path cannot). A connection is the run's whose listener it came through, with
 * no /proc lookup.
 *
 * A run handed to another process (a CLI background run, which has no relay in the shared
 * namespace) is served by that process's supervisor, listening in the run's directory, with the
 * token the handing process chose. Not used (the relay serves, as before): without /usr/bin/python3, without the
 * filter for this architecture, on a kernel older than 5.9 (no ADDFD), or with
 * `egress.connectHandoff: false`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, existsSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { release } from 'node:os';
import { join } from 'node:path';
import { getConnectFilterHex, getConnectInstallSource, getConnectSupervisorPath } from '../process/programs';
import type { ProxyCore, RunContext } from './proxy-core';
import type { EgressDecision } from './proxy-types';
import { decideTcp } from './tcp';

/** Where a run finds its hand-off socket (a bind of its own: no other run has it). */
export const CONNECT_SOCKET_MOUNT = '/tmp/.execgate-connect.sock';

/** The system Python: a root-owned path no run can write, the same inside the sandbox. */
const PYTHON = '/usr/bin/python3';

/** What the supervisor says. */
type Event =
  | { op: 'listening'; run: string }
  | { op: 'failed'; run: string; reason: string }
  | { op: 'connect'; run: string; seq: number; address: string; port: number; family: 4 | 6 }
  | { op: 'dialed'; seq: number; ok: boolean; code?: string };

/** What answers a connect: decide it for its run (undefined: no such run any more). */
export type ConnectDecider = (runId: string, address: string, port: number, family: 4 | 6) => Promise<ConnectAnswer>;
export type ConnectAnswer =
  | { readonly action: 'dial'; readonly host: string; readonly port: number; readonly timeout: number; readonly outcome: (ok: boolean, code?: string) => void }
  | { readonly action: 'refuse' }
  | { readonly action: 'continue' };

/** Whether this host can hand connections over at all (cheap; checked once per process). */
let support: { filter: string } | null | undefined;
export function getConnectHandoffSupport(): { filter: string } | undefined {
  if (support === undefined) {
    support = null;
    const [major, minor] = release().split('.').map((part) => Number.parseInt(part, 10));
    const filter = getConnectFilterHex();
    if (filter !== undefined && (major > 5 || (major === 5 && minor >= 9)) && existsSync(getConnectSupervisorPath())) {
      try {
        accessSync(PYTHON, fsConstants.X_OK);
        support = { filter };
      } catch {
        support = null;
      }
    }
  }
  return support ?? undefined;
}

/**
 * The argv wrapper that starts a run's program under the hand-off filter (tcp-install.py), with
 * the run's token, where the host supports it. The supervisor's socket must be listening, and
 * expecting the token, by the time the run starts.
 */
export function getConnectHandoffWrap(token: string): ((argv: readonly string[]) => string[]) | undefined {
  const supported = getConnectHandoffSupport();
  if (!supported) return undefined;
  const install = getConnectInstallSource();
  return (argv) => [PYTHON, '-I', '-S', '-c', install, CONNECT_SOCKET_MOUNT, supported.filter, token, ...argv];
}

/** A run's token: what its first program hands its listener over with (no other run sees it). */
export function createConnectToken(): string {
  // Two halves of 128 bits: the run's claim, and the supervisor's proof (tcp-supervisor.py).
  return randomBytes(32).toString('hex');
}

/** The supervisor's socket in `dir` (the same name wherever a run is served from). */
export function getConnectSocketPath(dir: string): string {
  return join(dir, 'connect.sock');
}

/**
 * The gateway's connect supervisor: one Python process, started with the first run that needs
 * it, ended with the proxy. Its end ends every hand-off: the runs' filters then answer ENOSYS,
 * never a connection nobody decided.
 */
export class ConnectSupervisor {
  readonly #decide: ConnectDecider;
  readonly #socketPath: string;
  #child: ChildProcess | undefined;
  #dead = false;
  #buffer = '';
  readonly #waiting = new Map<string, (ok: boolean) => void>();
  readonly #outcomes = new Map<number, (ok: boolean, code?: string) => void>();

  /** `socketPath`: where the supervisor listens for the runs' listeners (bound into each run). */
  constructor(socketPath: string, decide: ConnectDecider) {
    this.#socketPath = socketPath;
    this.#decide = decide;
  }

  #start(): ChildProcess | undefined {
    if (this.#dead) return undefined;
    if (this.#child) return this.#child;
    const child = spawn(PYTHON, ['-I', '-S', getConnectSupervisorPath(), this.#socketPath], { stdio: ['pipe', 'pipe', 'inherit'], env: {} });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => this.#read(chunk));
    child.stdin.on('error', () => undefined);
    const gone = (): void => {
      this.#dead = true;
      for (const resolve of this.#waiting.values()) resolve(false);
      this.#waiting.clear();
      for (const outcome of this.#outcomes.values()) outcome(false, 'supervisor-gone');
      this.#outcomes.clear();
    };
    child.once('error', gone);
    child.once('exit', gone);
    // Neither the process nor its pipes keep the host's event loop alive.
    child.unref();
    (child.stdout as unknown as { unref?(): void }).unref?.();
    (child.stdin as unknown as { unref?(): void }).unref?.();
    this.#child = child;
    return child;
  }

  #holdOpen(): void {
    const stdout = this.#child?.stdout as unknown as { ref?(): void; unref?(): void } | undefined;
    if (this.#waiting.size > 0) stdout?.ref?.();
    else stdout?.unref?.();
  }

  #send(message: object): void {
    this.#child?.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  #read(chunk: string): void {
    this.#buffer += chunk;
    let newline: number;
    while ((newline = this.#buffer.indexOf('\n')) >= 0) {
      const line = this.#buffer.slice(0, newline);
      this.#buffer = this.#buffer.slice(newline + 1);
      let event: Event;
      try {
        event = JSON.parse(line) as Event;
      } catch {
        continue;
      }
      this.#handle(event);
    }
  }

  #handle(event: Event): void {
    if (event.op === 'listening' || event.op === 'failed') {
      const resolve = this.#waiting.get(event.run);
      this.#waiting.delete(event.run);
      this.#holdOpen();
      resolve?.(event.op === 'listening');
      return;
    }
    if (event.op === 'dialed') {
      const outcome = this.#outcomes.get(event.seq);
      this.#outcomes.delete(event.seq);
      outcome?.(event.ok, event.code);
      return;
    }
    if (event.op === 'connect') {
      const { seq } = event;
      this.#decide(event.run, event.address, event.port, event.family).then(
        (answer) => {
          if (answer.action === 'dial') {
            this.#outcomes.set(seq, answer.outcome);
            this.#send({ op: 'decided', seq, action: 'dial', host: answer.host, port: answer.port, timeout: answer.timeout });
          } else {
            this.#send({ op: 'decided', seq, action: answer.action });
          }
        },
        () => this.#send({ op: 'decided', seq, action: 'refuse' }),
      );
    }
  }

  /**
   * Get ready for run `runId`'s hand-off: returns the socket to bind into the run at
   * CONNECT_SOCKET_MOUNT and the argv wrapper that installs its filter, or undefined (the relay
   * serves the run). `token`: the run's, when the process that made its plan chose it.
   */
  async addRun(runId: string, intercept: ReadonlyArray<{ readonly host: string; readonly port: number }>, token = createConnectToken()): Promise<{ source: string; wrap: (argv: readonly string[]) => string[] } | undefined> {
    const wrap = getConnectHandoffWrap(token);
    if (!wrap || !this.#start()) return undefined;
    // While an answer is awaited the supervisor's output keeps the host alive (it is unref'd otherwise).
    const ready = new Promise<boolean>((resolve) => this.#waiting.set(runId, resolve));
    this.#holdOpen();
    this.#send({ op: 'run', run: runId, token, intercept: intercept.map((endpoint) => [endpoint.host, endpoint.port]) });
    if (!(await ready)) return undefined;
    return { source: this.#socketPath, wrap };
  }

  /** The run ended: its connects from now on go on as made (to the relay, which refuses them). */
  endRun(runId: string): void {
    if (!this.#child || this.#dead) return;
    this.#send({ op: 'end', run: runId });
  }

  close(): void {
    this.#dead = true;
    this.#child?.kill('SIGKILL');
  }
}

/**
 * The answer to a connect of `context`'s run to its address:port, as the relay would decide it,
 * recorded once the dial's outcome is known (or at once when refused).
 */
export async function answerConnect(core: ProxyCore, context: RunContext | undefined, address: string, port: number, family: 4 | 6): Promise<ConnectAnswer> {
  if (!context) return { action: 'continue' };
  const decision = await decideTcp(core, context, address, port);
  if (!decision.allowed) {
    core.record(context, decision);
    return { action: 'refuse' };
  }
  // Through a parent proxy the relay carries it (a CONNECT first); so too a destination whose
  // address the run's socket cannot reach (an IPv6 address for an IPv4 socket).
  if (decision.parent !== undefined || decision.address === undefined) return { action: 'continue' };
  const dial = decision.via === 'host' ? core.dialTarget('127.0.0.1', decision.port) : core.dialTarget(decision.address, decision.port);
  if (family === 4 && isIPv6(dial.host)) return { action: 'continue' };
  return {
    action: 'dial', host: dial.host, port: dial.port, timeout: core.options.connectTimeout ?? 30_000,
    // `relayed`: the supervisor had too many dials in flight and let the call go on to the relay,
    // which decides and records it again.
    outcome: (ok, code) => {
      if (code !== 'relayed') core.record(context, ok ? decision : { ...decision, allowed: false, rule: `dial-failed:${code ?? 'error'}` } satisfies EgressDecision);
    },
  };
}
