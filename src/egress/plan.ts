/*
 * The egress part of a run's plan, in two steps around reference resolution:
 *   checkEgress (before anything resolves): refuse a request whose bound secrets could never
 *     reach their hosts, and `inject` without a sandbox;
 *   createInjections (after): one random sentinel per injected secret, the value the child's
 *     environment receives in its place.
 */
import { ExecgateError } from '../errors';
import { patternCovers, patternsOverlap, type HostPattern } from './hosts';
import type { NetworkPolicy, SecretBinding } from './rules';
import { createSentinel } from './sentinel';

export interface EgressCheck {
  /** Bound secrets delivered in the environment: they narrow every connection of the run. */
  readonly narrowing: readonly SecretBinding[];
  /** Bound secrets delivered by injection. */
  readonly injected: readonly SecretBinding[];
}

export interface Injection {
  readonly ref: string;
  readonly value: string;
  readonly sentinel: string;
  readonly hosts: readonly HostPattern[];
}

export function checkEgress(options: {
  network: NetworkPolicy;
  bindings: readonly SecretBinding[];
  /** References the request uses, as `secret:NAME` / `decrypt:ID`. */
  refs: readonly string[];
  sandboxed: boolean;
}): EgressCheck {
  const used = new Set(options.refs);
  const bound = options.bindings.filter((binding) => used.has(binding.ref));
  for (const binding of bound) {
    if (!binding.hosts.some((host) => isReachable(options.network, host))) {
      throw unreachable(binding, `none of its hosts (${binding.hosts.map((h) => h.text).join(', ')}) is reachable under \`sandbox.network\` (mode \`${options.network.mode}\`)`);
    }
    if (!options.sandboxed) {
      // Both deliveries are enforced on the network path; an unsandboxed run has its own network.
      const why = binding.delivery === 'inject'
        ? 'its value is delivered by the egress proxy, which only a sandboxed run is forced through'
        : `its value may reach only ${binding.hosts.map((h) => h.text).join(', ')}, which only a sandboxed run can be held to`;
      throw new ExecgateError(
        'EXECGATE_ERR_EGRESS_NEEDS_SANDBOX',
        `<<${binding.ref}>> is bound to hosts in \`secrets.bind\` (${why}); this run is not sandboxed. Run it sandboxed or remove the binding. Nothing was run.`,
        { ref: binding.ref },
      );
    }
  }
  const narrowing = bound.filter((binding) => binding.delivery === 'env');
  // Every env-delivered secret narrows the run: together they must still share a host.
  const [first, ...rest] = narrowing;
  if (first && rest.length > 0) {
    const shared = first.hosts.some((host) => rest.every((other) => other.hosts.some((h) => patternsOverlap(h, host))));
    if (!shared) {
      throw unreachable(first, `the run also uses ${rest.map((b) => `<<${b.ref}>>`).join(', ')}, and no host is allowed for all of them`);
    }
  }
  return Object.freeze({ narrowing, injected: bound.filter((binding) => binding.delivery === 'inject') });
}

export function createInjections(check: EgressCheck, values: ReadonlyMap<string, string>): readonly Injection[] {
  return check.injected.flatMap((binding) => {
    const value = values.get(binding.ref);
    if (value === undefined) return [];
    return [Object.freeze({ ref: binding.ref, value, sentinel: createSentinel(value), hosts: binding.hosts })];
  });
}

function isReachable(network: NetworkPolicy, host: HostPattern): boolean {
  if (network.mode === 'none') return false;
  if (network.deny.some((deny) => patternCovers(deny, host))) return false;
  if (network.mode === 'open' && host.kind !== 'ip') return true;
  return network.allow.some((allow) => patternsOverlap(allow, host));
}

function unreachable(binding: SecretBinding, why: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_EGRESS_UNREACHABLE',
    `<<${binding.ref}>> is bound to hosts the run may not reach: ${why}. Add one of its hosts to \`sandbox.network.allow\` or change \`secrets.bind\`.`,
    { ref: binding.ref },
  );
}
