/*
 * SSH end to end through raw TCP egress: a sandboxed run (sync, PTY, background) reaches a real
 * sshd by name (`git.example.test`, port 22 inside; the proxy's test resolver and dialler carry
 * the name to the test's sshd on 127.0.0.1), checks its host key against the generated
 * /etc/ssh/ssh_known_hosts with no prompt and no option, and logs in with the key of the gateway's
 * agent: plain `ssh git.example.test`, `git clone` and `git push`. A second server with another
 * host key, reached the same way, gets no signature.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { parsePrivateSshKey } from '../../src/egress/ssh/keys';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeKey, startSshd, type Sshd } from './sshd';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let sshd: Sshd;
let other: Sshd;
let key: ReturnType<typeof makeKey>;
let gateway: Gateway;
let home: string;
let work: string;
let bare: string;

beforeAll(async () => {
  if (!sandboxable) return;
  tmp = makeTempDir('execgate-ssh-e2e-');
  key = makeKey(tmp.dir, 'deploy');
  for (const name of ['sshd', 'other']) mkdirSync(join(tmp.dir, name));
  sshd = await startSshd(join(tmp.dir, 'sshd'), [key.pub]);
  other = await startSshd(join(tmp.dir, 'other'), [key.pub]);
  bare = join(tmp.dir, 'repo.git');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  const seed = join(tmp.dir, 'seed');
  execFileSync('git', ['init', '-q', '-b', 'main', seed]);
  writeFileSync(join(seed, 'README'), 'hello over ssh\n');
  execFileSync('git', ['-C', seed, 'add', 'README']);
  execFileSync('git', ['-C', seed, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'readme']);
  execFileSync('git', ['-C', seed, 'push', '-q', bare, 'main']);
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  home = join(tmp.dir, 'home');
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [] } }',
    'secrets:',
    '  bind:',
    // The second host is named with the bound host key, but the server there holds another.
    `    - { ref: "secret:deploy", delivery: ssh-agent, hosts: [git.example.test, "impostor.example.test"], hostKeys: ["${sshd.hostKey}"] }`,
  ].join('\n'));
  gateway = createGateway({
    home, env: baseEnv(), cwd: work, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'deploy' ? { found: true, value: key.text } : { found: false }) }],
    egress: {
      runtimeDir: tmp.dir,
      resolver: async (host: string): Promise<string[]> => {
        if (host === 'git.example.test') return ['203.0.113.22'];
        if (host === 'impostor.example.test') return ['203.0.113.23'];
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      },
      dial: (address: string, port: number) => (address === '203.0.113.22' ? { host: '127.0.0.1', port: sshd.port } : address === '203.0.113.23' ? { host: '127.0.0.1', port: other.port } : { host: address, port }),
    },
  });
});

afterAll(async () => {
  await gateway?.close();
  await sshd?.close();
  await other?.close();
  tmp?.cleanup();
});

function signs(runId: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => record.event === 'ssh.sign' && record.runId === runId);
}

maybe('ssh and git by name from sandboxed runs', () => {
  test('sync: plain `ssh git.example.test` logs in with no prompt; the signature and the TCP connection are recorded', async () => {
    const result = await gateway.exec({ command: `ssh -o BatchMode=yes ${sshd.user}@git.example.test 'echo signed-in'`, cwd: work });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('signed-in\n');
    expect(signs(result.id)).toContainEqual(expect.objectContaining({ allowed: true, key: parsePrivateSshKey(key.text, 'k').fingerprint }));
    const tcp = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record.event === 'egress.decision' && record.runId === result.id);
    expect(tcp).toContainEqual(expect.objectContaining({ via: 'tcp', host: 'git.example.test', port: 22, allowed: true }));
  });

  test('sync: git clone and git push over SSH by name', async () => {
    const result = await gateway.exec({
      command: `git clone -q ${sshd.user}@git.example.test:${bare} clone && cat clone/README && cd clone && echo x > X && git add X && git -c user.name=run -c user.email=run@example.test commit -qm pushed && git push -q origin main && echo push-ok`,
      cwd: work,
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('hello over ssh\npush-ok\n');
    expect(execFileSync('git', ['-C', bare, 'log', '--format=%s', '-1', 'main'], { encoding: 'utf8' }).trim()).toBe('pushed');
  });

  test('pty and background: the same login', async () => {
    const pty = await gateway.exec({ command: `ssh -o BatchMode=yes ${sshd.user}@git.example.test 'echo pty-in'`, cwd: work, mode: 'pty' });
    expect(pty.stdout).toContain('pty-in');
    const started = await gateway.exec({ command: `ssh -o BatchMode=yes ${sshd.user}@git.example.test 'echo bg-in' > bg.txt 2>&1`, cwd: work, mode: 'background' });
    const ended = await gateway.background.wait(started.id, 60_000);
    expect(ended.state).toBe('exited');
    expect(readFileSync(join(work, 'bg.txt'), 'utf8')).toBe('bg-in\n');
  });

  test('a server holding another host key is refused by ssh (known hosts) and by the agent (no signature)', async () => {
    const strict = await gateway.exec({ command: `ssh -o BatchMode=yes ${sshd.user}@impostor.example.test true; echo "rc=$?"`, cwd: work });
    expect(strict.stderr).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    expect(strict.stdout).toContain('rc=255');
    // Even a client told to accept any host key gets no signature from the agent.
    const loose = await gateway.exec({ command: `ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null ${sshd.user}@impostor.example.test true; echo "rc=$?"`, cwd: work });
    expect(loose.stdout).toContain('rc=255');
    expect(loose.stderr).toMatch(/Permission denied/);
    expect(signs(loose.id).length).toBeGreaterThan(0);
    expect(signs(loose.id).every((record) => record.allowed === false)).toBe(true);
  });
});
