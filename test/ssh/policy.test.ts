/*
 * A `delivery: ssh-agent` binding as the policy loader compiles it, and what is derived from it:
 * the raw TCP destinations the TCP egress path adds (getSshDestinations), the known-hosts file
 * (`[host]:port` for a port other than 22), and the run's network description.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeRunNetwork, formatRunNetwork } from '../../src/egress/describe';
import { checkEgress, checkInputEgress } from '../../src/egress/plan';
import { OPEN_NETWORK } from '../../src/egress/rules';
import { getSshDestinations } from '../../src/egress/ssh/destinations';
import { getKnownHosts } from '../../src/egress/ssh/run';
import { normalizeSecretBindings } from '../../src/policy/egress-settings';
import { makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let hostKey: string;
let fingerprint: string;

beforeAll(() => {
  tmp = makeTempDir('execgate-ssh-policy-');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'host comment', '-f', join(tmp.dir, 'host')]);
  hostKey = readFileSync(join(tmp.dir, 'host.pub'), 'utf8').trim();
  fingerprint = execFileSync('ssh-keygen', ['-lf', join(tmp.dir, 'host.pub')], { encoding: 'utf8' }).split(' ')[1]!;
});
afterAll(() => tmp.cleanup());

function bindings(): ReturnType<typeof normalizeSecretBindings> {
  return normalizeSecretBindings([
    { ref: 'secret:deploy', delivery: 'ssh-agent', hosts: ['git.example.com', 'git.example.com:2222', 'mirror.example.com:22'], hostKeys: [hostKey] },
    { ref: 'secret:token', delivery: 'inject', hosts: ['api.example.com'] },
    { ref: 'secret:other', delivery: 'ssh-agent', hosts: ['git.example.com'], hostKeys: [hostKey] },
  ]);
}

test('hosts get port 22 when they name none; host keys are parsed, their comments dropped', () => {
  const [ssh] = bindings();
  expect(ssh!.hosts.map((host) => `${host.host}:${host.port}`)).toEqual(['git.example.com:22', 'git.example.com:2222', 'mirror.example.com:22']);
  expect(ssh!.hostKeys!.map((key) => key.fingerprint)).toEqual([fingerprint]);
  expect(ssh!.hostKeys![0]!.line).toBe(hostKey.split(' ').slice(0, 2).join(' '));
});

test('getSshDestinations: each ssh-agent host once, in policy order, as raw TCP destinations; other bindings add none', () => {
  expect(getSshDestinations(bindings())).toEqual([
    { host: 'git.example.com', port: 22 }, { host: 'git.example.com', port: 2222 }, { host: 'mirror.example.com', port: 22 },
  ]);
});

test('the known-hosts file names a non-22 port as [host]:port, each line once', () => {
  const key = hostKey.split(' ').slice(0, 2).join(' ');
  expect(getKnownHosts(bindings())).toBe(`git.example.com ${key}\n[git.example.com]:2222 ${key}\nmirror.example.com ${key}\n`);
});

test('a command naming an ssh-agent key is refused before anything resolves', () => {
  expect(() => checkEgress({ network: OPEN_NETWORK, bindings: bindings(), refs: ['secret:deploy'], sandboxed: true }))
    .toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_POLICY_DENIED', message: expect.stringMatching(/never enters a run/) }));
});

test('an ssh-agent key written to a running run\'s stdin is refused too', () => {
  expect(() => checkInputEgress({ bindings: bindings(), refs: ['secret:deploy'], started: undefined }))
    .toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_POLICY_DENIED', message: expect.stringMatching(/never enters a run/) }));
});

test('a sandboxed run\'s network description lists the agent\'s keys with hosts and host key fingerprints; an unsandboxed one none', () => {
  const options = { network: OPEN_NETWORK, bindings: bindings(), refs: [], proxied: true, shared: true };
  const network = describeRunNetwork({ ...options, sandboxed: true });
  expect(network.ssh).toEqual([
    { ref: 'secret:deploy', hosts: ['git.example.com:22', 'git.example.com:2222', 'mirror.example.com:22'], hostKeys: [`ssh-ed25519 ${fingerprint}`] },
    { ref: 'secret:other', hosts: ['git.example.com:22'], hostKeys: [`ssh-ed25519 ${fingerprint}`] },
  ]);
  expect(formatRunNetwork(network)).toContain('SSH agent: <<secret:deploy>> for git.example.com:22, git.example.com:2222, mirror.example.com:22');
  expect(describeRunNetwork({ ...options, sandboxed: false, proxied: false }).ssh).toBeUndefined();
});
