/*
 * One private network namespace per gateway, shared by its runs. An agent's everyday loop
 * starts a dev server in a background run and talks to it from later sync runs (`curl
 * localhost:3000`); with a fresh namespace per run each run would have a loopback of its own and
 * never see the server. So the gateway keeps a holder: a bubblewrap process with a new network
 * namespace (loopback up, nothing else) whose only job is to keep that namespace alive, and each
 * run enters it with nsenter(1) before bubblewrap builds the rest of its sandbox.
 *
 * The host's network, its loopback services and abstract UNIX sockets (a D-Bus session bus
 * can live there) are all outside the namespace. The holder dies with the gateway
 * (`--die-with-parent`); runs still inside keep the namespace alive until they end, so a
 * background run the CLI left behind keeps its server reachable for itself.
 *
 * Joining needs CAP_SYS_ADMIN over the namespace: as root that is given; as another user the
 * holder's namespace belongs to the user namespace bubblewrap made for it, and nsenter enters
 * that first (keeping the user's uid: --preserve-credentials). Where joining is not possible (no nsenter, or entering is refused: tried once when
 * the holder starts), runs fall back to a network namespace each. That try (a probe: nsenter,
 * bubblewrap and a shell) is remembered in the state directory once it passed, keyed by the
 * platform (sandbox/detect.ts recallJoin), and not made again while the key holds; a run that
 * then fails to set up has a namespace taken on that word probed at once (reprobe).
 *
 * The gateway may also open a listener inside the namespace (the runs' way to the egress proxy,
 * egress/bridge.ts): a short-lived process entered into it opens the socket and hands it over.
 * A caller that knows its run will go through the proxy says so when it joins (`listener`): that
 * process is then started as soon as the holder's namespace is up, beside the entering probe,
 * instead of after it and after the proxy has loaded (a node start, some 40 ms, is the longest
 * wait of a CLI run). Its listener is handed to the first listenInside() of that namespace, and
 * closed with the network if nobody asks for it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { accessSync, constants, readlinkSync } from 'node:fs';
import { Server as NetServer } from 'node:net';
import { getDescriptorCloser } from '../inherited-fds';
import { getEgressListenerSource } from '../programs';

const NSENTER_CANDIDATES = ['/usr/bin/nsenter', '/bin/nsenter', '/usr/sbin/nsenter'];
const START_TIMEOUT_MS = 10_000;

export interface NetworkJoin {
  /** Program and arguments that run the sandbox helper inside the shared namespace. */
  readonly prefix: readonly string[];
  /** The namespace's inode (`net:[N]`), for the audit record. */
  readonly namespace: string;
}

function findNsenter(): string | undefined {
  return NSENTER_CANDIDATES.find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** What `pipe` says until `end` (or the pipe closes, or START_TIMEOUT_MS pass): the text read. */
function readUntil(pipe: NodeJS.ReadableStream | null, end: string): Promise<string> {
  return new Promise((resolve) => {
    if (!pipe) {
      resolve('');
      return;
    }
    let text = '';
    const done = (): void => {
      clearTimeout(timer);
      resolve(text);
    };
    const timer = setTimeout(done, START_TIMEOUT_MS);
    pipe.setEncoding('utf8');
    pipe.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes(end)) done();
    });
    pipe.on('end', done);
    pipe.on('error', done);
  });
}

/**
 * Lists a process with whatever ends this gateway's processes if the gateway dies (the
 * watchdog): `cookie` is the variable and value the holder carries in its environment; the
 * returned function takes it off the list.
 */
export type WatchHolder = (cookie: { readonly name: string; readonly value: string }) => () => void;

/**
 * Resolves once process `pid` is inside the network namespace `namespace` (`net:[N]`), has ended,
 * or `limitMs` passed. A run enters the shared namespace by the holder's /proc path (nsenter)
 * a moment after it was spawned; a run that is to outlive its gateway (a background run kept on
 * close, a detached CLI run) must be inside before the gateway may end the holder, or its
 * nsenter finds no namespace to enter.
 */
export async function untilEntered(pid: number, namespace: string, limitMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    let current: string;
    try {
      current = readlinkSync(`/proc/${pid}/ns/net`);
    } catch {
      return; // ended (its end is recorded as any other), or not ours to look at
    }
    if (current === namespace || Date.now() >= deadline) return;
    await delay(5);
  }
}

