/*
 * What bubblewrap is told for a run (sandbox/args.ts: the spec, rendered by process/bwrap/spec.ts),
 * checked as exact argv and as data: mount order (later mounts cover earlier ones, so hidden
 * paths go last), what a PTY run keeps, and property tests that no path list can put a hidden
 * path before a writable one that contains it.
 */
import fc from 'fast-check';
import { getKernelMounts, getSandboxSpec, type BwrapInput } from '../../src/sandbox/args';
import type { FilesystemView } from '../../src/sandbox/paths';
import { renderBwrapOptions, renderMounts } from '../../src/process/bwrap/spec';

function getBwrapArgs(input: BwrapInput): string[] {
  return renderBwrapOptions(getSandboxSpec(input).spec);
}

function getProcMounts(): string[] {
  return renderMounts(getKernelMounts().mounts);
}

function view(partial: Partial<FilesystemView>): FilesystemView {
  return { hidden: [], writable: [], readOnly: [], pinned: [], privateTmp: ['/tmp'], skipped: [], abstractBus: false, cwd: '/', cwdWritable: false, ...partial };
}

/** /proc and /sys mounts are the base view of every run (see getProcMounts). */
function isKernel(path: string): boolean {
  return path.startsWith('/proc/') || path.startsWith('/sys/');
}

/** The mounts of an argv in order: grants (bind, ro-bind of a path onto itself) and hides. */
function parseMounts(args: string[]): Array<{ kind: 'grant' | 'hide' | 'base'; path: string }> {
  const mounts: Array<{ kind: 'grant' | 'hide' | 'base'; path: string }> = [];
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === '--bind' || flag === '--ro-bind') {
      const [from, to] = [args[i + 1] as string, args[i + 2] as string];
      mounts.push({ kind: to === '/' || isKernel(to) ? 'base' : from === '/dev/null' ? 'hide' : 'grant', path: to });
      i += 2;
    } else if (flag === '--tmpfs' || flag === '--dev' || flag === '--proc') {
      const to = args[i + 1] as string;
      mounts.push({ kind: flag === '--tmpfs' && to !== '/tmp' && !isKernel(to) ? 'hide' : 'base', path: to });
      i += 1;
    }
  }
  return mounts;
}

