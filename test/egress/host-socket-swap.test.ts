/*
 * A UNIX-socket host service (`hostServices: [{ unix: PATH }]`) is dialled by the gateway, on the
 * host, at PATH. When PATH lies in a directory a run can write (a dev server's socket in the
 * project, as Rails' `tmp/sockets/puma.sock`), the run can move the directory that holds it
 * aside (its own socket's mount moves with it), put a directory of its own in its place with a
 * symlink at PATH to any socket of the host, and connect to its own socket: the gateway then
 * follows the symlink, outside every sandbox, to a socket the sandbox hides (a container engine's
 * control socket, say). The stand-in here is a socket outside the workspace that answers
 * `victim-socket`.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
let dir: string;
let home: string;
let victimDir: string;
let victimPath: string;
let servers: Server[] = [];

function listen(path: string, reply: string): Promise<Server> {
  const server = createServer((socket) => socket.end(reply));
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

beforeAll(async () => {
  tmp = makeTempDir('execgate-host-socket-');
  dir = join(tmp.dir, 'work');
  home = join(tmp.dir, 'home');
  mkdirSync(join(dir, 'sockets'), { recursive: true });
  victimDir = mkdtempSync(join(tmpdir(), 'execgate-victim-'));
  victimPath = join(victimDir, 'app.sock');
  servers = [await listen(join(dir, 'sockets', 'app.sock'), 'app-service\n'), await listen(victimPath, 'victim-socket\n')];
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, ['version: 1', `sandbox: { mode: required, network: { mode: allowlist, hostServices: [{ unix: "${join(dir, 'sockets', 'app.sock')}" }] } }`].join('\n'));
  gateway = createGateway({ home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { runtimeDir: tmp.dir } });
});

afterAll(async () => {
  await gateway?.close();
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  rmSync(victimDir, { recursive: true, force: true });
  tmp?.cleanup();
});

function decisions(runId: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => record.event === 'egress.decision' && record.runId === runId);
}

maybe('a UNIX-socket host service in a directory the run can write', () => {
  test('a run that swaps the directory and plants a symlink does not reach another socket of the host', async () => {
    const connect = (path: string): string => `python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('${path}'); print('got', s.recv(100))
except OSError as e:
    print('refused', e.errno)
"`;
    const plain = await gateway.exec({ command: connect(join(dir, 'sockets', 'app.sock')), cwd: dir });
    const swap = await gateway.exec({
      command: [
        'mv sockets sockets.old && mkdir sockets',
        `ln -s ${victimPath} sockets/app.sock`,
        connect(join(dir, 'sockets.old', 'app.sock')),
      ].join('\n'),
      cwd: dir,
    });
    expect(swap.stdout + swap.stderr).not.toContain('victim-socket');
    expect(plain.stdout + plain.stderr).toContain('app-service');
    expect(decisions(swap.id)).toEqual([expect.objectContaining({ via: 'host', allowed: false, rule: 'dial-failed:not-a-socket' })]);
    // The workspace as it was (the run moved the host's directory).
    rmSync(join(dir, 'sockets'), { recursive: true, force: true });
    renameSync(join(dir, 'sockets.old'), join(dir, 'sockets'));
    // A symlink for the directory on the way instead: the kernel's name for what it reaches is not the policy's path.
    const ancestor = await gateway.exec({
      command: ['mv sockets sockets.old && ' + `ln -s ${victimDir} sockets`, connect(join(dir, 'sockets.old', 'app.sock'))].join('\n'),
      cwd: dir,
    });
    expect(ancestor.stdout + ancestor.stderr).not.toContain('victim-socket');
    expect(decisions(ancestor.id)).toEqual([expect.objectContaining({ via: 'host', allowed: false, rule: 'dial-failed:path-moved' })]);
    rmSync(join(dir, 'sockets'), { force: true });
    renameSync(join(dir, 'sockets.old'), join(dir, 'sockets'));
    const again = await gateway.exec({ command: connect(join(dir, 'sockets', 'app.sock')), cwd: dir });
    expect(again.stdout).toContain('app-service');
  });
});
