/*
 * The proxy resolves every name itself and connects to the address it checked (never resolving
 * twice), so a name that resolves to an internal address (DNS rebinding, a hostile record, a
 * typo in /etc/hosts) is refused here whatever the policy's name rules said.
 *
 * Refused: loopback, unspecified, link-local (169.254/16 covers the AWS/GCP/Azure/OpenStack
 * metadata address 169.254.169.254), other cloud metadata addresses (Alibaba 100.100.100.200,
 * Azure wire server 168.63.129.16, AWS IPv6 fd00:ec2::254), multicast and broadcast, and every
 * address of this host's own interfaces. An address is reached anyway only when the policy allows
 * that IP literal by name (`allow: ["10.0.0.5:5432"]`) and the request named it literally.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { unmapIpv4 } from './authority';

export type Resolver = (host: string) => Promise<string[]>;

const blocked = new BlockList();
blocked.addSubnet('0.0.0.0', 8, 'ipv4');
blocked.addSubnet('127.0.0.0', 8, 'ipv4');
blocked.addSubnet('169.254.0.0', 16, 'ipv4');
blocked.addSubnet('224.0.0.0', 4, 'ipv4');
blocked.addSubnet('240.0.0.0', 4, 'ipv4');
blocked.addAddress('100.100.100.200', 'ipv4');
blocked.addAddress('168.63.129.16', 'ipv4');
blocked.addAddress('::', 'ipv6');
blocked.addAddress('::1', 'ipv6');
blocked.addSubnet('fe80::', 10, 'ipv6');
blocked.addSubnet('ff00::', 8, 'ipv6');
blocked.addAddress('fd00:ec2::254', 'ipv6');

/** Why an address may not be reached, or undefined if it may. */
export function getAddressRefusal(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not-an-address';
  // IPv4-mapped IPv6 (::ffff:127.0.0.1, ::ffff:7f00:1) is checked as the IPv4 address it is.
  const plain = family === 6 ? unmapIpv4(address) : address;
  const type = isIP(plain) === 4 ? 'ipv4' as const : 'ipv6' as const;
  if (blocked.check(plain, type)) return classify(plain);
  if (getOwnAddresses().has(plain.toLowerCase())) return 'own-address';
  return undefined;
}

function classify(address: string): string {
  if (address === '169.254.169.254' || address === '100.100.100.200' || address === '168.63.129.16' || address === 'fd00:ec2::254') return 'metadata';
  if (address.startsWith('127.') || address === '::1') return 'loopback';
  if (address.startsWith('169.254.') || address.toLowerCase().startsWith('fe80')) return 'link-local';
  if (address.startsWith('0.') || address === '::') return 'unspecified';
  return 'multicast-or-reserved';
}

let own: { at: number; set: Set<string> } | undefined;
// Interfaces change rarely; a second-old list is fine and keeps the per-connection cost flat.
function getOwnAddresses(): Set<string> {
  const now = Date.now();
  if (own && now - own.at < 1000) return own.set;
  const set = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) set.add(entry.address.toLowerCase().replace(/%.*$/, ''));
  }
  own = { at: now, set };
  return set;
}

export const systemResolver: Resolver = async (host) => {
  const results = await lookup(host, { all: true, verbatim: true });
  return results.map((entry) => entry.address);
};

export interface Resolution {
  readonly address?: string;
  /** Set when no address may be reached: the first refusal, or `resolve-failed`. */
  readonly refusal?: string;
}

/** Resolve a name and pick the first address that may be reached. */
export async function resolveAllowed(host: string, resolver: Resolver): Promise<Resolution> {
  let addresses: string[];
  try {
    addresses = await resolver(host);
  } catch {
    return { refusal: 'resolve-failed' };
  }
  let refusal: string | undefined;
  for (const address of addresses) {
    const why = getAddressRefusal(address);
    if (why === undefined) return { address };
    refusal ??= why;
  }
  return { refusal: refusal ?? 'resolve-failed' };
}
