/*
 * `sandbox.network.tcp` and `hostServices` as the loader reads them: each mistake refused at load
 * time with EXECGATE_ERR_EGRESS_TCP_INVALID at its position, and a run's raw TCP destinations
 * (tcp.ts getTcpDestinations): one 127.77 address per distinct name, in policy order, written to
 * the run's hosts file.
 */
import { join } from 'node:path';
import { checkPolicyFile, loadPolicyFile } from '../../src/policy/load';
import { normalizeNetworkPolicy } from '../../src/policy/egress-settings';
import { describeRunNetwork, formatRunNetwork } from '../../src/egress/describe';
import { getHostsFile, getLocalEndpoints, getTcpAddress, getTcpDestinations } from '../../src/egress/tcp';
import { makeTempDir } from '../helpers/tmp';
import { writeFiles } from '../policy/helpers';

function check(network: string): { ok: boolean; problems: Array<{ code: string; path: string; message: string; line: number }> } {
  const tmp = makeTempDir('execgate-tcp-policy-');
  try {
    writeFiles(tmp.dir, { 'policy.yaml': `version: 1\nsandbox:\n  network: ${network}\n` });
    return checkPolicyFile(join(tmp.dir, 'policy.yaml')) as never;
  } finally {
    tmp.cleanup();
  }
}

test.each([
  ['{ mode: allowlist, tcp: ["192.0.2.10:5432"] }', 'sandbox.network.tcp[0]', 'IP literal'],
  ['{ mode: allowlist, tcp: [db.test:5432, "[2001:db8::1]:22"] }', 'sandbox.network.tcp[1]', 'IP literal'],
  ['{ mode: allowlist, tcp: ["*.example.com:5432"] }', 'sandbox.network.tcp[0]', 'without wildcards'],
  ['{ mode: allowlist, tcp: ["*:22"] }', 'sandbox.network.tcp[0]', 'without wildcards'],
  ['{ mode: allowlist, tcp: [db.example.com] }', 'sandbox.network.tcp[0]', 'no port'],
  ['{ mode: allowlist, hostServices: [0] }', 'sandbox.network.hostServices[0]', '1 to 65535'],
  ['{ mode: allowlist, hostServices: [5432, 70000] }', 'sandbox.network.hostServices[1]', '1 to 65535'],
  ['{ mode: allowlist, hostServices: [5432, { unix: "/run/../etc/x.sock" }] }', 'sandbox.network.hostServices[1].unix', 'absolute path'],
  ['{ mode: allowlist, hostServices: [{ unix: "/srv/app/" }] }', 'sandbox.network.hostServices[0].unix', 'absolute path'],
  ['{ mode: allowlist, hostServices: [{ unix: "/var/run/postgresql/.s.PGSQL.5432" }] }', 'sandbox.network.hostServices[0].unix', 'every sandbox hides'],
  ['{ mode: none, tcp: [db.example.com:5432] }', 'sandbox.network.tcp', 'mode: none'],
  ['{ mode: none, hostServices: [5432] }', 'sandbox.network.hostServices', 'mode: none'],
])('%s is refused with EXECGATE_ERR_EGRESS_TCP_INVALID at %s', (network, path, words) => {
  const result = check(network);
  expect(result.ok).toBe(false);
  const problem = result.problems.find((p) => p.path === path);
  expect(problem).toMatchObject({ code: 'EXECGATE_ERR_EGRESS_TCP_INVALID', line: 3 });
  expect(problem!.message).toContain(words);
});

