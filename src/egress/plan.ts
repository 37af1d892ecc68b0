/*
 * The egress part of a run's plan, in two steps around reference resolution:
 *   checkEgress (before anything resolves): refuse a request whose bound secrets could never
 *     reach their hosts, and `inject` without a sandbox;
 *   createInjections (after): one random sentinel per injected secret, the value the child's
 *     environment receives in its place.
 * And for stdin data written to a running run (plan/input.ts), checkInputEgress: the run's
 * egress was fixed when it started, so a bound secret may be written only where that start
 * already holds it to its binding.
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
  /** Where and how the value may go (placement.ts); without one, the defaults of a binding to `hosts`. */
  readonly binding?: SecretBinding;
  /** `aws-sigv4` bindings: which part of the credential `value` is, `sentinel` its placeholder (sigv4.ts). */
  readonly aws?: 'accessKeyId' | 'secretAccessKey' | 'sessionToken';
}

/** An injection as the proxy holds it: always with its binding. */
export type BoundInjection = Injection & { readonly binding: SecretBinding };

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
    if (binding.delivery === 'aws-sigv4') {
      // The run signs with a placeholder pair (aws.ts); the value itself never enters it.
      throw new ExecgateError(
        'EXECGATE_ERR_AWS_REF_IN_COMMAND',
        `<<${binding.ref}>> is bound with \`delivery: aws-sigv4\`: its value never enters a run. Leave the reference out; every sandboxed run has a placeholder key pair in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, and the egress proxy signs its requests to ${binding.hosts.map((h) => h.text).join(', ')} again with the real key. Nothing was run.`,
        { ref: binding.ref },
      );
    }
    if (binding.delivery === 'ssh-agent') throw sshKeyAsToken(binding);
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

/** What a run's start fixed for its bound secrets: kept beside its plan (plan/prepare.ts). */
export interface StartedEgress {
  readonly check: EgressCheck;
  /** `secret:NAME` -> the sentinel the run's environment holds instead of the injected value. */
  readonly sentinels: ReadonlyMap<string, string>;
}

/*
 * Bound secrets in stdin data. The value written reaches the command as plainly as a value in
 * its environment, but nothing about the run can change any more: its proxy rules, narrowing
 * and injections were fixed at start from the command's references. So a bound secret is written
 * only when the start already covers it under the same binding: `env`, the run is already
 * narrowed to those hosts (the value is written); `inject`, the run already has its sentinel (the
 * sentinel is written, and the proxy puts the value in on the way to the bound hosts, as for the
 * command). Anything else is refused before any store is asked: the value must never enter the
 * sandbox (`inject`) or would reach hosts it is not bound to (`env`).
 * Returns the sentinel to write for each injected reference.
 */
export function checkInputEgress(options: {
  bindings: readonly SecretBinding[];
  /** References in the data, as `secret:NAME` / `decrypt:ID`. */
  refs: readonly string[];
  /** The run's start; undefined when it has no egress proxy (unsandboxed, or network `none`). */
  started: StartedEgress | undefined;
}): ReadonlyMap<string, string> {
  const used = new Set(options.refs);
  const sentinels = new Map<string, string>();
  for (const binding of options.bindings.filter((b) => used.has(b.ref))) {
    if (binding.delivery === 'ssh-agent') throw sshKeyAsToken(binding);
    const held = options.started && [...options.started.check.narrowing, ...options.started.check.injected].find((b) => b.ref === binding.ref);
    const same = held !== undefined && held.delivery === binding.delivery && sameHosts(held.hosts, binding.hosts);
    const sentinel = options.started?.sentinels.get(binding.ref);
    if (same && binding.delivery === 'env') continue;
    if (same && binding.delivery === 'inject' && sentinel !== undefined) {
      sentinels.set(binding.ref, sentinel);
      continue;
    }
    const hosts = binding.hosts.map((h) => h.text).join(', ');
    const why = binding.delivery === 'aws-sigv4'
      ? 'its value must never enter the sandbox (the run signs with a placeholder key pair instead)'
      : binding.delivery === 'inject'
      ? 'its value must never enter the sandbox, and this run has no sentinel for it to write instead'
      : `every connection of a run that holds its value must be limited to ${hosts}, and this run's connections were fixed when it started without that limit`;
    throw new ExecgateError(
      'EXECGATE_ERR_POLICY_DENIED',
      `<<${binding.ref}>> is bound to hosts in \`secrets.bind\` (${hosts}, delivery \`${binding.delivery}\`): ${why} ` +
        '(its command does not use the reference, or the policy changed since it started). ' +
        'Put the reference in the command that starts the run instead of writing it to its input. Nothing was written.',
      { rule: 'secrets.bind', ref: binding.ref, delivery: binding.delivery, reason: 'bound secret in input' },
    );
  }
  return sentinels;
}

function sameHosts(a: readonly HostPattern[], b: readonly HostPattern[]): boolean {
  const texts = new Set(a.map((h) => h.text));
  return a.length === b.length && b.every((h) => texts.has(h.text));
}

export function createInjections(check: EgressCheck, values: ReadonlyMap<string, string>): readonly Injection[] {
  return check.injected.flatMap((binding) => {
    const value = values.get(binding.ref);
    if (value === undefined) return [];
    return [Object.freeze({ ref: binding.ref, value, sentinel: createSentinel(value), hosts: binding.hosts, binding })];
  });
}

function isReachable(network: NetworkPolicy, host: HostPattern): boolean {
  if (network.mode === 'none') return false;
  if (network.deny.some((deny) => patternCovers(deny, host))) return false;
  if (network.mode === 'open' && host.kind !== 'ip') return true;
  return network.allow.some((allow) => patternsOverlap(allow, host));
}

/** An SSH key bound for the agent is used by the gateway only: as a token its value would enter the run. */
function sshKeyAsToken(binding: SecretBinding): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_POLICY_DENIED',
    `<<${binding.ref}>> is an SSH key bound with \`delivery: ssh-agent\` (${binding.hosts.map((h) => `${h.host}:${h.port}`).join(', ')}): it never enters a run. ` +
      'Use ssh or git as usual; the run\'s SSH agent (SSH_AUTH_SOCK) signs with it for those hosts. Nothing was run.',
    { rule: 'secrets.bind', ref: binding.ref, delivery: binding.delivery, reason: 'SSH agent key used as a reference' },
  );
}

function unreachable(binding: SecretBinding, why: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_EGRESS_UNREACHABLE',
    `<<${binding.ref}>> is bound to hosts the run may not reach: ${why}. Add one of its hosts to \`sandbox.network.allow\` or change \`secrets.bind\`.`,
    { ref: binding.ref },
  );
}
