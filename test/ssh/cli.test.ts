/*
 * SSH keys from the command line, with the built CLI: `secret set NAME --ssh-key FILE` checks
 * the file before anything is stored and prints the key's type and fingerprint (never the key);
 * `policy check` reports a `delivery: ssh-agent` binding's mistakes with codes and positions;
 * `policy explain` says which keys a run gets, for which hosts and host keys.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execgateSync } from '../cli/helpers';
import { makeTempDir } from '../helpers/tmp';
import { makeKey } from './sshd';

let tmp: ReturnType<typeof makeTempDir>;
let cwd: string;

beforeAll(() => {
  tmp = makeTempDir('execgate-ssh-cli-');
  cwd = join(tmp.dir, 'cli');
  mkdirSync(cwd);
});
afterAll(() => tmp.cleanup());

const opts = (): { cwd: string; env: Record<string, string> } => ({ cwd, env: { EXECGATE_KEYRING: 'off' } });

describe('execgate secret set --ssh-key', () => {
  test('stores a key and prints its type and fingerprint, never the key', () => {
    const key = makeKey(tmp.dir, 'good');
    const fingerprint = execFileSync('ssh-keygen', ['-lf', `${key.path}.pub`], { encoding: 'utf8' }).split(' ')[1];
    const set = execgateSync(['secret', 'set', 'deploy-key', '--ssh-key', key.path, '--store', 'vault'], opts());
    expect(set.stderr).toBe('');
    expect(set.stdout).toBe(`deploy-key: stored in the vault (SSH key ssh-ed25519 ${fingerprint})\n`);
    for (const line of key.text.split('\n').slice(1, -2)) expect(set.stdout + set.stderr).not.toContain(line);
    expect(execgateSync(['secret', 'test', 'deploy-key'], opts()).stdout).toBe('deploy-key: resolves from vault\n');
  });

  test.each([
    ['an encrypted key', (dir: string) => { execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'passphrase', '-f', join(dir, 'enc')]); return join(dir, 'enc'); }, /encrypted private key.*ssh-keygen -p/],
    ['a public key', (dir: string) => `${makeKey(dir, 'pubonly').path}.pub`, /is a public key/],
    ['a file that is no key', (dir: string) => { writeFileSync(join(dir, 'junk'), 'not a key at all\n'); return join(dir, 'junk'); }, /not an SSH private key/],
    ['a file that does not exist', (dir: string) => join(dir, 'missing'), /Could not read the SSH key file/],
  ])('refuses %s with a coded error and stores nothing', (_what, make, message) => {
    const dir = join(tmp.dir, `bad-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir);
    const path = make(dir);
    const set = execgateSync(['secret', 'set', 'bad-key', '--ssh-key', path, '--store', 'vault'], opts());
    expect(set.status).not.toBe(0);
    expect(set.stderr).toContain('EXECGATE_ERR_SSH_KEY_INVALID');
    expect(set.stderr).toMatch(message);
    expect(set.stderr).toContain('Nothing was stored');
    expect(execgateSync(['secret', 'test', 'bad-key'], opts()).status).toBe(1);
  });
});

describe('a policy binding SSH keys', () => {
  const hostKey = (): string => readFileSync(`${makeKey(tmp.dir, `host-${Math.random().toString(36).slice(2)}`).path}.pub`, 'utf8').trim();

  test.each([
    ['no hostKeys', '{ ref: "secret:k", delivery: ssh-agent, hosts: [git.example.com] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID', /no `hostKeys`/],
    ['a host key line with a typo', '{ ref: "secret:k", delivery: ssh-agent, hosts: [git.example.com], hostKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"] }', 'EXECGATE_ERR_SSH_HOST_KEY_INVALID', /hostKeys\[0\]/],
    ['a wildcard host', '{ ref: "secret:k", delivery: ssh-agent, hosts: ["*.example.com"], hostKeys: [HOSTKEY] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID', /a wildcard/],
    ['an IP literal', '{ ref: "secret:k", delivery: ssh-agent, hosts: ["192.0.2.10:22"], hostKeys: [HOSTKEY] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID', /an IP literal/],
    ['an inject-only setting', '{ ref: "secret:k", delivery: ssh-agent, hosts: [git.example.com], hostKeys: [HOSTKEY], headers: [X] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID', /applies to `delivery: inject` only/],
    ['hostKeys on another delivery', '{ ref: "secret:k", delivery: inject, hosts: [git.example.com], hostKeys: [HOSTKEY] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID', /ssh-agent` only/],
  ])('is refused at load time: %s', (_what, entry, code, message) => {
    const file = join(cwd, 'bad.yaml');
    writeFileSync(file, `version: 1\nsecrets:\n  bind:\n    - ${entry.replace('HOSTKEY', JSON.stringify(hostKey()))}\n`);
    const check = execgateSync(['policy', 'check', '--json', file], opts());
    expect(check.status).toBe(1);
    const problems = (JSON.parse(check.stdout) as { files: Array<{ problems: Array<{ code: string; message: string }> }> }).files[0]!.problems;
    expect(problems).toContainEqual(expect.objectContaining({ code, message: expect.stringMatching(message) }));
  });

  test('policy explain says which keys a run gets, for which hosts and host keys', () => {
    const line = hostKey();
    const fingerprint = execFileSync('ssh-keygen', ['-lf', '-'], { input: line, encoding: 'utf8' }).split(' ')[1];
    const file = join(cwd, 'good.yaml');
    writeFileSync(file, `version: 1\nsandbox: { mode: required }\nsecrets:\n  bind:\n    - { ref: "secret:deploy", delivery: ssh-agent, hosts: ["git.example.com", "git.example.com:2222"], hostKeys: ["${line}"] }\n`);
    expect(execgateSync(['policy', 'check', file], opts()).stdout).toBe(`${file}: ok\n`);
    const explain = execgateSync(['policy', 'explain', '--policy', file, '--', 'git', 'pull'], opts());
    expect(explain.stdout).toContain(`SSH agent: <<secret:deploy>> for git.example.com:22, git.example.com:2222 (host keys ssh-ed25519 ${fingerprint})`);
    const json = JSON.parse(execgateSync(['policy', 'explain', '--json', '--policy', file, '--', 'git', 'pull'], opts()).stdout) as { network: { ssh: unknown } };
    expect(json.network.ssh).toEqual([{ ref: 'secret:deploy', hosts: ['git.example.com:22', 'git.example.com:2222'], hostKeys: [`ssh-ed25519 ${fingerprint}`] }]);
  });
});
