/*
 * Raw TCP egress (`sandbox.network.tcp`) and host services (`sandbox.network.hostServices`): what
 * a run may reach with any client, not only an HTTP one (`psql`, `nc`, `ssh`, a database driver).
 *
 * The run's network namespace has nothing but loopback, and no DNS. Each destination's host name
 * gets an address of its own in 127.77.0.0/16 (127.77.0.1, .2, ... one per distinct name, in
 * order), which a generated /etc/hosts, bound read-only over the sandbox's, gives the run; the
 * gateway accepts on ADDRESS:PORT (shared namespace: listeners it holds inside it; a namespace of
 * the run's own: the run's bridge, which carries the connection to the proxy's socket with a
 * preamble) and connects on to the real host. A name not listed does not resolve at all. A host
 * service is the host's 127.0.0.1:PORT at the run's 127.0.0.1:PORT and [::1]:PORT.
 *
 * Every connection is decided as the HTTP path decides (rules.ts, address.ts): `mode: none`
 * refuses; `deny` wins; an env-delivered bound secret narrows the run to its hosts; then the name
 * is resolved here, every address it resolves to checked (loopback, link-local, metadata, this
 * host's addresses are refused: a name is not an IP literal the policy named) and the checked one
 * dialled, never resolved twice. `mode: open` opens no raw TCP: only what is listed is reached. A
 * host service is the only way to the host's loopback: dialled at 127.0.0.1:PORT, no name
 * involved. Each connection, allowed or refused, is an `egress.decision` (`via: tcp` or `host`)
 * against its run; a refused one is closed at once (no bytes are sent back: a raw protocol has no
 * place for a reason).
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readlinkSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { resolveAllowed, systemResolver } from './address';
import { formatAuthority } from './authority';
import { matchesHost } from './hosts';
import type { ProxyCore, RunContext } from './proxy-core';
import { STREAM_HIGH_WATER_MARK, track } from './proxy-core';
import type { EgressDecision } from './proxy-types';
import type { NetworkPolicy, SecretBinding } from './rules';
import { ReadBuffers } from './passthrough';
import { joinSockets } from './tunnel';
import { getParent } from './upstream';

/** The block the run's names resolve into (its loopback: never routed anywhere). */
export const TCP_ADDRESS_PREFIX = '127.77.';
/** Where the run's hosts file comes from, bound over the sandbox's /etc/hosts. */
export const HOSTS_MOUNT = '/etc/hosts';

/** One raw TCP destination of a run and the address its name has inside the run. */
export interface TcpDestination {
  readonly host: string;
  readonly port: number;
  /** 127.77.X.Y: what the run's /etc/hosts says the name is. */
  readonly address: string;
  /** Where it comes from: `tcp:TEXT` (sandbox.network.tcp) or `bound:REF` (a key delivered by ssh-agent). */
  readonly rule: string;
}

/** Where a connection on the run's loopback goes: a named destination or a host service. */
export type LocalTarget =
  | { readonly kind: 'tcp'; readonly destination: TcpDestination }
  | { readonly kind: 'host'; readonly port: number };

/** The inside address of the Nth distinct name (N from 0): 127.77.0.1, ..., 127.77.0.255, 127.77.1.0, ... */
export function getTcpAddress(index: number): string {
  const n = index + 1;
  return `${TCP_ADDRESS_PREFIX}${Math.floor(n / 256)}.${n % 256}`;
}

/**
 * A run's raw TCP destinations: `sandbox.network.tcp` in policy order, then the hosts of keys
 * bound with `delivery: ssh-agent` (implied destinations: the key is no use without reaching its
 * hosts). Each distinct name gets one inside address, in that order. The one place that says
 * what raw TCP a run may reach: the listeners, the hosts file, the decision and `policy explain`
 * all read it.
 */
