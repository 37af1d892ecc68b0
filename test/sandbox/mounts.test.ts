/*
 * What a request's working directory can and cannot make writable, tried with real bubblewrap
 * in all three modes: a cwd that holds the kernel's file systems or lies inside them (`/`,
 * `/proc/sys/kernel`, `/sys`), the host's temp directory with every gateway's runtime sockets,
 * the system's programs and execgate's own code. And the race a concurrent run can play on the
 * name of the next run's cwd: bubblewrap mounts the descriptor the gateway checked, never a
 * name it follows later.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createGateway } from '../../src/gateway';
import { DEFAULT_HIDDEN_PATHS } from '../../src/policy/effective';
import { renderLaunch } from '../../src/process/bwrap/launch';
import type { BwrapMount } from '../../src/process/bwrap/spec';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeGateway, MODES, runIn, sandboxPolicy } from './helpers';

jest.setTimeout(120_000);

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-mnt-'); });
afterEach(() => rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));

function gateway(extra: { warmSandboxes?: number } = {}): ReturnType<typeof createGateway> {
  return makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: tmp.dir, sandbox: { network: 'none' }, ...extra });
}

describeSandboxed('a working directory cannot bring the host back', () => {
  test.each(MODES)('%s: cwd / sees a fresh /proc, masked kernel state, read-only knobs, /sys and system programs, a private /tmp', async (mode) => {
    const marker = join(tmpdir(), `execgate-mnt-host-${process.pid}`);
    writeFileSync(marker, 'host tmp');
    const g = gateway();
    try {
      const run = await runIn(g, mode, [
        'echo "pids=$(ls -d /proc/[0-9]* | wc -l)"',
        'echo "kallsyms=$(head -c 64 /proc/kallsyms 2>/dev/null | wc -c)"',
        '[ -w /proc/sys/kernel/core_pattern ] && echo core_pattern-writable',
        '( printf core > /proc/sys/kernel/core_pattern ) 2>/dev/null && echo core_pattern-written',
        'for f in /usr/bin/bash /usr/bin/env /etc/passwd; do [ -w "$f" ] && echo "writable $f"; done',
        `[ -e ${marker} ] && echo host-tmp-visible`,
        '( : > /sys/kernel/execgate-probe ) 2>/dev/null; [ -w /sys/kernel/mm ] && echo sys-writable',
        'echo end',
      ].join('\n'), { cwd: '/' });
      expect(run.sandboxed).toBe(true);
      expect(run.output).toContain('end');
      expect(Number(/pids=(\d+)/.exec(run.output)?.[1])).toBeLessThan(10);
      expect(run.output).toContain('kallsyms=0');
      for (const leak of ['core_pattern-writable', 'core_pattern-written', 'writable ', 'host-tmp-visible', 'sys-writable']) expect(run.output).not.toContain(leak);
    } finally {
      rmSync(marker, { force: true });
      await g.close();
    }
  });

  test.each(['/proc/sys/kernel', '/sys/kernel/mm', '/sys'])('cwd %s: the knobs stay read-only', async (cwd) => {
    const g = gateway();
    try {
      const run = await runIn(g, 'sync', 'for f in . core_pattern transparent_hugepage/enabled kernel/mm/transparent_hugepage/enabled; do [ -e "$f" ] && { [ -w "$f" ] && echo "writable $f" || echo "read-only $f"; }; done; echo end', { cwd });
      expect(run.output).toContain('end');
      expect(run.output).not.toContain('writable ');
      // The probe is not vacuous: sysfs directories are writable by root on the host.
      expect(run.output).toContain('read-only .');
      if (cwd === '/proc/sys/kernel') expect(run.output).toContain('read-only core_pattern');
    } finally {
      await g.close();
    }
  });

  test('cwd = the temp directory: gateways\' runtime directories, present and future, are out of reach', async () => {
    const g = gateway();
    const early = mkdtempSync(join(tmpdir(), 'execgate-egress-'));
    writeFileSync(join(early, 'egress.sock'), '');
    let late: string | undefined;
    try {
      // A run that started before the next gateway's runtime directory was made looks again later.
      // (Only runtime directories count: this test's own workspace is a directory under /tmp too, bound in.)
      const bg = await g.exec({ command: 'sleep 1; ls -d execgate-* 2>/dev/null | grep -Ec "^execgate-(spawn|egress)-" | sed "s/^/seen=/"', cwd: tmpdir(), mode: 'background' });
      late = mkdtempSync(join(tmpdir(), 'execgate-spawn-'));
      const sync = await g.exec({ command: `ls -d execgate-* 2>/dev/null | grep -Ec "^execgate-(spawn|egress)-" | sed "s/^/seen=/"; [ -e ${join(early, 'egress.sock')} ] && echo early-visible`, cwd: tmpdir() });
      expect(sync.stdout).toContain('seen=0');
      expect(sync.stdout).not.toContain('early-visible');
      await g.background.wait(bg.id, 30_000);
      expect(readFileSync(bg.outputPath, 'utf8')).toContain('seen=0');
      // A working directory inside a gateway's runtime directory is refused before anything runs.
      await expect(g.exec({ command: 'true', cwd: early })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_PATH' });
    } finally {
      rmSync(early, { recursive: true, force: true });
      if (late) rmSync(late, { recursive: true, force: true });
      await g.close();
    }
  });

  test('execgate\'s own code is read-only inside, even when the writable root holds it', async () => {
    const own = resolve(__dirname, '..', '..');
    const g = gateway();
    try {
      const run = await runIn(g, 'sync', `for f in "${own}/dist/gateway.js" "${own}/node_modules/yaml/package.json"; do [ -e "$f" ] && { [ -w "$f" ] && echo "writable $f" || echo "read-only $f"; }; done; echo end`, { cwd: dirname(own) });
      expect(run.output).toContain('end');
      expect(run.output).toContain(`read-only ${own}/dist/gateway.js`);
      expect(run.output).not.toContain('writable ');
    } finally {
      await g.close();
    }
  });
});

describeSandboxed('the working directory\'s name cannot be swapped between the check and the mount', () => {
  test('a path with a replaced component is refused by the descriptor check (EXECGATE_ERR_SANDBOX_PATH)', () => {
    const real = join(tmp.dir, 'real');
    mkdirSync(real);
    const link = join(tmp.dir, 'link');
    symlinkSync(real, link);
    const launch = (mounts: BwrapMount[]) => ({
      launcher: ['/usr/bin/bwrap'],
      spec: { mounts, unshare: [], disableUserns: false, chdir: '/', dieWithParent: false, dropCapabilities: false, newSession: false },
      check: { hiddenDirs: [], nullCovers: [], tmpfs: [], mounted: [], writable: [], binds: [] },
    });
    const bind = (source: string, dest: string, readOnly: boolean): BwrapMount => ({ kind: 'bind', source, dest, readOnly });
    expect(() => renderLaunch(launch([bind(link, link, false)]), ['true'])).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_SANDBOX_PATH' }));
    // Gone since the plan saw it (an entry of a covered home directory removed meanwhile), or a
    // component that is no longer a directory: changed too, never a failure to start the shell.
    for (const gone of [join(tmp.dir, 'removed'), join(link, 'x', 'y'), join(tmp.dir, 'file', 'x')]) {
      writeFileSync(join(tmp.dir, 'file'), '');
      expect(() => renderLaunch(launch([bind(gone, gone, true)]), ['true'])).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_SANDBOX_PATH', details: { path: gone } }));
    }
    const opened = renderLaunch(launch([bind('/', '/', true), bind(real, real, false), bind('/dev/null', '/x', true)]), ['true']);
    // The options travel on descriptor 3; the source is descriptor 4, checked by its name.
    expect(opened.args).toEqual(['--args', '3', '--', 'true']);
    expect(opened.data.toString().split('\0')).toEqual(['--ro-bind', '/', '/', '--bind-fd', '4', real, '--ro-bind', '/dev/null', '/x', '--chdir', '/', '']);
    expect(opened.sources).toEqual([{ path: real, kind: 'bind' }]);
    for (const fd of opened.fds) require('node:fs').closeSync(fd);
  });

  test.each([0, 1])('a background run flipping the next runs\' cwd with a symlink to the state directory never gets it in (warm sandboxes: %i)', async (warmSandboxes) => {
    const state = join(tmp.dir, 'state');
    const race = join(tmp.dir, 'work', 'race');
    mkdirSync(join(race, 'x'), { recursive: true });
    writeFileSync(join(race, 'x', 'ordinary'), '');
    const g = gateway({ warmSandboxes });
    try {
      await g.exec({ command: 'true', cwd: join(race, 'x') });
      writeFileSync(join(state, 'planted-marker'), 'state');
      symlinkSync(state, join(race, 'y'));
      // renameat2(RENAME_EXCHANGE) swaps the directory and the symlink atomically, as fast as it can.
      const flipper = await g.exec({
        command: `python3 -c '
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
open("flipping", "w").close()
end = time.time() + 600
while time.time() < end and not os.path.exists("stop"):
    libc.renameat2(-100, b"x", -100, b"y", 2)
'`,
        cwd: race,
        mode: 'background',
      });
      expect(await waitFor(() => { try { readFileSync(join(race, 'flipping')); return true; } catch { return false; } }, 30_000)).toBe(true);
      const seen: Record<string, number> = {};
      for (let i = 0; i < 60; i++) {
        try {
          const result = await g.exec({ command: 'ls -A | tr "\\n" " "', cwd: join(race, 'x') });
          const key = result.stdout.includes('planted-marker') || result.stdout.includes('audit') ? 'STATE' : result.stdout.includes('ordinary') ? 'ordinary' : `other:${result.stdout}${result.stderr}`;
          seen[key] = (seen[key] ?? 0) + 1;
        } catch (error) {
          const code = (error as { code?: string }).code ?? 'error';
          seen[code] = (seen[code] ?? 0) + 1;
        }
      }
      writeFileSync(join(race, 'stop'), '');
      await g.background.wait(flipper.id, 30_000);
      expect(seen.STATE).toBeUndefined();
      // The race was on: some runs met the symlink at the check (refused) or ran in the directory.
      expect((seen.EXECGATE_ERR_SANDBOX_PATH ?? 0) + (seen.ordinary ?? 0)).toBeGreaterThan(0);
    } finally {
      await g.close();
    }
  });
});

test('a state directory named through a symlink is used by its real path from the start', async () => {
  const real = join(tmp.dir, 'real-state');
  mkdirSync(real);
  const link = join(tmp.dir, 'state-link');
  symlinkSync(real, link);
  const g = createGateway({ policy: sandboxPolicy({ mode: 'off' }), env: baseEnv({ EXECGATE_HOME: link }), cwd: tmp.dir });
  const h = createGateway({ policy: sandboxPolicy({ mode: 'off' }), home: link, env: baseEnv({}), cwd: tmp.dir });
  try {
    expect(g.home).toBe(real);
    expect(h.home).toBe(real);
  } finally {
    await g.close();
    await h.close();
  }
});

describeSandboxed('host services on UNIX sockets', () => {
  // The container engines' sockets are on the built-in list (DEFAULT_HIDDEN_PATHS), hidden as
  // any listed path is. The test does not make one: a socket that comes and goes under /run
  // would be on every other gateway's hidden list meanwhile (the machine's, not the test's).
  test('a socket the policy lists is out of reach; an unlisted one answers (the control)', async () => {
    expect(DEFAULT_HIDDEN_PATHS).toEqual(expect.arrayContaining(['/run/docker.sock', '/var/run/docker.sock', '/run/containerd/containerd.sock', '/run/podman/podman.sock']));
    const net = require('node:net') as typeof import('node:net');
    const listed = join(tmp.dir, 'listed.sock');
    const unlisted = join(tmp.dir, 'unlisted.sock');
    const paths = [listed, unlisted];
    const servers = await Promise.all(paths.map((path) => new Promise<import('node:net').Server>((resolveServer) => {
      const server = net.createServer((socket) => socket.end('ANSWERED\n'));
      server.listen(path, () => resolveServer(server));
    })));
    const g = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: tmp.dir, sandbox: { network: 'none', filesystem: { hidden: [...DEFAULT_HIDDEN_PATHS, listed], writable: [], readOnly: [] } } });
    try {
      const probe = (path: string): string => `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(sys.argv[2], s.recv(64).decode().strip())' ${path} ${path === unlisted ? 'unlisted' : 'hidden'} 2>/dev/null || echo "refused ${path}"`;
      const run = await runIn(g, 'sync', paths.map(probe).join('\n'), { cwd: join(tmp.dir) });
      expect(run.output).toContain('unlisted ANSWERED');
      expect(run.output).not.toContain('hidden ANSWERED');
      expect(run.output).toContain(`refused ${listed}`);
    } finally {
      await g.close();
      await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
    }
  });
});
