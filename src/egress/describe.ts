/*
 * What a run's network really is, said the same way in every record a reviewer reads: the
 * `exec.started` audit record, `policy explain`, the HTML report and the run's result. The
 * sandbox's network namespace always has loopback only; what a run can reach is the egress
 * policy's mode through the gateway's proxy (or nothing in `none`, or the host's own network
 * when the run is not sandboxed), and which of its secrets were bound to hosts or injected.
 */
import type { EgressDecision } from './proxy';
import { formatAuthority } from './authority';
import { getReason } from './reasons';
import { getHostServices, getTcpDestinations } from './tcp';
import type { Delivery, NetworkPolicy, SecretBinding } from './rules';

export interface RunNetwork {
  /** What the run may reach: the policy's mode, or `host` for an unsandboxed run (the host's network, unfiltered). */
  readonly mode: 'open' | 'allowlist' | 'none' | 'host';
  /**
   * The run's network namespace (loopback only): `shared` by the gateway's runs, `own` (a run
   * holding a `delivery: env` bound secret, or where the shared one cannot be entered), or `host`.
   */
  readonly namespace: 'shared' | 'own' | 'host';
  /** How traffic leaves: the gateway's egress proxy, not at all, or directly (unsandboxed). */
  readonly proxy: 'egress' | 'none' | 'direct';
  /** The parent proxy the egress proxy leaves through (host:port; never its credentials). */
  readonly parent?: string;
  readonly allow: readonly string[];
  readonly deny: readonly string[];
  /** The bound secrets (`secrets.bind`) this run uses. */
  readonly bound: readonly { readonly ref: string; readonly delivery: Delivery; readonly hosts: readonly string[] }[];
  /**
   * SSH keys the run's agent holds (`delivery: ssh-agent` bindings; sandboxed runs only): the
   * servers (`host:port`) and the host keys (fingerprints) each may log in to.
   */
  readonly ssh?: readonly { readonly ref: string; readonly hosts: readonly string[]; readonly hostKeys: readonly string[] }[];
  /** Of those, the ones whose value stayed in the gateway (the run held a sentinel). */
  readonly injected: readonly string[];
  /** Raw TCP destinations (`sandbox.network.tcp`, and the hosts of keys delivered by ssh-agent), with the address each name has inside the run. */
  readonly tcp?: readonly { readonly destination: string; readonly address: string; readonly rule: string }[];
  /** Ports of the host's loopback forwarded into the run (`sandbox.network.hostServices`). */
  readonly hostServices?: readonly number[];
  /** The host's UNIX sockets put at their own paths in the run (`hostServices: [{ unix: PATH }]`). */
  readonly hostSockets?: readonly string[];
}

export function describeRunNetwork(options: {
  network: NetworkPolicy;
  bindings: readonly SecretBinding[];
  /** References the command uses (`secret:NAME`). */
  refs: readonly string[];
  sandboxed: boolean;
  /** Whether the run goes through the egress proxy (sandboxed, mode not `none`, a proxy available). */
  proxied: boolean;
  /** Sandboxed: whether its namespace is the gateway's shared one. */
  shared: boolean;
  parent?: string;
}): RunNetwork {
  const used = new Set(options.refs);
  // An AWS binding is given to every proxied run, named in its command or not (plan/aws.ts).
  const bound = options.bindings.filter((binding) => used.has(binding.ref) || (binding.delivery === 'aws-sigv4' && options.proxied));
  const mode = !options.sandboxed ? 'host' : options.proxied ? options.network.mode : 'none';
  // Raw TCP and host services exist only through the proxy (an unsandboxed run has the host's network anyway).
  const tcp = options.proxied ? getTcpDestinations(options.network, options.bindings) : [];
  const hostServices = options.proxied ? getHostServices(options.network) : [];
  const ssh = options.sandboxed ? getSshKeysOfRun(options.bindings) : [];
  return Object.freeze({
    mode,
    namespace: !options.sandboxed ? 'host' : options.shared ? 'shared' : 'own',
    proxy: !options.sandboxed ? 'direct' : options.proxied ? 'egress' : 'none',
    ...(options.proxied && options.parent ? { parent: options.parent } : {}),
    allow: Object.freeze(options.network.allow.map((h) => h.text)),
    deny: Object.freeze(options.network.deny.map((h) => h.text)),
    bound: Object.freeze(bound.map((b) => Object.freeze({ ref: b.ref, delivery: b.delivery, hosts: Object.freeze(b.hosts.map((h) => h.text)) }))),
    injected: Object.freeze(options.proxied ? bound.filter((b) => b.delivery === 'inject').map((b) => b.ref) : []),
    ...(tcp.length > 0 ? { tcp: Object.freeze(tcp.map((d) => Object.freeze({ destination: formatAuthority(d.host, d.port), address: d.address, rule: d.rule }))) } : {}),
    ...(hostServices.length > 0 ? { hostServices: Object.freeze([...hostServices]) } : {}),
    ...(options.proxied && (options.network.hostSockets ?? []).length > 0 ? { hostSockets: Object.freeze([...options.network.hostSockets!]) } : {}),
    ...(ssh.length > 0 ? { ssh: Object.freeze(ssh) } : {}),
  });
}

