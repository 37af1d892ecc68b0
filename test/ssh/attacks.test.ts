/*
 * What a command inside a run can try against the gateway's SSH agent, speaking the agent
 * protocol on SSH_AUTH_SOCK itself (python inside the real sandbox), with the gateway's real
 * agent behind it:
 *   - a signature over data of its choosing with no session-bind: refused;
 *   - a session-bind whose host signature is forged: refused;
 *   - a genuine session-bind to a server whose host key the binding does not name: no signature;
 *   - a genuine session-bind to the bound server (as a real key exchange would give the run), then
 *     a signature over anything but that session's user-authentication request: refused (the
 *     request itself is signed: that is what the binding grants);
 *   - a forwarded session, a second bind on one connection: refused;
 *   - adding, removing and locking keys (ssh-add -d/-D/-x, SSH_AGENTC_ADD_IDENTITY): refused.
 * Each signature and refusal is an `ssh.sign` record. And the private key is nowhere a run can
 * read: not in any process's environment or argv (all of /proc, scanned from the host while a run
 * lives), the run's /tmp, /etc/ssh or writable root (scanned from inside), nor the audit log.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { parseKey, parsePrivateSshKey, type ParsedKey } from '../../src/egress/ssh/keys';
import { agentFrame, wireString } from '../../src/egress/ssh/wire';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeKey, startSshd, type Sshd } from './sshd';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

const FAILURE = 5;
const SUCCESS = 6;
const SIGN_RESPONSE = 14;
const IDENTITIES_ANSWER = 12;

/** Sends each connection's messages (hex, one connection per line of the input), prints each reply's type. */
const PROBE_PY = `
import os, socket, sys
for line in open(sys.argv[1]):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ['SSH_AUTH_SOCK'])
    types = []
    for message in line.split():
        s.sendall(bytes.fromhex(message))
        head = b''
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                break
            head += chunk
        if len(head) < 4:
            types.append('closed')
            break
        size = int.from_bytes(head, 'big')
        body = b''
        while len(body) < size:
            body += s.recv(size - len(body))
        types.append(str(body[0]))
    print(' '.join(types))
    s.close()
`;

let tmp: ReturnType<typeof makeTempDir>;
let sshd: Sshd;
let key: ReturnType<typeof makeKey>;
let hostPrivate: ParsedKey;
let gateway: Gateway;
let home: string;
let work: string;

function one(text: string): ParsedKey {
  const parsed = parseKey(text);
  if (parsed instanceof Error || Array.isArray(parsed)) throw new Error('not one key');
  return parsed;
}

const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };

function signRequest(data: Buffer): Buffer {
  return agentFrame(13, Buffer.concat([wireString(one(key.text).getPublicSSH()), wireString(data), u32(0)]));
}

function bind(hostKey: ParsedKey, sessionId: Buffer, signature: Buffer, forwarding = false): Buffer {
  return agentFrame(27, Buffer.concat([
    wireString('session-bind@openssh.com'), wireString(hostKey.getPublicSSH()), wireString(sessionId),
    wireString(Buffer.concat([wireString(hostKey.type), wireString(signature)])), Buffer.from([forwarding ? 1 : 0]),
  ]));
}

function userauth(sessionId: Buffer): Buffer {
  return Buffer.concat([
    wireString(sessionId), Buffer.from([50]), wireString(sshd.user), wireString('ssh-connection'), wireString('publickey'), Buffer.from([1]),
    wireString('ssh-ed25519'), wireString(one(key.text).getPublicSSH()),
  ]);
}

function hostSign(host: ParsedKey, data: Buffer): Buffer {
  const signature = host.sign(data);
  if (signature instanceof Error) throw signature;
  return signature;
}

async function probe(connections: Buffer[][]): Promise<{ replies: number[][]; runId: string }> {
  writeFileSync(join(work, 'probe.txt'), connections.map((messages) => messages.map((m) => m.toString('hex')).join(' ')).join('\n') + '\n');
  writeFileSync(join(work, 'probe.py'), PROBE_PY);
  const result = await gateway.exec({ command: 'python3 probe.py probe.txt', cwd: work });
  expect(result.stderr).toBe('');
  return { replies: result.stdout.trim().split('\n').map((line) => line.split(' ').map(Number)), runId: result.id };
}

