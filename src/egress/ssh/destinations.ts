/*
 * The servers of the policy's SSH keys as raw TCP destinations: a run that is given a key for
 * `git.example.com:22` must be able to reach that port by name, so each `delivery: ssh-agent`
 * binding's hosts are implied `sandbox.network.tcp` entries (the TCP egress path adds them to the
 * policy's own list).
 */
import { DEFAULT_SSH_PORT, type SecretBinding } from '../rules';

export interface TcpDestination {
  readonly host: string;
  readonly port: number;
}

/** `{host, port}` of every `delivery: ssh-agent` binding, in policy order, each once. */
export function getSshDestinations(bindings: readonly SecretBinding[]): TcpDestination[] {
  const seen = new Set<string>();
  const out: TcpDestination[] = [];
  for (const binding of bindings) {
    if (binding.delivery !== 'ssh-agent') continue;
    for (const pattern of binding.hosts) {
      const port = pattern.port ?? DEFAULT_SSH_PORT;
      const key = `${pattern.host}:${port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(Object.freeze({ host: pattern.host, port }));
    }
  }
  return out;
}
