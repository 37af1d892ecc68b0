/*
 * The one renderer of bubblewrap's options (process/bwrap/spec.ts): every mount kind and global
 * option as exact argv, descriptors in place of sources, and the spec's key (what the warm pool
 * and the file tools keep sandboxes by).
 */
import { getSpecKey, renderBwrapOptions, renderMounts, type BwrapMount, type BwrapSpec } from '../../src/process/bwrap/spec';

const base: BwrapSpec = {
  mounts: [],
  unshare: [],
  disableUserns: false,
  chdir: '/',
  dieWithParent: false,
  dropCapabilities: false,
  newSession: false,
};

describe('renderBwrapOptions', () => {
  test('each mount kind, in the order given', () => {
    const mounts: BwrapMount[] = [
      { kind: 'bind', source: '/', dest: '/', readOnly: true },
      { kind: 'tmpfs', path: '/home/u/.aws', mode: 0o700 },
      { kind: 'tmpfs', path: '/tmp' },
      { kind: 'symlink', target: '../x', path: '/home/u/.aws/link' },
      { kind: 'bind', source: '/w', dest: '/w', readOnly: false },
      { kind: 'dev', path: '/dev' },
      { kind: 'proc', path: '/proc' },
      { kind: 'bind', source: '/dev/null', dest: '/w/.env', readOnly: true },
      { kind: 'remount-ro', path: '/home/u/.aws' },
    ];
    expect(renderMounts(mounts)).toEqual([
      '--ro-bind', '/', '/', '--perms', '0700', '--tmpfs', '/home/u/.aws', '--tmpfs', '/tmp', '--symlink', '../x', '/home/u/.aws/link',
      '--bind', '/w', '/w', '--dev', '/dev', '--proc', '/proc', '--ro-bind', '/dev/null', '/w/.env', '--remount-ro', '/home/u/.aws',
    ]);
  });

  test('global options after the mounts, in one fixed order whatever order the namespaces are listed in', () => {
    const spec: BwrapSpec = {
      ...base,
      mounts: [{ kind: 'tmpfs', path: '/tmp' }],
      unshare: ['net', 'user', 'pid', 'cgroup-try', 'uts', 'ipc'],
      disableUserns: true,
      chdir: '/w',
      dieWithParent: true,
      dropCapabilities: true,
      newSession: true,
      seccomp: '/f.bpf',
    };
    expect(renderBwrapOptions(spec)).toEqual([
      '--tmpfs', '/tmp', '--chdir', '/w',
      '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-user', '--unshare-net', '--disable-userns',
      '--die-with-parent', '--cap-drop', 'ALL', '--new-session', '--seccomp', '/f.bpf',
    ]);
    expect(renderBwrapOptions(base)).toEqual(['--chdir', '/']);
  });

  test('sources named by descriptor where the naming says so, by path elsewhere', () => {
    const spec: BwrapSpec = {
      ...base,
      mounts: [
        { kind: 'bind', source: '/', dest: '/', readOnly: true },
        { kind: 'bind', source: '/w', dest: '/w', readOnly: false },
        { kind: 'bind', source: '/r', dest: '/r', readOnly: true },
        { kind: 'bind', source: '/run/x', dest: '/egress', readOnly: true },
      ],
      seccomp: '/f.bpf',
    };
    let next = 4;
    const seen: string[] = [];
    const options = renderBwrapOptions(spec, {
      bind: (mount) => (mount.source === mount.dest && mount.source !== '/' ? (seen.push(mount.source), next++) : undefined),
      seccomp: (path) => (seen.push(path), next++),
    });
    expect(options).toEqual([
      '--ro-bind', '/', '/', '--bind-fd', '4', '/w', '--ro-bind-fd', '5', '/r', '--ro-bind', '/run/x', '/egress',
      '--chdir', '/', '--seccomp', '6',
    ]);
    // Opened in the order the descriptors are numbered.
    expect(seen).toEqual(['/w', '/r', '/f.bpf']);
  });
});

describe('getSpecKey', () => {
  const spec: BwrapSpec = { ...base, mounts: [{ kind: 'bind', source: '/w', dest: '/w', readOnly: false }], chdir: '/w' };

  test('the same spec and launcher: the same key; any difference in mounts, options or launcher: another', () => {
    const key = getSpecKey(['bwrap'], spec);
    expect(getSpecKey(['bwrap'], { ...spec, mounts: [...spec.mounts] })).toBe(key);
    expect(getSpecKey(['bwrap'], { ...spec, mounts: [{ kind: 'bind', source: '/w', dest: '/w', readOnly: true }] })).not.toBe(key);
    expect(getSpecKey(['bwrap'], { ...spec, mounts: [...spec.mounts, { kind: 'tmpfs', path: '/w/x' }] })).not.toBe(key);
    expect(getSpecKey(['bwrap'], { ...spec, newSession: true })).not.toBe(key);
    expect(getSpecKey(['bwrap'], { ...spec, unshare: ['net'] })).not.toBe(key);
    expect(getSpecKey(['nsenter', '--net=/x', '--', 'bwrap'], spec)).not.toBe(key);
    expect(getSpecKey(['bwrap'], { ...spec, chdir: '/w/sub' })).not.toBe(key);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
  });

  test('withoutChdir: the working directory does not count (a warm sandbox enters it itself), nothing else changes', () => {
    const key = getSpecKey(['bwrap'], spec, { withoutChdir: true });
    expect(getSpecKey(['bwrap'], { ...spec, chdir: '/w/sub' }, { withoutChdir: true })).toBe(key);
    expect(getSpecKey(['bwrap'], { ...spec, newSession: true }, { withoutChdir: true })).not.toBe(key);
  });
});
