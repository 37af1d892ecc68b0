/*
 * A command that writes requests to its SSH agent and never reads the answers: the agent must
 * stop reading (as any socket peer does when its replies are not taken), not read every request
 * and keep every answer in the gateway's memory. A request for identities is 5 bytes and its
 * answer some 90, so without that a run grows the gateway's memory at its own write speed, many
 * times over, until the gateway dies with every other run. Python inside the real sandbox writes
 * them without reading, as long as the socket takes them (up to 4 MiB); a gateway that stops
 * reading stops taking them after the socket buffers (a few hundred KiB). The agent then still
 * answers the next run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeKey } from './sshd';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;
const LIMIT = 4 * 1024 * 1024;

const FLOOD_PY = `
import os, select, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ['SSH_AUTH_SOCK'])
s.setblocking(False)
batch = b'\\x00\\x00\\x00\\x01\\x0b' * 13107
sent = 0
while sent < ${LIMIT}:
    if not select.select([], [s], [], 3)[1]:
        break
    try:
        sent += s.send(batch)
    except BlockingIOError:
        pass
print('sent', sent)
`;

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
let work: string;

beforeAll(() => {
  if (!sandboxable) return;
  tmp = makeTempDir('execgate-ssh-flood-');
  const key = makeKey(tmp.dir, 'deploy');
  const host = makeKey(tmp.dir, 'host');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [] } }',
    'secrets:',
    '  bind:',
    `    - { ref: "secret:deploy", delivery: ssh-agent, hosts: ["git.example.test"], hostKeys: ["${host.pub.split(' ').slice(0, 2).join(' ')}"] }`,
  ].join('\n'));
  writeFileSync(join(work, 'flood.py'), FLOOD_PY);
  gateway = createGateway({
    home: join(tmp.dir, 'home'), env: baseEnv(), cwd: work, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'deploy' ? { found: true, value: key.text } : { found: false }) }],
    egress: { runtimeDir: tmp.dir },
  });
});

afterAll(async () => {
  await gateway?.close();
  tmp?.cleanup();
});

maybe('a command that floods the agent socket and reads nothing', () => {
  test('the agent stops taking its requests once its answers are not read; the next run is answered', async () => {
    const flood = await gateway.exec({ command: 'python3 flood.py', cwd: work, timeout: 120_000 });
    expect(flood.stderr).toBe('');
    const sent = Number(/sent (\d+)/.exec(flood.stdout)?.[1]);
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan(LIMIT / 4);
    const next = await gateway.exec({ command: 'ssh-add -l', cwd: work });
    expect(next.stdout).toMatch(/SHA256:/);
  });
});
