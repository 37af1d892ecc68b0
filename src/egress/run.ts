/*
 * The one call the sandboxed run makes for its network: after the plan's references are
 * resolved, register the run with the proxy (its policy, bound secrets and fresh proxy
 * credentials), and get back what the sandbox builder needs (bubblewrap arguments, the child's
 * proxy variables, the argv wrapper) plus the sentinel each injected reference's variable holds
 * instead of its value. The caller closes `run` when the run has ended: its credentials are
 * refused from then on.
 *
 * A run inside the gateway's shared network namespace uses the namespace's one listener (opened
 * here on the first proxied run, held and served by the gateway's process); a run with a network
 * namespace of its own brings its own bridge.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError } from '../errors';
import { getSandboxEgress, SharedListener, SharedTcpListeners, type NamespaceLauncher, type SandboxEgress } from './bridge';
import { getHostsFile, getHostServices, getLocalEndpoints, getTcpDestinations } from './tcp';
import { CONNECT_SOCKET_MOUNT, createConnectToken, getConnectHandoffSupport, getConnectHandoffWrap, getConnectSocketPath } from './tcp-notify';
import { createInjections, type EgressCheck, type Injection } from './plan';
import type { EgressProxy, EgressRun } from './proxy';
import type { NetworkPolicy, SecretBinding } from './rules';

export interface RunEgress {
  readonly run: EgressRun;
  readonly sandbox: SandboxEgress;
  /** `secret:NAME` -> the sentinel to put where the value would have gone. */
  readonly sentinels: ReadonlyMap<string, string>;
}

const listeners = new WeakMap<NamespaceLauncher, { proxy: EgressProxy; listener: SharedListener }>();
const tcpListeners = new WeakMap<NamespaceLauncher, { proxy: EgressProxy; listeners: SharedTcpListeners }>();

/** The shared namespace's raw TCP listeners, served by `proxy`. */
function getSharedTcpListeners(launcher: NamespaceLauncher, proxy: EgressProxy): SharedTcpListeners {
  let entry = tcpListeners.get(launcher);
  if (!entry || entry.proxy !== proxy) {
    entry?.listeners.stop();
    entry = { proxy, listeners: new SharedTcpListeners(launcher, (server, holderPid) => proxy.serveTcp(server, holderPid)) };
    tcpListeners.set(launcher, entry);
  }
  return entry.listeners;
}

/** The run's /etc/hosts, written once per content into `dir` (files every run may read). */
function writeHostsFile(dir: string, text: string): string {
  const path = join(dir, `hosts-${createHash('sha256').update(text).digest('hex').slice(0, 16)}`);
  if (!existsSync(path)) {
    const temp = `${path}.${randomBytes(4).toString('hex')}`;
    writeFileSync(temp, text, { mode: 0o644 });
    renameSync(temp, path);
  }
  return path;
}

/** The shared namespace's listener, served by `proxy` (one per namespace). */
export function getSharedListener(launcher: NamespaceLauncher, proxy: EgressProxy): SharedListener {
  let entry = listeners.get(launcher);
  if (!entry || entry.proxy !== proxy) {
    entry?.listener.stop();
    entry = { proxy, listener: new SharedListener(launcher, (server) => proxy.serveShared(server)) };
    listeners.set(launcher, entry);
  }
  return entry.listener;
}