export function getTcpDestinations(network: NetworkPolicy, bindings: readonly SecretBinding[] = []): readonly TcpDestination[] {
  if (network.mode === 'none') return Object.freeze([]);
  const entries: Array<{ host: string; port: number; rule: string }> = (network.tcp ?? []).map((entry) => ({ host: entry.host, port: entry.port, rule: `tcp:${entry.text}` }));
  // Implied destinations of SSH keys (`delivery: ssh-agent`, port 22 unless a host names one).
  for (const binding of bindings) {
    if ((binding.delivery as string) !== 'ssh-agent') continue;
    for (const pattern of binding.hosts) {
      if (pattern.kind === 'name') entries.push({ host: pattern.host, port: pattern.port ?? 22, rule: `bound:${binding.ref}` });
    }
  }
  const addresses = new Map<string, string>();
  const seen = new Set<string>();
  const out: TcpDestination[] = [];
  for (const entry of entries) {
    const key = `${entry.host}:${entry.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    let address = addresses.get(entry.host);
    if (address === undefined) {
      address = getTcpAddress(addresses.size);
      addresses.set(entry.host, address);
    }
    out.push(Object.freeze({ host: entry.host, port: entry.port, address, rule: entry.rule }));
  }
  return Object.freeze(out);
}

/** The host ports forwarded into the run (`sandbox.network.hostServices`). */
export function getHostServices(network: NetworkPolicy): readonly number[] {
  return network.mode === 'none' ? Object.freeze([]) : network.hostServices ?? Object.freeze([]);
}

/** The run's /etc/hosts: the usual localhost lines, then one line per named destination. */
export function getHostsFile(destinations: readonly TcpDestination[]): string {
  const lines = ['127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback'];
  const named = new Set<string>();
  for (const destination of destinations) {
    if (named.has(destination.host)) continue;
    named.add(destination.host);
    lines.push(`${destination.address}\t${destination.host}`);
  }
  return `# execgate: the raw TCP destinations of this run's policy (sandbox.network.tcp)\n${lines.join('\n')}\n`;
}

/** The loopback addresses and ports the gateway (or the run's bridge) listens on for a run. */
export function getLocalEndpoints(destinations: readonly TcpDestination[], hostServices: readonly number[]): Array<{ host: string; port: number }> {
  return [
    ...destinations.map((d) => ({ host: d.address, port: d.port })),
    ...hostServices.flatMap((port) => [{ host: '127.0.0.1', port }, { host: '::1', port }]),
  ];
}

/** What the run's policy says a connection to its loopback at address:port is for, if anything. */
export function findLocalTarget(context: RunContext, address: string, port: number): LocalTarget | undefined {
  const local = address.replace(/^::ffff:/i, '');
  if (local === '127.0.0.1' || local === '::1') {
    return getHostServices(context.options.network).includes(port) ? { kind: 'host', port } : undefined;
  }
  const destination = (context.options.tcp ?? []).find((d) => d.address === local && d.port === port);
  return destination ? { kind: 'tcp', destination } : undefined;
}

/** The decision for a connection of `context`'s run to its loopback at address:port. */
export async function decideTcp(core: ProxyCore, context: RunContext, address: string, port: number): Promise<EgressDecision> {
  const runId = context.options.runId;
  const target = findLocalTarget(context, address, port);
  if (!target) return { runId, via: address.startsWith(TCP_ADDRESS_PREFIX) ? 'tcp' : 'host', host: address, port, allowed: false, rule: 'not-a-destination' };
  const network = context.options.network;
  const narrowing = context.options.narrowing ?? [];
  if (target.kind === 'host') {
    const base = { runId, via: 'host' as const, host: '127.0.0.1', port };
    if (network.mode === 'none') return { ...base, allowed: false, rule: 'mode:none' };
    const narrowed = narrowing.find((binding) => !binding.hosts.some((pattern) => matchesHost(pattern, '127.0.0.1', port)));
    if (narrowed) return { ...base, allowed: false, rule: `bound:${narrowed.ref}` };
    return { ...base, allowed: true, rule: `hostService:${port}`, address: '127.0.0.1' };
  }
  const { destination } = target;
  const base = { runId, via: 'tcp' as const, host: destination.host, port: destination.port };
  if (network.mode === 'none') return { ...base, allowed: false, rule: 'mode:none' };
  const denied = network.deny.find((pattern) => matchesHost(pattern, destination.host, destination.port));
  if (denied) return { ...base, allowed: false, rule: `deny:${denied.text}` };
  const narrowed = narrowing.find((binding) => !binding.hosts.some((pattern) => matchesHost(pattern, destination.host, destination.port)));
  if (narrowed) return { ...base, allowed: false, rule: `bound:${narrowed.ref}` };
  const parent = getParent(context.route, destination.host, destination.port, true);
  const through = parent ? { parent: formatAuthority(parent.host, parent.port) } : {};
  const resolution = await resolveAllowed(destination.host, core.options.resolver ?? systemResolver);
  if (!resolution.address) {
    if (parent && resolution.refusal === 'resolve-failed') return { ...base, allowed: true, rule: destination.rule, ...through };
    return { ...base, allowed: false, rule: `address:${resolution.refusal}` };
  }
  return { ...base, allowed: true, rule: destination.rule, address: resolution.address, ...through };
}

/**
 * Carry `client` (a connection of `context`'s run to its loopback at address:port; undefined:
 * no run could be found for it) to where the run's policy says, or close it. Recorded either way.
 */
export async function relayTcp(core: ProxyCore, context: RunContext | undefined, client: Socket, address: string, port: number, orphan?: string): Promise<void> {
  client.on('error', () => client.destroy());
  if (!context) {
    core.record(undefined, { runId: '', via: address.startsWith(TCP_ADDRESS_PREFIX) ? 'tcp' : 'host', host: address, port, allowed: false, rule: orphan ?? 'no-run' });
    client.destroy();
    return;
  }
  track(context, client);
  // Each side's end is passed on alone (half-close: a client that sends its request and shuts
  // its writing, then reads the answer): neither socket ends its own writing when it reads an end.
  client.allowHalfOpen = true;
  // Nothing is read until the destination is open: the client's first bytes wait in its buffer.
  client.pause();
  const decision = await decideTcp(core, context, address, port);
  if (!decision.allowed || client.destroyed) {
    core.record(context, decision.allowed ? { ...decision, allowed: false, rule: 'client-gone' } : decision);
    client.destroy();
    return;
  }
  // The relay is joinSockets (a Node pipe of the two sockets, 256 KiB buffers; the upstream's
  // reads into buffers used again), chosen by measurement: 100 MiB from a loopback server through a relay process of each kind, 5 runs on a
  // loaded 2-core machine, median MB/s: Node pipe with 256 KiB buffers 658, with Node's 16 KiB
  // 547, socat 526 (direct 2110). Inside the gateway it also needs no process per connection
  // (bench/tcp.js, figure 15, measures it end to end).
  let joined = false;
  // The upstream reads into buffers used again where it is dialled directly (tunnel.ts).
  const buffers = decision.parent ? undefined : new ReadBuffers();
  const upstream = decision.via === 'host'
    ? core.openHost(decision.port, (error) => onOpen(error), buffers)
    : core.openTcp(context, decision, (error) => onOpen(error), buffers);
  function onOpen(error: Error | null): void {
    if (error) {
      if (joined) return;
      joined = true;
      core.record(context, { ...decision, allowed: false, rule: `${decision.parent ? 'upstream-failed' : 'dial-failed'}:${(error as NodeJS.ErrnoException).code ?? 'error'}` });
      client.destroy();
      return;
    }
    joined = true;
    core.record(context, decision);
    joinSockets(client, upstream, buffers);
    client.resume();
  }
  upstream.allowHalfOpen = true;
  context.sockets.add(upstream);
  upstream.once('close', () => context.sockets.delete(upstream));
  client.once('close', () => { if (!joined) upstream.destroy(); });
}

/**
 * Carry `client` (a connection to the run's own socket for the host's UNIX socket `path`) to that
 * socket, or close it. Recorded either way (`via: host`, the path as host, port 0).
 */
export function relaySocket(core: ProxyCore, context: RunContext, client: Socket, path: string): void {
  client.on('error', () => client.destroy());
  track(context, client);
  const base = { runId: context.options.runId, via: 'host' as const, host: path, port: 0 };
  // A secret in the run's environment narrows it to that secret's hosts; a socket is none of them.
  const narrowed = (context.options.narrowing ?? [])[0];
  if (context.options.network.mode === 'none' || narrowed) {
    core.record(context, { ...base, allowed: false, rule: narrowed ? `bound:${narrowed.ref}` : 'mode:none' });
    client.destroy();
    return;
  }
  const decision = { ...base, allowed: true, rule: `hostService:unix:${path}` };
  const pinned = pinSocket(path);
  if ('refusal' in pinned) {
    core.record(context, { ...decision, allowed: false, rule: `dial-failed:${pinned.refusal}` });
    client.destroy();
    return;
  }
  client.pause();
  const upstream = netConnect({ path: `/proc/self/fd/${pinned.fd}`, highWaterMark: STREAM_HIGH_WATER_MARK } as never);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    closeSync(pinned.fd);
  };
  let joined = false;
  upstream.once('close', release);
  upstream.once('connect', () => {
    release();
    joined = true;
    core.record(context, decision);
    joinSockets(client, upstream);
    client.resume();
  });
  upstream.once('error', (error: NodeJS.ErrnoException) => {
    release();
    if (joined) return;
    joined = true;
    core.record(context, { ...decision, allowed: false, rule: `dial-failed:${error.code ?? 'error'}` });
    client.destroy();
  });
  context.sockets.add(upstream);
  upstream.once('close', () => context.sockets.delete(upstream));
  client.once('close', () => { if (!joined) upstream.destroy(); });
}