describe('the sandbox spec of a run, rendered', () => {
  test('exact argv: root, covered directory, private temp, writable, pinned, read-only, kernel, hidden, covers sealed, then the global options', () => {
    const args = getBwrapArgs({
      view: view({
        writable: ['/srv/proj'],
        pinned: ['/srv/proj/.git'],
        readOnly: ['/srv/proj/.git/hooks'],
        hidden: [{ path: '/srv/proj/.env.d', directory: true }, { path: '/home/u/.netrc', directory: false }, { path: '/home/u/.aws/credentials', directory: false }],
        privateTmp: ['/tmp', '/var/tmp'],
        covered: [{ path: '/home/u/.aws', mode: 0o755, binds: ['/home/u/.aws/config'], symlinks: [{ path: '/home/u/.aws/sso', target: '/nowhere' }], absent: ['/home/u/.aws/credentials'], names: ['config', 'sso'] }],
      }),
      cwd: '/srv/proj',
      unshareNet: true,
      pty: false,
      seccomp: '/opt/execgate/seccomp.bpf',
    });
    expect(args).toEqual([
      '--ro-bind', '/', '/',
      '--perms', '0755', '--tmpfs', '/home/u/.aws', '--ro-bind', '/home/u/.aws/config', '/home/u/.aws/config', '--symlink', '/nowhere', '/home/u/.aws/sso',
      '--tmpfs', '/tmp', '--bind', '/srv/proj', '/srv/proj', '--tmpfs', '/var/tmp',
      '--bind', '/srv/proj/.git', '/srv/proj/.git',
      '--ro-bind', '/srv/proj/.git/hooks', '/srv/proj/.git/hooks',
      '--dev', '/dev', '--proc', '/proc', ...getProcMounts(),
      '--tmpfs', '/srv/proj/.env.d', '--ro-bind', '/dev/null', '/home/u/.netrc',
      '--remount-ro', '/home/u/.aws',
      '--chdir', '/srv/proj',
      '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-user', '--unshare-net', '--disable-userns',
      '--die-with-parent', '--cap-drop', 'ALL', '--new-session', '--seccomp', '/opt/execgate/seccomp.bpf',
    ]);
  });

  test('exact argv: a PTY run on a shared network with no filter', () => {
    expect(getBwrapArgs({ view: view({ writable: ['/w'], privateTmp: [] }), cwd: '/w/sub', unshareNet: false, pty: true })).toEqual([
      '--ro-bind', '/', '/', '--bind', '/w', '/w', '--dev', '/dev', '--proc', '/proc', ...getProcMounts(),
      '--chdir', '/w/sub', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-user', '--disable-userns',
      '--die-with-parent', '--cap-drop', 'ALL',
    ]);
  });

  test('read-only root, private /tmp, writable, read-only again, the kernel file systems, hidden last; namespaces; cwd', () => {
    const args = getBwrapArgs({
      view: view({
        writable: ['/srv/proj'],
        readOnly: ['/srv/proj/.git/hooks'],
        hidden: [{ path: '/srv/proj/.env.d', directory: true }, { path: '/home/u/.netrc', directory: false }],
      }),
      cwd: '/srv/proj',
      unshareNet: true,
      pty: false,
    });
    expect(args.slice(0, 5)).toEqual(['--ro-bind', '/', '/', '--tmpfs', '/tmp']);
    expect(args.join(' ')).toContain('--bind /srv/proj /srv/proj --ro-bind /srv/proj/.git/hooks /srv/proj/.git/hooks');
    // After every bind: the fresh /dev and /proc, the kernel knobs read-only and masked, then the hidden paths.
    expect(args.join(' ')).toContain(`--ro-bind /srv/proj/.git/hooks /srv/proj/.git/hooks --dev /dev --proc /proc ${getProcMounts().join(' ')} --tmpfs /srv/proj/.env.d --ro-bind /dev/null /home/u/.netrc`);
    expect(getProcMounts().join(' ')).toContain('--ro-bind /proc/sys /proc/sys');
    for (const flag of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--die-with-parent', '--new-session']) expect(args).toContain(flag);
    expect(args.join(' ')).toContain('--cap-drop ALL');
    expect(args.join(' ')).toContain('--chdir /srv/proj');
  });

  test('a writable root holding /tmp, /proc, /sys or /dev (cwd: /) or inside them cannot bring the host\'s back', () => {
    for (const root of ['/', '/proc/sys/kernel', '/sys', '/sys/kernel/mm', '/dev/shm', '/tmp']) {
      const args = getBwrapArgs({ view: view({ writable: [root], privateTmp: ['/tmp', '/var/tmp/gw'] }), cwd: root, unshareNet: true, pty: false });
      const line = args.join(' ');
      const at = (text: string): number => line.indexOf(text);
      const bind = at(`--bind ${root} ${root}`);
      expect(bind).toBeGreaterThan(0);
      // Each of these comes after the writable bind, so it covers it.
      for (const after of ['--dev /dev', '--proc /proc', '--ro-bind /proc/sys /proc/sys']) expect(at(after)).toBeGreaterThan(bind);
      for (const tmp of ['/tmp', '/var/tmp/gw']) if (root === '/' || root === tmp) expect(at(`--tmpfs ${tmp}`)).toBeGreaterThan(bind);
      if (root === '/' || root.startsWith('/sys')) expect(at('--ro-bind /sys /sys')).toBeGreaterThan(bind);
      else expect(line).not.toContain('--ro-bind /sys /sys');
    }
  });

  test('a private temp directory goes after the roots that hold it and before the roots inside it', () => {
    const args = getBwrapArgs({ view: view({ writable: ['/tmp/proj', '/'], privateTmp: ['/tmp'] }), cwd: '/tmp/proj', unshareNet: true, pty: false });
    const line = args.join(' ');
    expect(line).toContain('--bind / / --tmpfs /tmp --bind /tmp/proj /tmp/proj');
  });

  test('a PTY run keeps its session (controlling terminal); a shared network is not unshared again', () => {
    const args = getBwrapArgs({ view: view({ writable: ['/w'] }), cwd: '/w', unshareNet: false, pty: true });
    expect(args).not.toContain('--new-session');
    expect(args).not.toContain('--unshare-net');
  });

  test('a hidden path under the private /tmp and outside every writable path needs no mount', () => {
    const args = getBwrapArgs({ view: view({ writable: ['/tmp/work'], hidden: [{ path: '/tmp/state', directory: true }, { path: '/tmp/work/state', directory: true }] }), cwd: '/tmp/work', unshareNet: true, pty: false });
    expect(args).not.toContain('/tmp/state');
    expect(args).toContain('/tmp/work/state');
  });

  test('property: every hidden path is mounted after every writable or read-only mount', () => {
    const segment = fc.constantFrom('a', 'b', 'c', '.ssh', 'state');
    const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
    fc.assert(fc.property(fc.uniqueArray(path, { maxLength: 5 }), fc.uniqueArray(path, { maxLength: 5 }), fc.uniqueArray(path, { maxLength: 5 }), (writable, readOnly, hidden) => {
      const args = getBwrapArgs({ view: view({ writable, readOnly, hidden: hidden.map((p, i) => ({ path: p, directory: i % 2 === 0 })) }), cwd: '/', unshareNet: true, pty: false });
      const mounts = parseMounts(args).filter((m) => m.kind !== 'base');
      const kinds = mounts.map((m) => m.kind);
      expect(kinds.lastIndexOf('grant')).toBeLessThan(kinds.indexOf('hide') === -1 ? Infinity : kinds.indexOf('hide'));
      expect(mounts.filter((m) => m.kind === 'hide').map((m) => m.path).sort()).toEqual([...hidden].sort());
    }));
  });
});
