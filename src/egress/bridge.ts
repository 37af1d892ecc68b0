/*
 * How a sandboxed run reaches the proxy. The run's network namespace has nothing but loopback, so
 * it cannot reach any host port; a small bridge inside the namespace listens on 127.0.0.1:PORT
 * and carries each TCP connection to the proxy's Unix socket on the host side. Tools find it
 * through the usual proxy variables, which carry the run's proxy credentials
 * (`http://USER:PASS@127.0.0.1:PORT`): the credentials, not the port, tell the proxy which run a
 * connection belongs to, and so which rules, bound secrets and sentinels apply to it.
 *
 * Two ways to have a bridge:
 *  - shared (the usual case): the runs of a gateway share one network namespace (sandbox/
 *    network.ts), and one bridge per namespace serves them all. It is started once, on the first
 *    proxied run, inside the namespace (nsenter, then bubblewrap: its own PID namespace, no
 *    capabilities, nothing writable), listens on a port the kernel picks and that stays its port
 *    for its life, and is started again (on a new port) if it died. It dies with the gateway:
 *    bubblewrap's parent-death signal, the end of its stdin pipe, and the watchdog's cookie sweep
 *    all end it. A run then costs no process of its own for its network: the variables are set
 *    in its environment before it starts.
 *  - per run (a run with a network namespace of its own, where joining the shared one is not
 *    possible): the old way, a bridge that starts listening *before* it spawns the command (so
 *    the command's first connection cannot race it), passes signals on and exits the way the
 *    command did. In a PID namespace it dies with the sandbox like everything else.
 *
 * Both are Node scripts run by the gateway's own `node`, so nothing extra must be installed (the
 * sandbox-runtime peer uses socat for the same job). Node's built-in fetch ignores proxy
 * variables before Node 24, so Node children get a `--require` preload that installs undici's
 * EnvHttpProxyAgent (it reads the same variables).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ExecgateError } from '../errors';
import { getDescriptorCloser } from '../process/inherited-fds';
import { getRunBridgeSource, getSharedBridgeSource } from '../process/programs';
import type { BwrapMount } from '../process/bwrap/spec';
import type { HostPattern } from './hosts';
import type { EgressRun } from './proxy';

/** Where the proxy's public files (Node preload, CA bundle) appear inside the sandbox (on its private /tmp). */
export const EGRESS_MOUNT = '/tmp/.execgate-egress';
/** Where a run with a bridge of its own finds the proxy's socket. */
export const SOCKET_MOUNT = '/tmp/.execgate-egress.sock';
/** 0: an ephemeral port, so that bridges sharing a network namespace never collide. */
export const DEFAULT_BRIDGE_PORT = 0;

const START_TIMEOUT_MS = 10_000;

// The bridges' programs: src/programs/egress-run-bridge.js and egress-shared-bridge.js.

export interface SandboxEgress {
  /** The proxy's files (and, for a bridge of its own, its socket) bound in. Mounted after the /tmp tmpfs. */
  readonly mounts: readonly BwrapMount[];
  /** Variables for the child (proxy, CA trust); with a bridge of its own the bridge sets the proxy ones. */
  readonly env: Readonly<Record<string, string>>;
  /** To add to the child's NODE_OPTIONS (the fetch preload). */
  readonly nodeOptions: string;
  /** The command line to run inside the sandbox in place of `argv` (the run's own bridge, which spawns `argv`; `argv` itself with the shared bridge). */
  wrap(argv: readonly string[]): string[];
}

/*
 * NO_PROXY inside a sandbox: the run's own loopback (a dev server one run starts for the next) is
 * reached directly, everything else through the proxy. A loopback address the policy allows by
 * name (`allow: ["127.0.0.1:5432"]`) means the host's, which only the proxy reaches: it is left
 * out, so clients send it through the proxy as the policy says (the run's own servers are then
 * reached at `localhost` or another loopback address).
 */
export function getNoProxy(allow: readonly HostPattern[] = []): string {
  const named = new Set(allow.filter((pattern) => pattern.kind === 'ip').map((pattern) => pattern.host));
  return ['localhost', '127.0.0.1', '::1'].filter((entry) => !named.has(entry)).join(',');
}