test('loading refuses them with the same code', () => {
  const tmp = makeTempDir('execgate-tcp-policy-');
  try {
    writeFiles(tmp.dir, { 'policy.yaml': 'version: 1\nsandbox:\n  network: { mode: allowlist, tcp: ["10.0.0.5:5432"] }\n' });
    expect(() => loadPolicyFile(join(tmp.dir, 'policy.yaml'))).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_EGRESS_TCP_INVALID' }));
  } finally {
    tmp.cleanup();
  }
  expect(() => normalizeNetworkPolicy({ mode: 'none', hostServices: [1] })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_EGRESS_TCP_INVALID' }));
});

test('a valid policy loads: names canonical, duplicates once, host services once', () => {
  const network = normalizeNetworkPolicy({ mode: 'open', tcp: ['DB.Example.com:5432', 'db.example.com:5432', 'cache.example.com:6379', 'db.example.com:5433'], hostServices: [3000, 3000, 5432] });
  expect(network.tcp?.map((t) => [t.host, t.port])).toEqual([['db.example.com', 5432], ['cache.example.com', 6379], ['db.example.com', 5433]]);
  expect(network.hostServices).toEqual([3000, 5432]);
  expect(normalizeNetworkPolicy({ mode: 'open' }).tcp).toBeUndefined();
  const sockets = normalizeNetworkPolicy({ mode: 'allowlist', hostServices: [{ unix: '/srv/app.sock' }, 8080, { unix: '/srv/app.sock' }] });
  expect(sockets.hostSockets).toEqual(['/srv/app.sock']);
  expect(sockets.hostServices).toEqual([8080]);
});

test('destinations: one 127.77 address per distinct name, in order; ssh-agent keys\' hosts are implied; mode none has none', () => {
  const network = normalizeNetworkPolicy({ mode: 'allowlist', tcp: ['db.example.com:5432', 'cache.example.com:6379', 'db.example.com:5433'], hostServices: [3000] });
  const bindings = [{ ref: 'secret:deploy', delivery: 'ssh-agent', hosts: [{ text: 'git.example.com', kind: 'name', host: 'git.example.com', port: undefined }] }] as never;
  const destinations = getTcpDestinations(network, bindings);
  expect(destinations.map((d) => [d.host, d.port, d.address, d.rule])).toEqual([
    ['db.example.com', 5432, '127.77.0.1', 'tcp:db.example.com:5432'],
    ['cache.example.com', 6379, '127.77.0.2', 'tcp:cache.example.com:6379'],
    ['db.example.com', 5433, '127.77.0.1', 'tcp:db.example.com:5433'],
    ['git.example.com', 22, '127.77.0.3', 'bound:secret:deploy'],
  ]);
  expect(getTcpAddress(255)).toBe('127.77.1.0');
  const hosts = getHostsFile(destinations);
  expect(hosts).toContain('127.0.0.1\tlocalhost\n');
  expect(hosts).toContain('127.77.0.1\tdb.example.com\n');
  expect(hosts.match(/db\.example\.com/g)).toHaveLength(1);
  expect(getLocalEndpoints(destinations, [3000])).toEqual(expect.arrayContaining([{ host: '::1', port: 3000 }, { host: '127.0.0.1', port: 3000 }, { host: '127.77.0.3', port: 22 }]));
  expect(getTcpDestinations({ ...network, mode: 'none' })).toEqual([]);
});

test('policy explain and exec.started say the destinations with their inside addresses, and the host services', () => {
  const network = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['api.example.com'], tcp: ['db.example.com:5432'], hostServices: [3000] });
  const described = describeRunNetwork({ network, bindings: [], refs: [], sandboxed: true, proxied: true, shared: true });
  expect(described.tcp).toEqual([{ destination: 'db.example.com:5432', address: '127.77.0.1', rule: 'tcp:db.example.com:5432' }]);
  expect(described.hostServices).toEqual([3000]);
  const line = formatRunNetwork(described);
  expect(line).toContain('raw TCP: db.example.com:5432 (at 127.77.0.1)');
  expect(line).toContain('host services (the host\'s, open to every run): localhost:3000');
  // Without the proxy (mode none, or no sandbox) there is neither.
  const unsandboxed = describeRunNetwork({ network, bindings: [], refs: [], sandboxed: false, proxied: false, shared: false });
  expect(unsandboxed.tcp).toBeUndefined();
  expect(formatRunNetwork(unsandboxed)).not.toContain('raw TCP');
});
