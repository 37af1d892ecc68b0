/*
 * SSH keys bound to hosts, on the gateway's real sandboxed runs (sync, PTY, background): the run
 * gets an agent socket of the gateway (SSH_AUTH_SOCK) listing only the bound keys that resolve,
 * and a read-only /etc/ssh whose known-hosts file names the bound servers; the real OpenSSH client
 * inside the run logs in to a real sshd with the agent's key and git clones and pushes over SSH.
 * (The client reaches sshd through the egress proxy's CONNECT, by a ProxyCommand, until raw TCP
 * egress carries it by name.) Every signature is an `ssh.sign` record under the run's id, and the
 * private key appears nowhere the run could read it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { parseHostKeyLine, parsePrivateSshKey } from '../../src/egress/ssh/keys';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { execgateSync } from '../cli/helpers';
import { getConnectHandoffSupport } from '../../src/egress/tcp-notify';
import { makeKey, startSshd, type Sshd } from './sshd';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

/** A ProxyCommand: CONNECT through the run's egress proxy (HTTPS_PROXY, with its credentials), then relay. */
const CONNECT_PY = `
import base64, os, socket, sys, threading, urllib.parse
proxy = urllib.parse.urlparse(os.environ['HTTPS_PROXY'])
s = socket.create_connection((proxy.hostname, proxy.port))
auth = base64.b64encode((urllib.parse.unquote(proxy.username) + ':' + urllib.parse.unquote(proxy.password)).encode()).decode()
target = sys.argv[1] + ':' + sys.argv[2]
s.sendall(('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\nProxy-Authorization: Basic ' + auth + '\\r\\n\\r\\n').encode())
head = b''
while b'\\r\\n\\r\\n' not in head:
    byte = s.recv(1)
    if not byte:
        sys.exit(1)
    head += byte
if b' 200' not in head.split(b'\\r\\n')[0]:
    sys.stderr.write(head.decode())
    sys.exit(1)
def up():
    while True:
        data = os.read(0, 65536)
        if not data:
            s.shutdown(socket.SHUT_WR)
            return
        s.sendall(data)
threading.Thread(target=up, daemon=True).start()
while True:
    data = s.recv(65536)
    if not data:
        break
    os.write(1, data)
`;

let tmp: ReturnType<typeof makeTempDir>;
let sshd: Sshd;
let key: ReturnType<typeof makeKey>;
let gateway: Gateway;
let home: string;
let work: string;
let bare: string;

function sshCommand(): string {
  return `ssh -o BatchMode=yes -o ProxyCommand="python3 ${work}/connect.py 127.0.0.1 ${sshd.port}" -p ${sshd.port}`;
}

function auditRecords(): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

beforeAll(async () => {
  if (!sandboxable) return;
  tmp = makeTempDir('execgate-ssh-runs-');
  key = makeKey(tmp.dir, 'deploy');
  const serverDir = join(tmp.dir, 'sshd');
  mkdirSync(serverDir);
  sshd = await startSshd(serverDir, [key.pub]);
  bare = join(tmp.dir, 'repo.git');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  const seed = join(tmp.dir, 'seed');
  execFileSync('git', ['init', '-q', '-b', 'main', seed]);
  writeFileSync(join(seed, 'README'), 'hello over ssh\n');
  execFileSync('git', ['-C', seed, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'seed', '--allow-empty']);
  execFileSync('git', ['-C', seed, 'add', 'README']);
  execFileSync('git', ['-C', seed, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'readme']);
  execFileSync('git', ['-C', seed, 'push', '-q', bare, 'main']);
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  home = join(tmp.dir, 'home');
  writeFileSync(join(work, 'connect.py'), CONNECT_PY);
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    `sandbox: { mode: required, network: { mode: allowlist, allow: ["127.0.0.1:${sshd.port}"] } }`,
    'secrets:',
    '  bind:',
    `    - { ref: "secret:deploy", delivery: ssh-agent, hosts: ["127.0.0.1.nip.test:22", "git.example.test"], hostKeys: ["${sshd.hostKey}"] }`,
    `    - { ref: "secret:absent", delivery: ssh-agent, hosts: ["other.example.test"], hostKeys: ["${sshd.hostKey}"] }`,
    '    - { ref: "secret:envtok", hosts: ["127.0.0.1"] }',
  ].join('\n'));
  gateway = createGateway({
    home, env: baseEnv(), cwd: work, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'deploy' ? { found: true, value: key.text } : id === 'envtok' ? { found: true, value: 'env-token-value-5f2a9c' } : { found: false }) }],
    egress: { runtimeDir: tmp.dir },
  });
});

afterAll(async () => {
  await gateway?.close();
  await sshd?.close();
  tmp?.cleanup();
});

