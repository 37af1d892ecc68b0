/*
 * Attribution of a raw TCP connection in the shared network namespace (attribution.ts) reads which
 * run's process holds the client socket when the gateway looks, a few milliseconds after the
 * connection arrives. Runs of one gateway share that namespace and so its abstract UNIX sockets,
 * over which one run can hand a descriptor to another (SCM_RIGHTS). Run A connects to a named
 * destination, passes the socket to run B at once and closes its own copy: by the time the
 * gateway looks, only B holds it, and the connection A opened is recorded as B's.
 *
 * With connections handed over (egress/tcp-notify.ts, the default where the host supports it)
 * the connection is decided, and recorded, when A's connect(2) reaches the gateway through A's
 * own filter: it is A's whoever holds the socket later. Relayed (`connectHandoff: false`, or a
 * host without the hand-off) it still fails (the `egress.decision` names B's run): both runs are
 * under the same policy (a run with a policy of its own, narrowed by an env-bound secret, has a
 * namespace of its own), so nothing is reached that A could not reach; what breaks is the record
 * of who opened it, and B must take part. SECURITY.md says so.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { getConnectHandoffSupport } from '../../src/egress/tcp-notify';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable && getConnectHandoffSupport() !== undefined ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let echo: Server;
let echoPort = 0;
let gateway: Gateway;
let dir: string;
let home: string;

const RECEIVER_PY = `
import array, socket, sys
l = socket.socket(socket.AF_UNIX)
l.bind('\\0execgate-attribution-test')
l.listen(1)
print('ready', flush=True)
c, _ = l.accept()
msg, anc, _, _ = c.recvmsg(1, socket.CMSG_LEN(4))
fd = array.array('i', anc[0][2])[0]
s = socket.socket(fileno=fd)
s.sendall(b'hello\\n')
print('got', s.recv(100), flush=True)
`;

const SENDER_PY = `
import array, socket, time
for _ in range(100):
    try:
        u = socket.socket(socket.AF_UNIX); u.connect('\\0execgate-attribution-test'); break
    except OSError:
        time.sleep(0.1)
s = socket.create_connection(('echo.test', ${'${PORT}'}))
u.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [s.fileno()]))])
s.close()
print('passed')
`;

beforeAll(async () => {
  tmp = makeTempDir('execgate-tcp-pass-');
  echo = createServer((socket: Socket) => {
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => socket.write(Buffer.concat([Buffer.from('echo:'), chunk])));
  });
  echoPort = await new Promise((resolve) => echo.listen(0, '127.0.0.1', () => resolve((echo.address() as { port: number }).port)));
  dir = join(tmp.dir, 'work');
  home = join(tmp.dir, 'home');
  mkdirSync(dir);
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, ['version: 1', `sandbox: { mode: required, network: { mode: allowlist, tcp: ["echo.test:${echoPort}"] } }`].join('\n'));
  writeFileSync(join(dir, 'receiver.py'), RECEIVER_PY);
  writeFileSync(join(dir, 'sender.py'), SENDER_PY.replace('${PORT}', String(echoPort)));
  gateway = createGateway({
    home, env: baseEnv(), cwd: dir, policyFile: policy,
    egress: {
      runtimeDir: tmp.dir,
      resolver: async (host: string) => {
        if (host === 'echo.test') return ['203.0.113.7'];
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      },
      dial: (address: string, port: number) => (address === '203.0.113.7' ? { host: '127.0.0.1', port: echoPort } : { host: address, port }),
    },
  });
});

afterAll(async () => {
  await gateway?.close();
  await new Promise((resolve) => echo.close(resolve));
  tmp?.cleanup();
});

maybe('attribution of a socket passed between runs', () => {
  test('the connection run A opened is recorded as A\'s, not as that of the run it passed the socket to', async () => {
    const receiver = await gateway.exec({ command: 'python3 receiver.py', cwd: dir, mode: 'background' });
    const sender = await gateway.exec({ command: 'python3 sender.py', cwd: dir, timeout: 30_000 });
    expect(sender.stdout).toContain('passed');
    const ended = await gateway.background.wait(receiver.id, 30_000);
    expect(readFileSync((ended as { outputPath: string }).outputPath, 'utf8')).toContain('echo:hello');
    const decisions = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record.event === 'egress.decision' && record.via === 'tcp');
    expect(decisions).toEqual([expect.objectContaining({ runId: sender.id })]);
  });
});