export async function openRunEgress(proxy: EgressProxy, options: {
  runId: string;
  network: NetworkPolicy;
  check: EgressCheck;
  /** Resolved values by reference (`secret:NAME`); only the injected ones are used. */
  values: ReadonlyMap<string, string>;
  /** `secrets.minLength`: responses are cleaned by the masker with the run output's settings. */
  minLength?: number;
  /** The shared network namespace the run joins; absent: the run has a namespace (and a bridge) of its own. */
  shared?: NamespaceLauncher;
  /** The policy's `secrets.bind` (all of it: keys delivered by ssh-agent imply raw TCP destinations, tcp.ts). */
  bindings?: readonly SecretBinding[];
  /** The port of a bridge of the run's own (tests); default: ephemeral. */
  port?: number;
  /**
   * A socket (and a bridge) of the run's own, not the shared one: for a run another process will
   * serve (a detached background run's supervisor adopts the socket; proxy.ts handOff).
   */
  ownSocket?: boolean;
  /** Injections made outside the command's references (AWS bindings, plan/aws.ts). */
  extraInjections?: readonly Injection[];
}): Promise<RunEgress> {
  const injections = [...createInjections(options.check, options.values), ...(options.extraInjections ?? [])];
  // Per-run proxy credentials: the gateway's runs share a loopback and a listener, and these are
  // what the proxy tells them apart by. The username is the lookup key, the password the proof.
  const credentials = { username: `run-${randomBytes(9).toString('base64url')}`, password: randomBytes(24).toString('base64url') };
  const listener = options.shared && !options.ownSocket ? getSharedListener(options.shared, proxy) : undefined;
  const sharedPort = await listener?.port();
  const tcp = getTcpDestinations(options.network, options.bindings);
  const endpoints = getLocalEndpoints(tcp, getHostServices(options.network));
  if (listener && endpoints.length > 0) await getSharedTcpListeners(options.shared!, proxy).ensure(endpoints);
  // A run another process will hold has its connect hand-off token chosen here: it travels with
  // the run to that process's supervisor (proxy.ts adoptRun).
  const connectToken = endpoints.length > 0 && options.ownSocket && proxy.handsOverConnects && getConnectHandoffSupport() !== undefined ? createConnectToken() : undefined;
  const run = await proxy.openRun({
    runId: options.runId, network: options.network, narrowing: options.check.narrowing, injections, credentials, shared: !options.ownSocket,
    ...(options.minLength !== undefined ? { minLength: options.minLength } : {}),
    ...(tcp.length > 0 ? { tcp } : {}),
    ...(connectToken !== undefined ? { connectToken } : {}),
  });
  let hostsFile: string | undefined;
  try {
    if (tcp.length > 0) hostsFile = writeHostsFile(run.dir, getHostsFile(tcp));
  } catch (error) {
    await run.close().catch(() => undefined);
    throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not write the hosts file of run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
  }
  // Raw TCP connections handed over connected, not relayed (tcp-notify.ts), where the host can.
  let handoff: Awaited<ReturnType<EgressProxy['openConnectHandoff']>>;
  if (connectToken !== undefined) {
    // A run another process will hold: that process's supervisor listens in the run's directory
    // for the token, before the run starts (proxy.ts adoptRun). The file stands in for the socket
    // until then.
    const source = getConnectSocketPath(run.dir);
    try {
      writeFileSync(source, '', { mode: 0o644 });
    } catch (error) {
      await run.close().catch(() => undefined);
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not prepare the raw TCP hand-off of run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
    handoff = { source, wrap: getConnectHandoffWrap(connectToken)! };
  } else if (endpoints.length > 0 && !options.ownSocket) {
    try {
      handoff = await proxy.openConnectHandoff(options.runId, endpoints);
    } catch (error) {
      await run.close().catch(() => undefined);
      throw new ExecgateError('EXECGATE_ERR_EGRESS_PROXY_FAILED', `Could not prepare the raw TCP hand-off of run ${options.runId}: ${(error as Error).message}.`, { runId: options.runId }, { cause: error });
    }
  }
  const sandbox = getSandboxEgress(run, {
    port: options.port, sharedPort, allow: options.network.allow, hostsFile, hostSockets: run.hostSockets,
    // A bridge speaks for its run (it adds the run's credentials to every raw connection), so
    // it listens for raw TCP only where no other run can reach it: in a namespace of its own.
    // A run with its own socket in the shared namespace (a CLI background run) gets no relay: its
    // connects are handed over (above) where the host can.
    // Handed over, a port below 1024 needs no listener of the bridge's (which could not open it
    // without a capability no sandboxed process keeps).
    ...(options.shared ? {} : { tcpEndpoints: handoff ? endpoints.filter((endpoint) => endpoint.port >= 1024) : endpoints }),
  });
  return Object.freeze({
    run,
    sandbox: handoff
      ? Object.freeze({
        ...sandbox,
        mounts: Object.freeze([...sandbox.mounts, { kind: 'bind', source: handoff.source, dest: CONNECT_SOCKET_MOUNT, readOnly: true } as const]),
        // The filter first: the run's own bridge (a namespace of its own) then runs under it too.
        wrap: (argv: readonly string[]) => handoff.wrap(sandbox.wrap(argv)),
      })
      : sandbox,
    sentinels: new Map(injections.filter((injection) => injection.aws === undefined).map((injection) => [injection.ref, injection.sentinel])),
  });
}