function signRecords(runId: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => record.event === 'ssh.sign' && record.runId === runId);
}

beforeAll(async () => {
  if (!sandboxable) return;
  tmp = makeTempDir('execgate-ssh-attacks-');
  key = makeKey(tmp.dir, 'deploy');
  mkdirSync(join(tmp.dir, 'sshd'));
  sshd = await startSshd(join(tmp.dir, 'sshd'), [key.pub]);
  hostPrivate = one(readFileSync(join(tmp.dir, 'sshd', 'host_key'), 'utf8'));
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  home = join(tmp.dir, 'home');
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [] } }',
    'secrets:',
    '  bind:',
    `    - { ref: "secret:deploy", delivery: ssh-agent, hosts: ["git.example.test"], hostKeys: ["${sshd.hostKey}"] }`,
  ].join('\n'));
  gateway = createGateway({
    home, env: baseEnv(), cwd: work, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'deploy' ? { found: true, value: key.text } : { found: false }) }],
    egress: { runtimeDir: tmp.dir },
  });
});

afterAll(async () => {
  await gateway?.close();
  await sshd?.close();
  tmp?.cleanup();
});

maybe('a command speaking to the agent socket itself', () => {
  test('gets a signature only over the bound session\'s user-authentication request, and every answer is recorded', async () => {
    const sid = randomBytes(32);
    const sid2 = randomBytes(32);
    const otherHost = one(makeKey(tmp.dir, `other-host-${randomBytes(3).toString('hex')}`).text);
    const { replies, runId } = await probe([
      // 0: no session-bind at all, arbitrary data, then a well-formed userauth request.
      [signRequest(Buffer.from('arbitrary data the run chose')), signRequest(userauth(sid))],
      // 1: a bind to the bound host key with a forged signature (the run does not hold the host's key).
      [bind(hostPrivate, sid, randomBytes(64)), signRequest(userauth(sid))],
      // 2: a genuine bind to another server (its own host key), then the userauth request for it.
      [bind(otherHost, sid, hostSign(otherHost, sid)), signRequest(userauth(sid))],
      // 3: a genuine bind to the bound server; arbitrary data, another session's request, then its own.
      [bind(hostPrivate, sid, hostSign(hostPrivate, sid)), signRequest(Buffer.from('arbitrary')), signRequest(userauth(randomBytes(32))), signRequest(userauth(sid))],
      // 4: a forwarded bind.
      [bind(hostPrivate, sid, hostSign(hostPrivate, sid), true), signRequest(userauth(sid))],
      // 5: bound, then rebound to another session on the same connection.
      [bind(hostPrivate, sid, hostSign(hostPrivate, sid)), bind(hostPrivate, sid2, hostSign(hostPrivate, sid2))],
      // 6: remove all (19), remove one (18), lock (22), add a key (17), an identities request
      // hiding another message in its body; the key is still listed after, and each got one answer.
      [agentFrame(19), agentFrame(18, wireString(one(key.text).getPublicSSH())), agentFrame(22, wireString('pw')), agentFrame(17, wireString('ssh-ed25519')),
        agentFrame(11, agentFrame(19)), agentFrame(11)],
      // 7: a sign request with fields missing, then one the agent refuses: each answered.
      [agentFrame(13, wireString(one(key.text).getPublicSSH())), signRequest(userauth(sid))],
    ]);
    expect(replies).toEqual([
      [FAILURE, FAILURE],
      [FAILURE, FAILURE],
      [SUCCESS, FAILURE],
      [SUCCESS, FAILURE, FAILURE, SIGN_RESPONSE],
      [FAILURE, FAILURE],
      [SUCCESS, FAILURE],
      [FAILURE, FAILURE, FAILURE, FAILURE, FAILURE, IDENTITIES_ANSWER],
      [FAILURE, FAILURE],
    ]);
    const records = signRecords(runId);
    expect(records.filter((record) => record.allowed === true)).toHaveLength(1);
    const reasons = records.filter((record) => record.allowed === false).map((record) => record.reason);
    expect(reasons).toEqual(expect.arrayContaining([
      expect.stringMatching(/not bound to an SSH session/),
      expect.stringMatching(/host signature .* does not verify/),
      expect.stringMatching(/host key is not one the key's binding names/),
      expect.stringMatching(/not a user-authentication request|not for the bound session/),
      expect.stringMatching(/forwarding/),
      expect.stringMatching(/already bound/),
    ]));
  });

  test('ssh-add -D, -d and adding a key fail; the bound key stays listed', async () => {
    const extra = makeKey(tmp.dir, `extra-${randomBytes(3).toString('hex')}`);
    writeFileSync(join(work, 'extra'), extra.text, { mode: 0o600 });
    writeFileSync(join(work, 'deploy.pub'), `${key.pub}\n`);
    const result = await gateway.exec({ command: 'ssh-add -D; echo "D=$?"; ssh-add -d deploy.pub; echo "d=$?"; ssh-add extra; echo "add=$?"; ssh-add -l', cwd: work });
    expect(result.stdout).toMatch(/D=[1-9]/);
    expect(result.stdout).toMatch(/d=[1-9]/);
    expect(result.stdout).toMatch(/add=[1-9]/);
    expect(result.stdout).toContain(parsePrivateSshKey(key.text, 'k').fingerprint);
    expect(result.stdout).not.toContain(parsePrivateSshKey(extra.text, 'k').fingerprint);
  });
});

maybe('the private key stays in the gateway', () => {
  test('no process environment or argv, no file of the run\'s /tmp, /etc/ssh or writable root, and no audit record holds it', async () => {
    // The key's base64 body lines past the first (which every OpenSSH key shares), and the whole body.
    const lines = key.text.trim().split('\n').slice(2, -1);
    const needles = [...lines.filter((line) => line.length >= 16), lines.join('')];
    // Kept reversed in the workspace: the scan inside the run turns them round in memory only.
    writeFileSync(join(work, 'needles.txt'), needles.map((needle) => [...needle].reverse().join('')).join('\n'));
    writeFileSync(join(work, 'scan.py'), `
import os, sys
needles = [line[::-1].encode() for line in open('needles.txt').read().split('\\n') if line]
found = []
for root in ['/tmp', '/etc/ssh', '.', '/proc']:
    for base, dirs, files in os.walk(root):
        if base.startswith('/proc/') and base.count('/') > 2:
            dirs[:] = []
        if base == '/proc':
            dirs[:] = [d for d in dirs if d.isdigit()]
            files = []
        for name in files:
            path = os.path.join(base, name)
            if base.startswith('/proc/') and name not in ('environ', 'cmdline'):
                continue
            if name == 'needles.txt':
                continue
            try:
                data = open(path, 'rb').read()
            except Exception:
                continue
            if any(n in data for n in needles):
                found.append(path)
print('found:', found)
`);
    // A background run that lives while the host scans every process's environment and argv.
    const started = await gateway.exec({ command: 'ssh-add -l >/dev/null; sleep 30', cwd: work, mode: 'background' });
    try {
      const hits: string[] = [];
      for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
        for (const file of ['environ', 'cmdline']) {
          let data: Buffer;
          try { data = readFileSync(`/proc/${pid}/${file}`); } catch { continue; }
          if (needles.some((needle) => data.includes(needle))) hits.push(`/proc/${pid}/${file}`);
        }
      }
      expect(hits).toEqual([]);
      const scan = await gateway.exec({ command: 'ssh-add -l > /tmp/list.txt; cp /etc/ssh/ssh_known_hosts /tmp/; python3 scan.py', cwd: work });
      expect(scan.stdout).toBe('found: []\n');
    } finally {
      await gateway.background.kill(started.id);
    }
    const audit = readFileSync(join(home, 'audit.log'), 'utf8');
    expect(needles.some((needle) => audit.includes(needle))).toBe(false);
    // And from the host: the writable root holds none of it either.
    const grep = spawnSync('grep', ['-rlF', '--exclude=needles.txt', ...needles.flatMap((needle) => ['-e', needle]), work], { encoding: 'utf8' });
    expect(grep.stdout).toBe('');
    expect(grep.status).toBe(1);
  });
});