/** Linux's O_PATH (not among Node's fs.constants): a descriptor that names a file without opening it. */
const O_PATH = 0o10000000;

/*
 * The host socket at `path`, pinned before it is dialled: the gateway dials it outside every
 * sandbox, and `path` may lie in a directory a run can write (a dev server's socket in the
 * project). There a run can move the directory aside and put a symlink at `path` to any socket of
 * the host (a container engine's), which a dial by name would follow. So the path is opened
 * without following a last symlink (O_PATH | O_NOFOLLOW), and dialled through that descriptor
 * (/proc/self/fd/N: the very file opened, whatever is renamed meanwhile) only if it is a socket
 * and the kernel's own name for it is `path` (no directory on the way was a symlink).
 */
function pinSocket(path: string): { fd: number } | { refusal: string } {
  let fd: number;
  try {
    fd = openSync(path, O_PATH | fsConstants.O_NOFOLLOW);
  } catch (error) {
    return { refusal: (error as NodeJS.ErrnoException).code ?? 'error' };
  }
  let refusal: string | undefined;
  try {
    if (!fstatSync(fd).isSocket()) refusal = 'not-a-socket';
    else if (readlinkSync(`/proc/self/fd/${fd}`) !== path) refusal = 'path-moved';
  } catch (error) {
    refusal = (error as NodeJS.ErrnoException).code ?? 'error';
  }
  if (refusal === undefined) return { fd };
  closeSync(fd);
  return { refusal };
}
