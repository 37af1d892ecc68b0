/*
 * Why a connection or request was refused, in words an agent can act on: the rule a decision
 * records (`not-allowlisted`, `deny:PATTERN`, `address:loopback`, ...) said as the policy key it
 * comes from. The same words go to the client (the CONNECT reply, a 403 body), the run's result
 * and the MCP `bash` text (`egress: refused api.example.com:443 (not in sandbox.network.allow)`).
 */
import { formatAuthority } from './authority';

export interface Refused {
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  readonly rule: string;
  readonly reason?: string;
}

export function describeRule(rule: string): string {
  const [kind, ...rest] = rule.split(':');
  const detail = rest.join(':');
  switch (kind) {
    case 'mode': return detail === 'none' ? 'sandbox.network is none: nothing leaves the run' : `sandbox.network mode ${detail}`;
    case 'deny': return `denied by sandbox.network.deny (${detail})`;
    case 'not-allowlisted': return 'not in sandbox.network.allow';
    case 'ip-literal-not-allowed': return 'an IP address is reached only when sandbox.network.allow names it';
    case 'bound': return `this run holds <<${detail}>> (delivery env), so it may reach only that secret's hosts`;
    case 'address': return detail === 'resolve-failed' ? 'the name does not resolve' : `the name resolves to a ${detail} address, reached only when sandbox.network.allow names the address`;
    case 'bad-target': return 'not a host and port the proxy can read';
    case 'proxy-auth': return 'the run\'s proxy credentials are missing or wrong (use the proxy variables the run was given)';
    case 'dial-failed': return `could not connect (${detail})`;
    case 'upstream-failed': return `the upstream connection failed (${detail})`;
    case 'not-a-destination': return 'no raw TCP destination (sandbox.network.tcp) or host service (sandbox.network.hostServices) of this run is at that address and port';
    case 'no-run': return detail === 'held-by-several-runs'
      ? 'the connection is held by processes of more than one run, so it is no run\'s'
      : 'no live run of this gateway holds the connection (its client had gone, or it is no run\'s process)';
    case 'client-gone': return 'the client closed the connection before it was carried on';
    case 'response-unreadable': return 'the response is in an encoding the proxy cannot read to remove secrets';
    default: return rule;
  }
}

/** The reason of a decision: its own words when it has them, else its rule's. */
export function getReason(decision: Refused): string {
  return decision.reason ?? describeRule(decision.rule);
}

/** `egress: refused HOST:PORT (reason)` lines for the refusals among `decisions`, each once, at most `limit`. */
export function formatRefusals(decisions: readonly Refused[], limit = 5): string[] {
  const lines = [...new Set(decisions.filter((d) => !d.allowed).map((d) => `egress: refused ${d.host === '' ? '(unreadable target)' : formatAuthority(d.host, d.port)} (${getReason(d)})`))];
  if (lines.length <= limit) return lines;
  return [...lines.slice(0, limit), `egress: ${lines.length - limit} more refusals (see the run's egress decisions)`];
}
