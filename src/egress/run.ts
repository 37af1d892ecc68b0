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
import { randomBytes } from 'node:crypto';
import { getSandboxEgress, SharedListener, type NamespaceLauncher, type SandboxEgress } from './bridge';
import { createInjections, type EgressCheck, type Injection } from './plan';
import type { EgressProxy, EgressRun } from './proxy';
import type { NetworkPolicy } from './rules';

export interface RunEgress {
  readonly run: EgressRun;
  readonly sandbox: SandboxEgress;
  /** `secret:NAME` -> the sentinel to put where the value would have gone. */
  readonly sentinels: ReadonlyMap<string, string>;
}

const listeners = new WeakMap<NamespaceLauncher, { proxy: EgressProxy; listener: SharedListener }>();

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
  const run = await proxy.openRun({
    runId: options.runId, network: options.network, narrowing: options.check.narrowing, injections, credentials, shared: !options.ownSocket,
    ...(options.minLength !== undefined ? { minLength: options.minLength } : {}),
  });
  return Object.freeze({
    run,
    sandbox: getSandboxEgress(run, { port: options.port, sharedPort, allow: options.network.allow }),
    sentinels: new Map(injections.filter((injection) => injection.aws === undefined).map((injection) => [injection.ref, injection.sentinel])),
  });
}