/** The loopback listener of the runs' way to the egress proxy (egress/bridge.ts SharedListener). */
const DEFAULT_LISTENER: ReadonlyArray<{ readonly host: string; readonly port: number }> = Object.freeze([{ host: '127.0.0.1', port: 0 }]);

export interface JoinOptions {
  /**
   * The run will reach the egress proxy through the namespace's loopback listener: when the holder
   * is started for this join, the listener is opened beside the entering probe.
   */
  readonly listener?: boolean;
}

/**
 * What the gateway remembers across processes about entering a shared namespace (sandbox/detect.ts
 * recallJoin and rememberJoin, bound to its state directory and helper): whether the probe that
 * enters it with `nsenter` passed before on this platform.
 */
export interface JoinMemory {
  recall(nsenter: string): boolean;
  remember(nsenter: string): void;
}

export class SharedNetwork {
  readonly #helper: string;
  readonly #watch: WatchHolder | undefined;
  #unwatch: (() => void) | undefined;
  #holder: ChildProcess | undefined;
  #pid = 0;
  #namespace = '';
  #starting: Promise<NetworkJoin | undefined> | undefined;
  #closed = false;
  /** Processes started inside the namespace (listenInside), ended with it. */
  readonly #inside = new Set<ChildProcess>();
  /** The loopback listener opened alongside the holder's start (JoinOptions.listener), not yet handed out. */
  #early: { readonly namespace: string; readonly opened: Promise<Array<NetServer | string> | undefined> } | undefined;
  #wantListener = false;
  /** Resolved once a start has spawned what it starts beside the probe (or ended): see started(). */
  #spawned: { promise: Promise<void>; resolve: () => void } | undefined;

  /** Where a working join is remembered (sandbox/detect.ts recallJoin); none: always probed. */
  readonly #memory: JoinMemory | undefined;
  /** The join was taken on the remembered word, not probed (see unverified). */
  #recalled = false;

  constructor(helper: string, watch?: WatchHolder, memory?: JoinMemory) {
    this.#helper = helper;
    this.#watch = watch;
    this.#memory = memory;
  }

  /** Whether the namespace is used on a remembered probe's word, not yet probed by this process. */
  get unverified(): boolean {
    return this.#recalled;
  }

  /**
   * Probes a namespace used on a remembered word (a run failed to set up, perhaps in it): true
   * when entering works (it is verified from now on), false when it does not (it is closed:
   * the gateway starts another, which probes).
   */
  async reprobe(): Promise<boolean> {
    if (!this.#recalled || this.#closed || !this.#holder) return true;
    const entered = await probeJoin(this.#describe());
    if (entered) this.#recalled = false;
    else this.close();
    return entered;
  }

  /** The way into the shared namespace, starting the holder on first use; undefined = not possible. */
  join(options: JoinOptions = {}): Promise<NetworkJoin | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    if (options.listener) this.#wantListener = true;
    if (this.#holder && this.#isCurrent()) return Promise.resolve(this.#describe());
    if (!this.#starting) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((done) => { resolve = done; });
      this.#spawned = { promise, resolve };
      this.#starting = this.#start().finally(() => {
        this.#starting = undefined;
        resolve();
      });
    }
    return this.#starting;
  }

  /**
   * Resolves when the start under way has its holder's namespace and has spawned the listener's
   * process beside the probe (or has ended): from then on it waits on other processes only.
   */
  started(): Promise<void> {
    return this.#spawned?.promise ?? Promise.resolve();
  }

  /** The namespace's identity (`net:[N]`), starting the holder if needed; undefined = no shared namespace. */
  async current(): Promise<string | undefined> {
    return (await this.join())?.namespace;
  }

  /**
   * A TCP listener on the shared namespace's 127.0.0.1, held by this process: a short-lived node
   * (egress-listener.js) entered into the namespace opens it, sends it over its IPC channel with
   * the namespace it is in, and exits. Connections to it are accepted here, inside the namespace's
   * network, with no process relaying their bytes. Resolves to undefined when the namespace is no
   * longer `namespace` (the holder was replaced, its pid reused: the child's own word is checked,
   * not only the holder's pid) or the child did not hand a listener over in time.
   */
  async listenInside(namespace: string): Promise<NetServer | undefined> {
    const [first] = (await this.listenInsideMany(namespace, [{ host: '127.0.0.1', port: 0 }])) ?? [];
    if (typeof first === 'string') throw new Error(`cannot listen on 127.0.0.1: ${first}`);
    return first;
  }