/** The `delivery: ssh-agent` bindings as a run's agent holds them (every sandboxed run gets them). */
export function getSshKeysOfRun(bindings: readonly SecretBinding[]): Array<{ ref: string; hosts: readonly string[]; hostKeys: readonly string[] }> {
  return bindings.filter((b) => b.delivery === 'ssh-agent').map((b) => Object.freeze({
    ref: b.ref,
    hosts: Object.freeze(b.hosts.map((h) => `${h.host}:${h.port ?? 22}`)),
    hostKeys: Object.freeze((b.hostKeys ?? []).map((k) => `${k.type} ${k.fingerprint}`)),
  }));
}

/** One line for people (`policy explain`, the report). */
export function formatRunNetwork(network: RunNetwork): string {
  const reach = network.mode === 'host'
    ? 'the host\'s network, unfiltered (not sandboxed)'
    : network.mode === 'none'
      ? 'nothing (loopback only)'
      : `${network.mode === 'open' ? 'every public host' : `only ${network.allow.join(', ') || '(nothing allowed)'}`}${network.deny.length > 0 ? ` except ${network.deny.join(', ')}` : ''} through the egress proxy${network.parent ? ` (leaving through the parent proxy ${network.parent})` : ''}`;
  const namespace = network.namespace === 'host' ? '' : `; ${network.namespace === 'shared' ? 'loopback shared by the gateway\'s runs' : 'a loopback of its own'}`;
  const bound = network.bound.length > 0
    ? `; bound: ${network.bound.map((b) => `<<${b.ref}>> -> ${b.hosts.join(', ')} (${b.delivery === 'inject' && network.injected.includes(b.ref) ? 'injected' : b.delivery === 'aws-sigv4' ? 'AWS requests signed again by the proxy; the run holds a placeholder key' : b.delivery})`).join(', ')}`
    : '';
  const ssh = network.ssh && network.ssh.length > 0
    ? `; SSH agent: ${network.ssh.map((k) => `<<${k.ref}>> for ${k.hosts.join(', ')} (host keys ${k.hostKeys.join(', ')})`).join(', ')} (the key stays in the gateway; its hosts are raw TCP destinations too)`
    : '';
  const tcp = network.tcp && network.tcp.length > 0
    ? `; raw TCP: ${network.tcp.map((d) => `${d.destination} (at ${d.address}${d.rule.startsWith('bound:') ? `, for <<${d.rule.slice(6)}>>` : ''})`).join(', ')}`
    : '';
  const services = [...(network.hostServices ?? []).map((port) => `localhost:${port}`), ...(network.hostSockets ?? []).map((path) => `unix:${path}`)];
  const host = services.length > 0 ? `; host services (the host's, open to every run): ${services.join(', ')}` : '';
  return `${network.mode}: ${reach}${namespace}${bound}${ssh}${tcp}${host}`;
}

/** A decision as a run's result carries it: where, allowed or not, why. */
export interface EgressSummary {
  readonly host: string;
  readonly port: number;
  readonly via: string;
  readonly allowed: boolean;
  readonly rule: string;
  readonly reason?: string;
  readonly method?: string;
  readonly status?: number;
  readonly injected?: readonly string[];
}

export function summarizeDecisions(decisions: readonly EgressDecision[]): EgressSummary[] {
  return decisions.map((d) => Object.freeze({
    host: d.host,
    port: d.port,
    via: d.via,
    allowed: d.allowed,
    rule: d.rule,
    ...(!d.allowed ? { reason: getReason(d) } : {}),
    ...(d.method !== undefined ? { method: d.method } : {}),
    ...(d.status !== undefined ? { status: d.status } : {}),
    ...(d.injected && d.injected.length > 0 ? { injected: [...d.injected] } : {}),
  }));
}