maybe('a sandboxed run and the SSH agent of its gateway', () => {
  test('sync: SSH_AUTH_SOCK lists only the bound key that resolves; the known-hosts file names the bound servers', async () => {
    const fingerprint = parsePrivateSshKey(key.text, 'k').fingerprint;
    const result = await gateway.exec({ command: 'echo "sock=$SSH_AUTH_SOCK"; ssh-add -l; cat /etc/ssh/ssh_known_hosts; test -w /etc/ssh/ssh_known_hosts && echo writable; ls /etc/ssh', cwd: work });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('sock=/tmp/.execgate-ssh-agent.sock');
    const listed = result.stdout.split('\n').filter((line) => line.includes('SHA256:'));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toContain(fingerprint);
    expect(result.stdout).toContain(`127.0.0.1.nip.test ${sshd.hostKey}`);
    expect(result.stdout).toContain(`git.example.test ${sshd.hostKey}`);
    expect(result.stdout).not.toContain('writable');
    // The host's sshd configuration and host private keys are not in the run's /etc/ssh.
    expect(result.stdout).not.toMatch(/ssh_host_.*_key|sshd_config/);
  });

  test('sync: the real ssh client logs in with the agent\'s key, with no prompt and no write to ~/.ssh; the signature is recorded', async () => {
    const result = await gateway.exec({
      command: `${sshCommand()} -o HostKeyAlias=git.example.test ${sshd.user}@git.example.test 'echo signed-in-as-$(id -un)'`,
      cwd: work,
    });
    // Nothing on stderr: no prompt, no `Permanently added`, no ~/.ssh it could not create.
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`signed-in-as-${sshd.user}\n`);
    expect(result.exitCode).toBe(0);
    const signs = auditRecords().filter((record) => record.event === 'ssh.sign' && record.runId === result.id);
    expect(signs).toContainEqual(expect.objectContaining({
      key: parsePrivateSshKey(key.text, 'k').fingerprint,
      hostKey: parseHostKeyLine(sshd.hostKey).fingerprint,
      hosts: ['127.0.0.1.nip.test:22', 'git.example.test:22'],
      allowed: true,
    }));
    // `audit show` and the HTML report list the run's agent answers.
    const show = execgateSync(['audit', 'show', result.id], { cwd: tmp.dir, env: { EXECGATE_HOME: home } });
    expect(show.stdout).toMatch(new RegExp(`ssh +\\d+ agent answer\\(s\\)`));
    expect(show.stdout).toContain(`signed with ${parsePrivateSshKey(key.text, 'k').fingerprint} (secret:deploy) for host key ${parseHostKeyLine(sshd.hostKey).fingerprint} (bound to 127.0.0.1.nip.test:22, git.example.test:22)`);
    const html = join(tmp.dir, 'report.html');
    expect(execgateSync(['audit', 'report', '--html', html], { cwd: tmp.dir, env: { EXECGATE_HOME: home } }).status).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('ssh agent (');
    expect(page).toContain(`signed with ${parsePrivateSshKey(key.text, 'k').fingerprint}`);
  });

  test('sync: git clones and pushes over SSH with the agent\'s key', async () => {
    const result = await gateway.exec({
      command: [
        `export GIT_SSH_COMMAND='${sshCommand()} -o HostKeyAlias=git.example.test'`,
        `git clone -q ${sshd.user}@git.example.test:${bare} clone`,
        'cat clone/README',
        'cd clone && echo pushed > PUSHED && git add PUSHED && git -c user.name=run -c user.email=run@example.test commit -qm push && git push -q origin main && echo push-ok',
      ].join(' && '),
      cwd: work,
    });
    expect(result.stderr).not.toMatch(/Permission denied|fatal/);
    expect(result.stdout).toContain('hello over ssh');
    expect(result.stdout).toContain('push-ok');
    expect(execFileSync('git', ['-C', bare, 'log', '--format=%s', '-1', 'main'], { encoding: 'utf8' }).trim()).toBe('push');
  });

  test('a run with a network namespace of its own (it holds an env-bound secret) gets the agent too', async () => {
    const result = await gateway.exec({ command: 'test -n "<<secret:envtok>>" && ssh-add -l', cwd: work });
    // Its connects are handed over connected (egress/tcp-notify.ts), port 22 among them; where the
    // host cannot, its bridge cannot open port 22 (below 1024) on its own loopback, and says so once.
    if (getConnectHandoffSupport() !== undefined) expect(result.stderr).toBe('');
    else expect(result.stderr).toMatch(/^execgate: raw TCP to (127\.77\.0\.\d+:22(, )?)+ is not available in a run with a network namespace of its own \(one holding a delivery: env secret\): ports below 1024 cannot be opened there\n$/);
    expect(result.exitCode).toBe(0);
    expect(result.network).toMatchObject({ namespace: 'own', ssh: expect.arrayContaining([expect.objectContaining({ ref: 'secret:deploy' })]) });
    expect(result.stdout).toContain(parsePrivateSshKey(key.text, 'k').fingerprint);
  });

  test('pty: the agent answers through a terminal', async () => {
    const result = await gateway.exec({ command: 'ssh-add -l', cwd: work, mode: 'pty' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(parsePrivateSshKey(key.text, 'k').fingerprint);
  });

  test('background: the agent lives while the run does and is gone when it ends', async () => {
    const started = await gateway.exec({
      command: `ssh-add -l > bg-list.txt; ${sshCommand()} -o HostKeyAlias=git.example.test ${sshd.user}@git.example.test 'echo bg-signed-in' > bg-ssh.txt 2>&1`,
      cwd: work,
      mode: 'background',
    });
    const ended = await gateway.background.wait(started.id, 60_000);
    expect(ended.state).toBe('exited');
    expect(readFileSync(join(work, 'bg-list.txt'), 'utf8')).toContain(parsePrivateSshKey(key.text, 'k').fingerprint);
    expect(readFileSync(join(work, 'bg-ssh.txt'), 'utf8')).toContain('bg-signed-in');
    // The run's agent directory (socket, known hosts) is removed once the run has ended.
    expect(await waitFor(() => readdirSync(tmp.dir).filter((name) => name.startsWith('execgate-ssh-')).length === 0, 10_000)).toBe(true);
  });

  test('a command may not use the agent\'s key as a reference: refused, nothing run', async () => {
    await expect(gateway.exec({ command: 'echo <<secret:deploy>> > leaked.txt', cwd: work })).rejects.toMatchObject({ code: 'EXECGATE_ERR_POLICY_DENIED' });
    expect(existsSync(join(work, 'leaked.txt'))).toBe(false);
  });
});
