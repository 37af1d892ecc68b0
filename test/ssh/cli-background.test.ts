/*
 * A background run started from the command line outlives the CLI: its detached supervisor
 * serves the run's SSH agent (the keys handed over its stdin pipe), for as long as the run lives.
 * The run lists the bound key and logs in to a real sshd with it after the CLI has exited; the
 * signature is recorded in the run's audit log; the agent's directory is removed when the run ends.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePrivateSshKey } from '../../src/egress/ssh/keys';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { makeKey, startSshd, type Sshd } from './sshd';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

/** A ProxyCommand: CONNECT through the run's egress proxy (HTTPS_PROXY, with its credentials), then relay. */
const CONNECT_PY = [
  'import base64, os, socket, sys, threading, urllib.parse',
  "proxy = urllib.parse.urlparse(os.environ['HTTPS_PROXY'])",
  's = socket.create_connection((proxy.hostname, proxy.port))',
  "auth = base64.b64encode((urllib.parse.unquote(proxy.username) + ':' + urllib.parse.unquote(proxy.password)).encode()).decode()",
  "target = sys.argv[1] + ':' + sys.argv[2]",
  "s.sendall(('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\nProxy-Authorization: Basic ' + auth + '\\r\\n\\r\\n').encode())",
  "head = b''",
  "while b'\\r\\n\\r\\n' not in head:",
  '    byte = s.recv(1)',
  '    if not byte:',
  '        sys.exit(1)',
  '    head += byte',
  "if b' 200' not in head.split(b'\\r\\n')[0]:",
  '    sys.exit(1)',
  'def up():',
  '    while True:',
  '        data = os.read(0, 65536)',
  '        if not data:',
  '            s.shutdown(socket.SHUT_WR)',
  '            return',
  '        s.sendall(data)',
  'threading.Thread(target=up, daemon=True).start()',
  'while True:',
  '    data = s.recv(65536)',
  '    if not data:',
  '        break',
  '    os.write(1, data)',
  '',
].join('\n');

let tmp: ReturnType<typeof makeTempDir>;
let sshd: Sshd;
let key: ReturnType<typeof makeKey>;

beforeAll(async () => {
  if (!checkPlatform(undefined).ok) return;
  tmp = makeTempDir('execgate-ssh-cli-bg-');
  key = makeKey(tmp.dir, 'deploy');
  mkdirSync(join(tmp.dir, 'sshd'));
  sshd = await startSshd(join(tmp.dir, 'sshd'), [key.pub]);
  writeFileSync(join(tmp.dir, 'connect.py'), CONNECT_PY);
  writeFileSync(join(tmp.dir, 'policy.yaml'), [
    'version: 1',
    `sandbox: { mode: required, network: { mode: allowlist, allow: ["127.0.0.1:${sshd.port}"] } }`,
    'secrets:',
    '  bind:',
    `    - { ref: "secret:deploy", delivery: ssh-agent, hosts: [git.example.test], hostKeys: ["${sshd.hostKey}"] }`,
  ].join('\n'));
});

afterAll(async () => {
  await sshd?.close();
  tmp?.cleanup();
});

function execgate(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: tmp.dir,
      env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), EXECGATE_POLICY: join(tmp.dir, 'policy.yaml'), EXECGATE_KEYRING: 'off' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Agent directories in /tmp whose known-hosts file names this test's server (other tests' runs make theirs there too). */
const agentDirs = (): string[] => readdirSync('/tmp').filter((name) => {
  if (!name.startsWith('execgate-ssh-')) return false;
  try {
    return readFileSync(join('/tmp', name, 'etc-ssh', 'ssh_known_hosts'), 'utf8').includes(sshd.hostKey);
  } catch {
    return false;
  }
});

maybe('the SSH agent of a background run started from the CLI', () => {
  test('is served by the detached supervisor while the run lives, and removed after', async () => {
    writeFileSync(join(tmp.dir, 'deploy.key'), key.text, { mode: 0o600 });
    expect((await execgate(['secret', 'set', 'deploy', '--ssh-key', join(tmp.dir, 'deploy.key'), '--store', 'vault'])).status).toBe(0);
    const before = new Set(agentDirs());
    const command = [
      // The CLI has exited by now: only the supervisor serves the agent.
      'for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done',
      'ssh-add -l > bg-list.txt',
      `ssh -o BatchMode=yes -o HostKeyAlias=git.example.test -o ProxyCommand="python3 ${tmp.dir}/connect.py 127.0.0.1 ${sshd.port}" -p ${sshd.port} ${sshd.user}@git.example.test 'echo bg-signed-in' > bg-ssh.txt 2>&1`,
      'echo done > bg-done',
    ].join('\n');
    const started = await execgate(['run', '--mode', 'background', '--', command]);
    expect(started.stderr).toBe('');
    expect(started.status).toBe(0);
    const id = started.stdout.trim();
    const mine = agentDirs().filter((name) => !before.has(name));
    expect(mine).toHaveLength(1);
    writeFileSync(join(tmp.dir, 'go'), '');
    expect(await waitFor(() => existsSync(join(tmp.dir, 'bg-done')), 60_000, 50)).toBe(true);
    expect(readFileSync(join(tmp.dir, 'bg-list.txt'), 'utf8')).toContain(parsePrivateSshKey(key.text, 'k').fingerprint);
    expect(readFileSync(join(tmp.dir, 'bg-ssh.txt'), 'utf8')).toBe('bg-signed-in\n');
    expect(await waitFor(() => !existsSync(join('/tmp', mine[0]!)), 30_000, 100)).toBe(true);
    const records = readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(expect.objectContaining({ event: 'ssh.sign', runId: id, allowed: true, key: parsePrivateSshKey(key.text, 'k').fingerprint }));
    expect(readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8')).not.toContain(key.text.split('\n')[2]);
  });
});