export function getSandboxEgress(run: EgressRun, options: { port?: number; nodePath?: string; sharedPort?: number; allow?: readonly HostPattern[] } = {}): SandboxEgress {
  const nodePath = options.nodePath ?? process.execPath;
  const nodeOptions = `--require ${EGRESS_MOUNT}/node-preload.cjs`;
  const auth = run.credentials ? `${encodeURIComponent(run.credentials.username)}:${encodeURIComponent(run.credentials.password)}` : undefined;
  const noProxy = getNoProxy(options.allow);
  const env: Record<string, string> = { NO_PROXY: noProxy, no_proxy: noProxy };
  if (run.caBundlePath) {
    const bundle = `${EGRESS_MOUNT}/ca.pem`;
    for (const name of ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO']) env[name] = bundle;
  }
  // Read-only: connect(2) on a socket still works, while the CA bundle and the Node preload
  // (shared by every run of the gateway) cannot be rewritten from inside.
  const files: BwrapMount[] = [{ kind: 'bind', source: run.dir, dest: EGRESS_MOUNT, readOnly: true }];
  if (options.sharedPort !== undefined) {
    const at = `${auth ? `${auth}@` : ''}127.0.0.1:${options.sharedPort}`;
    for (const name of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy']) env[name] = `http://${at}`;
    for (const name of ['ALL_PROXY', 'all_proxy']) env[name] = `socks5h://${at}`;
    return Object.freeze({ mounts: Object.freeze(files), env: Object.freeze(env), nodeOptions, wrap: (argv: readonly string[]) => [...argv] });
  }
  // The run's own bridge sets HTTP(S)_PROXY / ALL_PROXY (it alone knows the port it got).
  if (auth) env.EXECGATE_EGRESS_AUTH = auth;
  env.EXECGATE_EGRESS_NODE_OPTIONS = nodeOptions;
  const port = options.port ?? DEFAULT_BRIDGE_PORT;
  return Object.freeze({
    mounts: Object.freeze([...files, { kind: 'bind', source: run.socketPath, dest: SOCKET_MOUNT, readOnly: true } satisfies BwrapMount]),
    env: Object.freeze(env),
    nodeOptions: '',
    wrap: (argv: readonly string[]) => [nodePath, '-e', getRunBridgeSource(), '--', SOCKET_MOUNT, String(port), ...argv],
  });
}

/** Starts a program inside the shared network namespace, ended with it (process/bwrap/network.ts). */
export interface NamespaceLauncher {
  /** The namespace's identity (`net:[N]`), starting its holder if needed; undefined = no shared namespace. */
  current(): Promise<string | undefined>;
  /** Spawn `argv` (bubblewrap's arguments, then `--` and the program) inside namespace `namespace`; stdio: pipe, pipe, ignore. */
  spawnInside(namespace: string, args: readonly string[]): ChildProcess | undefined;
}

/**
 * One bridge per shared network namespace. `port()` is called once per proxied run: with the
 * bridge alive in the current namespace it is a check of its process state, nothing more.
 */
export class SharedBridge {
  readonly #launcher: NamespaceLauncher;
  readonly #socketPath: string;
  readonly #nodePath: string;
  #child: ChildProcess | undefined;
  #port = 0;
  #namespace = '';
  #starting: Promise<number> | undefined;

  constructor(launcher: NamespaceLauncher, socketPath: string, nodePath = process.execPath) {
    this.#launcher = launcher;
    this.#socketPath = socketPath;
    this.#nodePath = nodePath;
  }

  get socketPath(): string {
    return this.#socketPath;
  }

  /** The bridge's pid (host view), when one is running. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The loopback port the bridge listens on in the current shared namespace, (re)starting it if needed. */
  async port(): Promise<number> {
    const namespace = await this.#launcher.current();
    if (namespace === undefined) throw failed('the shared network namespace is gone');
    if (this.#child && this.#namespace === namespace && isRunning(this.#child)) return this.#port;
    this.#starting ??= this.#start(namespace).finally(() => { this.#starting = undefined; });
    return this.#starting;
  }

  async #start(namespace: string): Promise<number> {
    this.stop();
    const child = this.#launcher.spawnInside(namespace, [
      '--ro-bind', '/', '/', '--dev', '/dev', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session', '--cap-drop', 'ALL',
      // Lives as long as the gateway: nothing the gateway holds just now may stay open in it.
      '--', ...getDescriptorCloser(), this.#nodePath, '-e', getSharedBridgeSource(), this.#socketPath,
    ]);
    if (!child) throw failed('the shared network namespace is gone');
    const port = await new Promise<number>((resolve, reject) => {
      let text = '';
      const done = (error?: Error): void => {
        clearTimeout(timer);
        child.stdout?.removeAllListeners('data');
        child.removeListener('exit', onExit);
        const port = Number(text.trim());
        if (!error && Number.isInteger(port) && port > 0) resolve(port);
        else reject(failed(error?.message ?? `it said ${JSON.stringify(text.slice(0, 80))} instead of a port`));
      };
      const onExit = (code: number | null, signal: string | null): void => done(new Error(`it exited (${signal ?? `code ${code}`}) before listening`));
      const timer = setTimeout(() => done(new Error(`it did not listen within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
      child.once('exit', onExit);
      child.once('error', (error) => done(error));
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\n')) done();
      });
    }).catch((error: unknown) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      throw error;
    });
    child.stdout?.destroy();
    child.unref();
    this.#child = child;
    this.#port = port;
    this.#namespace = namespace;
    return port;
  }

  /** End the bridge (the gateway closes, or it is replaced). */
  stop(): void {
    const child = this.#child;
    this.#child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function failed(why: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not start the gateway's egress bridge: ${why}. Nothing was run.`, {});
}

/*
 * Node learns of a child's death only on a later turn of the event loop; a bridge killed just now
 * is already a zombie in /proc, and a run must not be handed its port.
 */
function isRunning(child: ChildProcess): boolean {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return false;
  try {
    const stat = readFileSync(`/proc/${child.pid}/stat`, 'latin1');
    const state = stat[stat.lastIndexOf(')') + 2];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
