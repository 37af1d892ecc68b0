/*
 * A read-only view does not stop connect(2): a UNIX socket the host serves anywhere a run can
 * see is a door out of the sandbox (a terminal multiplexer's socket runs commands on the host, the
 * system bus lets root ask systemd to start anything). /tmp and /var/tmp are private to each run,
 * /run is not shown at all; a socket the host serves in each of them stays out of reach in every
 * mode, while the run still gets working private temp directories.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeTempDir } from '../helpers/tmp';
import { describeSandboxed, makeGateway, MODES, runIn } from './helpers';

const run = promisify(execFile);

const CONNECT = (path: string) =>
  `python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX)
s.settimeout(10)
try:
    s.connect(sys.argv[1]); print("CONNECTED", s.recv(64).decode())
except OSError as e:
    print("refused", e.errno)' ${path}`;

describeSandboxed('sockets the host serves are out of reach', () => {
  const { dir, cleanup } = makeTempDir('execgate-sockets-');
  const servers: Server[] = [];
  const places: string[] = [];
  const tag = `execgate-test-${process.pid}`;

  beforeAll(async () => {
    for (const parent of ['/tmp', '/var/tmp', '/run', '/run/user']) {
      if (!existsSync(parent)) continue;
      const place = join(parent, tag);
      mkdirSync(place, { recursive: true });
      const path = join(place, 'sock');
      const server = createServer((socket) => socket.end('HOST-SIDE\n'));
      await new Promise<void>((resolve) => server.listen(path, resolve));
      servers.push(server);
      places.push(path);
    }
  });
  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    for (const path of places) rmSync(join(path, '..'), { recursive: true, force: true });
    cleanup();
  });

  it('serves the sockets on the host (the probe itself works)', async () => {
    // Asynchronously: the servers answer from this process's event loop.
    for (const path of places) {
      const { stdout } = await run('bash', ['-c', CONNECT(path)], { timeout: 20_000 });
      expect(stdout).toContain('CONNECTED HOST-SIDE');
    }
    expect(places.length).toBeGreaterThanOrEqual(3);
  });

  it.each(MODES)('a %s run connects to none of them, and has private temp directories', async (mode) => {
    const gateway = makeGateway({ cwd: dir, home: join(dir, 'state') });
    try {
      const command = [...places.map(CONNECT), 'ls -A /run | wc -l', 'echo t > /var/tmp/own && cat /var/tmp/own', 'echo t2 > /tmp/own && cat /tmp/own'].join('; ');
      const { output, sandboxed } = await runIn(gateway, mode, command);
      expect(sandboxed).toBe(true);
      expect(output).not.toContain('CONNECTED');
      expect(output.match(/refused \d+/g)).toHaveLength(places.length);
      expect(output).toMatch(/^0\r?$/m);
      expect(output).toMatch(/^t\r?$/m);
      expect(output).toMatch(/^t2\r?$/m);
    } finally {
      await gateway.close();
    }
  }, 60_000);
});
