/*
 * The network policy of a run (`sandbox.network`) and the hosts each bound secret is for
 * (`secrets.bind`), validated once at load time, and the one decision the proxy asks for every
 * connection: may this run reach HOST:PORT, and by which rule?
 *
 * Order of the decision: `none` refuses everything; a deny pattern wins over any allow; in
 * `allowlist` only an allow pattern lets a connection through; in `open` everything not denied
 * does. Then a secret delivered into the sandbox's environment (`delivery: env`) narrows the whole
 * run to that secret's hosts: the value is in the child, so every connection could carry it. A
 * secret delivered by injection does not narrow the run (the child only holds a worthless
 * sentinel); its value is sent only to its own hosts.
 */
import { describeValue, ExecgateError } from '../errors';
import { findMatch, matchesHost, parseHostPatterns, type HostPattern } from './hosts';

export type NetworkMode = 'open' | 'none' | 'allowlist';
export type Delivery = 'env' | 'inject';

export interface NetworkPolicy {
  readonly mode: NetworkMode;
  readonly allow: readonly HostPattern[];
  readonly deny: readonly HostPattern[];
}

export interface SecretBinding {
  /** `secret:NAME` or `decrypt:ID`, as in `secrets.allow`. */
  readonly ref: string;
  readonly hosts: readonly HostPattern[];
  readonly delivery: Delivery;
}

export interface Verdict {
  readonly allowed: boolean;
  /** The rule that decided: `allow:PATTERN`, `deny:PATTERN`, `mode:none`, `mode:open`, `not-allowlisted`, `bound:REF`. */
  readonly rule: string;
}

const MODES: readonly NetworkMode[] = ['open', 'none', 'allowlist'];
const REF = /^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;

export const OPEN_NETWORK: NetworkPolicy = Object.freeze({ mode: 'open', allow: Object.freeze([]), deny: Object.freeze([]) });

export const NO_NETWORK: NetworkPolicy = Object.freeze({ mode: 'none', allow: Object.freeze([]), deny: Object.freeze([]) });

export function normalizeNetworkPolicy(input: unknown): NetworkPolicy {
  if (input === undefined) return OPEN_NETWORK;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ExecgateError('EXECGATE_ERR_POLICY_INVALID', `Expected \`sandbox.network\` to be an object with \`mode\`, \`allow\`, \`deny\`, got ${describeValue(input)}.`);
  }
  const raw = input as Record<string, unknown>;
  const mode = raw.mode ?? 'open';
  if (!MODES.includes(mode as NetworkMode)) {
    throw new ExecgateError('EXECGATE_ERR_POLICY_INVALID', `Expected \`sandbox.network.mode\` to be one of ${MODES.join(', ')}, got ${describeValue(mode)}.`);
  }
  return Object.freeze({
    mode: mode as NetworkMode,
    allow: parseHostPatterns(raw.allow, 'sandbox.network.allow'),
    deny: parseHostPatterns(raw.deny, 'sandbox.network.deny'),
  });
}

export function normalizeSecretBindings(input: unknown): readonly SecretBinding[] {
  if (input === undefined) return Object.freeze([]);
  if (!Array.isArray(input)) throw bindInvalid(`Expected \`secrets.bind\` to be a list, got ${describeValue(input)}.`);
  const seen = new Set<string>();
  return Object.freeze(input.map((item, index) => {
    const where = `secrets.bind[${index}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw bindInvalid(`Expected \`${where}\` to be an object with \`ref\` and \`hosts\`, got ${describeValue(item)}.`);
    }
    const { ref, hosts, delivery = 'env' } = item as Record<string, unknown>;
    if (typeof ref !== 'string' || !REF.test(ref)) {
      throw bindInvalid(`Expected \`${where}.ref\` to be a reference such as \`secret:github-token\`, got ${describeValue(ref)}.`);
    }
    if (seen.has(ref)) throw bindInvalid(`\`${ref}\` is bound twice in \`secrets.bind\`; list all its hosts in one entry.`);
    seen.add(ref);
    if (!Array.isArray(hosts) || hosts.length === 0) {
      throw bindInvalid(`\`${where}\` (\`${ref}\`) lists no hosts: a bound secret must name at least one host it is for, such as \`hosts: [api.github.com]\`.`);
    }
    if (delivery !== 'env' && delivery !== 'inject') {
      throw bindInvalid(`Expected \`${where}.delivery\` to be \`env\` or \`inject\`, got ${describeValue(delivery)}.`);
    }
    return Object.freeze({ ref, hosts: parseHostPatterns(hosts, `${where}.hosts`), delivery });
  }));
}

/** May a run under `policy`, holding the env-delivered bound secrets `narrowing`, reach host:port? */
export function decideDestination(
  policy: NetworkPolicy,
  narrowing: readonly SecretBinding[],
  host: string,
  port: number,
): Verdict {
  if (policy.mode === 'none') return { allowed: false, rule: 'mode:none' };
  const denied = findMatch(policy.deny, host, port);
  if (denied) return { allowed: false, rule: `deny:${denied.text}` };
  let rule = 'mode:open';
  if (policy.mode === 'allowlist') {
    const allowed = findMatch(policy.allow, host, port);
    if (!allowed) return { allowed: false, rule: 'not-allowlisted' };
    rule = `allow:${allowed.text}`;
  } else {
    // An IP literal is reached only when a pattern names it, even in `open`: `*` covers names.
    const literal = /^[0-9.]+$|:/.test(host);
    if (literal) {
      const allowed = findMatch(policy.allow, host, port);
      if (!allowed) return { allowed: false, rule: 'ip-literal-not-allowed' };
      rule = `allow:${allowed.text}`;
    }
  }
  for (const binding of narrowing) {
    if (!binding.hosts.some((pattern) => matchesHost(pattern, host, port))) {
      return { allowed: false, rule: `bound:${binding.ref}` };
    }
  }
  return { allowed: true, rule };
}

function bindInvalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_BIND_INVALID', message);
}