  /**
   * Listeners on several addresses inside the namespace in one go (one short-lived process for
   * all): each entry is the listener, or the error code that kept it from listening there
   * (`EADDRINUSE`: a run holds that port; `EADDRNOTAVAIL`: no such address, as ::1 without IPv6).
   * Undefined as for listenInside.
   */
  async listenInsideMany(namespace: string, endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>): Promise<Array<NetServer | string> | undefined> {
    if (this.#closed || !this.#holder || namespace !== this.#namespace || !this.#isCurrent()) return undefined;
    const early = this.#early;
    if (early && sameEndpoints(endpoints, DEFAULT_LISTENER)) {
      this.#early = undefined;
      // Opened for this namespace while the holder started; its process checked the namespace it
      // was in, as below. A namespace replaced since then is not this one: closed, and opened anew.
      const opened = await early.opened.catch(() => undefined);
      if (opened && early.namespace === namespace && namespace === this.#namespace && !this.#closed && this.#isCurrent()) {
        for (const server of opened) if (server instanceof NetServer) server.ref();
        return opened;
      }
      closeServers(opened);
    }
    return this.#openInside(namespace, endpoints);
  }

  /** The short-lived process that opens `endpoints` inside the namespace (its holder is `this.#pid`) and hands them over. */
  async #openInside(namespace: string, endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>): Promise<Array<NetServer | string> | undefined> {
    const [nsenter, ...prefix] = this.#describe().prefix;
    const cookie = { name: 'EXECGATE_RUN_ID', value: `listener_${randomBytes(8).toString('hex')}` };
    const unwatch = this.#watch?.(cookie);
    // No bubblewrap around it: it runs execgate's own code only, handles no connection, and is gone
    // before any run uses the listener. The helper (last word of the prefix) is left out.
    const wanted = JSON.stringify(endpoints.map((endpoint) => [endpoint.host, endpoint.port]));
    const child = spawn(nsenter, [...prefix.slice(0, -1), process.execPath, '-e', getEgressListenerSource(), wanted], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { PATH: '/usr/bin:/bin', [cookie.name]: cookie.value },
    });
    this.#inside.add(child);
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-500); });
    const results: Array<NetServer | string | undefined> = endpoints.map(() => undefined);
    const closeAll = (): void => { for (const result of results) if (result instanceof NetServer) result.close(); };
    try {
      return await new Promise<Array<NetServer | string> | undefined>((resolve, reject) => {
        let left = endpoints.length;
        let foreign = false;
        // A listener that arrives once this has settled (timed out, or failed) is closed at once: a
        // listener held by nobody kept the process alive (a CLI run that never exited).
        let settled = false;
        const fail = (error: Error): void => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          reject(error);
        };
        const timer = setTimeout(() => fail(new Error(`it did not hand its listeners over within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
        child.once('error', fail);
        // 'close', not 'exit': the child sends its listeners and exits at once, and its exit can be
        // seen before the messages still in its channel are read (it was, under load: the run
        // failed over to a second listener while the first, received after, was never closed).
        child.once('close', (code, signal) => {
          fail(new Error(`it exited (${signal ?? `code ${code}`}) without handing its listeners over${stderr ? `: ${stderr.trim()}` : ''}`));
        });
        child.on('message', (message: { namespace?: unknown; index?: unknown; error?: unknown }, handle: unknown) => {
          const server = handle instanceof NetServer ? handle : undefined;
          if (settled) {
            server?.close();
            return;
          }
          const index = typeof message?.index === 'number' && message.index >= 0 && message.index < endpoints.length ? message.index : -1;
          if (message?.namespace !== namespace || this.#closed || index === -1 || results[index] !== undefined) foreign = true;
          if (foreign) {
            server?.close();
          } else {
            results[index] = server ?? (typeof message.error === 'string' ? message.error : 'ENOLISTENER');
          }
          left -= 1;
          if (left > 0) return;
          settled = true;
          clearTimeout(timer);
          if (foreign) {
            closeAll();
            resolve(undefined);
            return;
          }
          resolve(results as Array<NetServer | string>);
        });
      });
    } catch (error) {
      closeAll();
      throw error;
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      this.#inside.delete(child);
      unwatch?.();
    }
  }

  /** A process inside the namespace (its holder): /proc/PID/net/tcp lists the namespace's sockets. Undefined when there is none. */
  holderPid(namespace: string): number | undefined {
    return this.#holder && namespace === this.#namespace && this.#isCurrent() ? this.#pid : undefined;
  }

  /** The holder is still the process whose namespace we recorded (pids are reused). */
  #isCurrent(): boolean {
    try {
      return readlinkSync(`/proc/${this.#pid}/ns/net`) === this.#namespace;
    } catch {
      return false;
    }
  }

  #describe(): NetworkJoin {
    const nsenter = findNsenter() as string;
    const user = process.getuid?.() === 0 ? [] : [`--user=/proc/${this.#pid}/ns/user`, '--preserve-credentials'];
    return { prefix: [nsenter, ...user, `--net=/proc/${this.#pid}/ns/net`, '--', this.#helper], namespace: this.#namespace };
  }

  async #start(): Promise<NetworkJoin | undefined> {
    if (findNsenter() === undefined) return undefined;
    this.#stopHolder();
    // The holder carries a cookie and is listed with the watchdog before it starts, so a gateway
    // that dies (SIGKILL included) does not leave it behind holding an empty namespace.
    const cookie = { name: 'EXECGATE_RUN_ID', value: `net_${randomBytes(8).toString('hex')}` };
    this.#unwatch = this.#watch?.(cookie);
    // No `--dev`: unprivileged, bubblewrap mounts devpts as uid 0 of a first user namespace and
    // then moves the process into a second one, and the network namespace would belong to the
    // first, which nsenter cannot reach from the second (EPERM). Without it there is one user
    // namespace, owning the network namespace, and entering it gives the right to join.
    // It lives as long as the gateway: a descriptor the gateway holds without close-on-exec just
    // now (another run's terminal) must not stay open in it all that time.
    // Its command says `ready` before it sleeps: bubblewrap reports the child's pid (info fd) as
    // soon as it has cloned it, before the child has written its own uid map and brought the
    // loopback up. Entered in that window (measured here: often, under load), the user namespace
    // has no mapping yet, bubblewrap inside it cannot make its own ("No permissions to create new
    // namespace"), the probe fails and every run falls back to a namespace of its own: a dev
    // server from one run is then unreachable from the next. The command runs only once the
    // set-up is complete. Its stdout is closed after the word, so nothing writes to the pipe later.
    const holder = spawn(this.#helper, [
      '--ro-bind', '/', '/', '--unshare-net', '--unshare-pid', '--die-with-parent',
      '--new-session', '--cap-drop', 'ALL', '--info-fd', '3', '--', ...getDescriptorCloser(), '/bin/sh', '-c', 'echo ready; exec sleep infinity >&-',
    ], { stdio: ['ignore', 'pipe', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin', [cookie.name]: cookie.value } });
    holder.on('error', () => { /* reported by the pipes closing */ });
    const [info, ready] = await Promise.all([
      readUntil(holder.stdio[3] as NodeJS.ReadableStream | null, '}'),
      readUntil(holder.stdout, 'ready\n'),
    ]);
    const pid = Number((/"child-pid":\s*(\d+)/.exec(info) ?? [])[1]);
    let namespace = '';
    try {
      namespace = readlinkSync(`/proc/${pid}/ns/net`);
    } catch {
      // not started
    }
    if (!pid || !namespace || !ready.includes('ready\n') || this.#closed) {
      holder.kill('SIGKILL');
      return undefined;
    }
    (holder.stdio[3] as unknown as { destroy(): void } | null)?.destroy();
    holder.stdout?.destroy();
    holder.unref();
    this.#pid = pid;
    this.#namespace = namespace;
    // Entering is tried once: where it is refused (a user namespace nsenter may not join), runs
    // fall back to a network namespace each rather than failing. Waited for without holding the
    // event loop; the holder is this gateway's (join() hands it out) only once the probe passed.
    const join = this.#describe();
    // The egress listener's process starts now, beside the probe (JoinOptions.listener); unref'd
    // until handed out, so that a listener nobody took keeps no process alive.
    if (this.#wantListener) {
      const opened = this.#openInside(namespace, DEFAULT_LISTENER).then((servers) => {
        for (const server of servers ?? []) if (server instanceof NetServer) server.unref();
        return servers;
      });
      opened.catch(() => undefined);
      this.#early = { namespace, opened };
    }
    this.#spawned?.resolve();
    // Entering was remembered as working with this helper, nsenter and platform: no probe.
    this.#recalled = this.#memory?.recall(join.prefix[0]) === true;
    const entered = this.#recalled || await probeJoin(join);
    if (!entered || this.#closed) {
      this.#dropEarly();
      holder.kill('SIGKILL');
      this.#unwatch?.();
      this.#unwatch = undefined;
      if (!entered) this.#closed = true;
      return undefined;
    }
    if (!this.#recalled) this.#memory?.remember(join.prefix[0]);
    this.#holder = holder;
    return join;
  }

  /** Close the early listener nobody took (its process, if still starting, is ended with #inside). */
  #dropEarly(): void {
    const early = this.#early;
    this.#early = undefined;
    if (early) void early.opened.then(closeServers, () => undefined);
  }

  #stopHolder(): void {
    this.#dropEarly();
    if (this.#holder && this.#holder.exitCode === null) this.#holder.kill('SIGKILL');
    this.#holder = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
  }

  /** End the holder; runs inside keep the namespace alive until they end. */
  close(): void {
    this.#closed = true;
    for (const child of this.#inside) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    this.#stopHolder();
  }
}

/** Whether a bubblewrap entered this way starts and runs a shell (the probe). */
function probeJoin(join: NetworkJoin): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const probe = spawn(join.prefix[0], [...join.prefix.slice(1), '--ro-bind', '/', '/', '--die-with-parent', '--', '/bin/sh', '-c', 'exit 0'], {
      stdio: 'ignore', timeout: START_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' },
    });
    probe.once('error', () => resolve(false));
    probe.once('exit', (code) => resolve(code === 0));
  });
}

/*
 * Started ahead of any gateway (the CLI, before it loads the gateway's modules: its holder and
 * listener then start while they load), and taken by the first gateway of this process that
 * asks for a shared namespace for the same helper. One nobody took is closed (closePrestarted).
 */
const prestarted = new Map<string, SharedNetwork>();

/** Start the shared namespace for `helper` now, with the listener when `options.listener`. */
export function prestartSharedNetwork(helper: string, watch: WatchHolder | undefined, options: JoinOptions = {}, memory?: JoinMemory): void {
  if (prestarted.has(helper)) return;
  const network = new SharedNetwork(helper, watch, memory);
  prestarted.set(helper, network);
  network.join(options).catch(() => undefined);
}

/** Resolves when every prestarted network waits on other processes only (SharedNetwork.started), or after `limitMs`. */
export async function prestartedStarted(limitMs: number): Promise<void> {
  if (prestarted.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all([...prestarted.values()].map((network) => network.started())),
    new Promise<void>((resolve) => { timer = setTimeout(resolve, limitMs); }),
  ]);
  clearTimeout(timer);
}

/** The network prestarted for `helper`, handed out once; undefined when there is none. */
export function takePrestartedSharedNetwork(helper: string): SharedNetwork | undefined {
  const network = prestarted.get(helper);
  prestarted.delete(helper);
  return network;
}

/** Close what was prestarted and not taken (the CLI's command did not sandbox a run). */
export function closePrestartedSharedNetworks(): void {
  for (const network of prestarted.values()) network.close();
  prestarted.clear();
}

function sameEndpoints(a: ReadonlyArray<{ readonly host: string; readonly port: number }>, b: ReadonlyArray<{ readonly host: string; readonly port: number }>): boolean {
  return a.length === b.length && a.every((endpoint, i) => endpoint.host === b[i].host && endpoint.port === b[i].port);
}

function closeServers(servers: ReadonlyArray<NetServer | string> | undefined): void {
  for (const server of servers ?? []) if (server instanceof NetServer) server.close();
}
