/*
 * The file-system view kept from one run to the next (src/sandbox/view-cache.ts) against the view
 * made afresh (realpath(3) of every name), after random sequences of host changes between two
 * views: credential files and directories created and removed (their directory there or not
 * yet), hidden names swapped for symlinks and back, hidden directories removed and made again,
 * entries coming and going in a covered directory, the workspace and its subdirectories renamed,
 * permissions changed. The two must be equal every time. Pauses let views be kept (a directory
 * changed within the clock's tick of a view is never trusted), so that reuse and the dropping of
 * a kept view both happen, and the counts say they did.
 */
import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { getFilesystemView, getFreshFilesystemView, type FilesystemInput } from '../../src/sandbox/paths';
import { clearViewCache, getViewCacheCounts } from '../../src/sandbox/view-cache';
import { makeHome } from './helpers';

const sleep = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

interface Scene {
  readonly root: string;
  readonly home: string;
  readonly work: string;
  readonly input: FilesystemInput;
}

function makeScene(root: string): Scene {
  rmSync(root, { recursive: true, force: true });
  const home = join(root, 'home');
  const work = join(root, 'work');
  for (const dir of [home, work, join(work, 'sub'), join(root, 'elsewhere'), join(home, '.config'), join(home, '.gnupg')]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(root, 'elsewhere', 'id_ed25519'), 'KEY');
  writeFileSync(join(home, '.bashrc'), '# rc');
  // A hidden file in the home (so that it is a covered directory), a hidden directory in a
  // directory that can become a symlink, hidden files in the workspace.
  writeFileSync(join(home, '.git-credentials'), 'GIT');
  mkdirSync(join(home, '.config', 'gh'));
  writeFileSync(join(work, '.env'), 'ENV');
  writeFileSync(join(work, 'sub', 'key'), 'KEY');
  const settings = {
    ...DEFAULT_POLICY.sandbox,
    filesystem: { hidden: [...DEFAULT_POLICY.sandbox.filesystem.hidden, '~/secrets', join(work, '.env'), join(work, 'sub', 'key')], writable: [], readOnly: [join(work, 'ro')] },
  };
  const input: FilesystemInput = {
    settings, home: join(root, 'state'), cwd: join(work, 'sub'), roots: [], workspace: work,
    env: { HOME: home, PATH: '/usr/bin:/bin' }, userHome: home, stateIdentity: {}, protectedFiles: [join(work, 'policy.yaml')],
  };
  return { root, home, work, input };
}

const quiet = (make: () => void): void => {
  try {
    make();
  } catch {
    // a change that does not apply to the host as it is now (already there, already gone)
  }
};

/** Host changes, each made the way a user or a program would. */
const CHANGES: Record<string, (s: Scene) => void> = {
  awsCredentials: (s) => { mkdirSync(join(s.home, '.aws'), { recursive: true }); writeFileSync(join(s.home, '.aws', 'credentials'), 'AWS'); },
  awsGone: (s) => rmSync(join(s.home, '.aws'), { recursive: true, force: true }),
  sshDir: (s) => mkdirSync(join(s.home, '.ssh')),
  sshKey: (s) => writeFileSync(join(s.home, '.ssh', 'id_ed25519'), 'SSH'),
  sshToSymlink: (s) => { rmSync(join(s.home, '.ssh'), { recursive: true, force: true }); symlinkSync(join(s.root, 'elsewhere'), join(s.home, '.ssh')); },
  sshToWorkspace: (s) => { rmSync(join(s.home, '.ssh'), { recursive: true, force: true }); symlinkSync(s.work, join(s.home, '.ssh')); },
  sshBack: (s) => { rmSync(join(s.home, '.ssh'), { recursive: true, force: true }); mkdirSync(join(s.home, '.ssh')); },
  gnupgAgain: (s) => { rmSync(join(s.home, '.gnupg'), { recursive: true, force: true }); mkdirSync(join(s.home, '.gnupg')); },
  gnupgGone: (s) => rmSync(join(s.home, '.gnupg'), { recursive: true, force: true }),
  npmrc: (s) => writeFileSync(join(s.home, '.npmrc'), 'NPM'),
  npmrcGone: (s) => rmSync(join(s.home, '.npmrc'), { force: true }),
  npmrcSymlink: (s) => { rmSync(join(s.home, '.npmrc'), { force: true }); symlinkSync(join(s.root, 'elsewhere', 'id_ed25519'), join(s.home, '.npmrc')); },
  coveredEntry: (s) => writeFileSync(join(s.home, `entry-${Math.floor(Math.random() * 3)}`), 'x'),
  coveredEntryGone: (s) => { for (let i = 0; i < 3; i++) rmSync(join(s.home, `entry-${i}`), { force: true }); },
  coveredSymlink: (s) => symlinkSync('/usr', join(s.home, 'link')),
  coveredSymlinkOther: (s) => { rmSync(join(s.home, 'link'), { force: true }); symlinkSync('/etc', join(s.home, 'link')); },
  configSymlink: (s) => { renameSync(join(s.home, '.config'), join(s.root, 'config-away')); symlinkSync(join(s.root, 'config-away'), join(s.home, '.config')); },
  configBack: (s) => { rmSync(join(s.home, '.config'), { force: true }); renameSync(join(s.root, 'config-away'), join(s.home, '.config')); },
  ghConfig: (s) => mkdirSync(join(s.home, '.config', 'gh'), { recursive: true }),
  dockerFile: (s) => writeFileSync(join(s.home, '.docker'), 'not a directory'),
  dockerDir: (s) => { rmSync(join(s.home, '.docker'), { force: true, recursive: true }); mkdirSync(join(s.home, '.docker')); writeFileSync(join(s.home, '.docker', 'config.json'), '{}'); },
  secrets: (s) => mkdirSync(join(s.home, 'secrets')),
  envFile: (s) => writeFileSync(join(s.work, '.env'), 'ENV'),
  envGone: (s) => rmSync(join(s.work, '.env'), { force: true }),
  subKey: (s) => writeFileSync(join(s.work, 'sub', 'key'), 'KEY'),
  subRenamed: (s) => renameSync(join(s.work, 'sub'), join(s.work, 'sub-old')),
  subBack: (s) => { rmSync(join(s.work, 'sub'), { recursive: true, force: true }); renameSync(join(s.work, 'sub-old'), join(s.work, 'sub')); },
  subNew: (s) => mkdirSync(join(s.work, 'sub')),
  readOnlyDir: (s) => mkdirSync(join(s.work, 'ro')),
  policyFile: (s) => writeFileSync(join(s.work, 'policy.yaml'), 'version: 1\n'),
  workspaceRenamed: (s) => renameSync(s.work, `${s.work}-old`),
  workspaceBack: (s) => { rmSync(s.work, { recursive: true, force: true }); renameSync(`${s.work}-old`, s.work); },
  workspaceSymlink: (s) => { renameSync(s.work, `${s.work}-real`); symlinkSync(`${s.work}-real`, s.work); },
  workspaceSymlinkBack: (s) => { rmSync(s.work, { force: true }); renameSync(`${s.work}-real`, s.work); },
  ancestorRenamed: (s) => { renameSync(s.home, `${s.home}-moved`); symlinkSync(`${s.home}-moved`, s.home); },
  ancestorBack: (s) => { rmSync(s.home, { force: true }); renameSync(`${s.home}-moved`, s.home); },
  homeMode: (s) => chmodSync(s.home, 0o750),
  homeModeBack: (s) => chmodSync(s.home, 0o700),
  settle: () => sleep(70),
};

/** A view or the error it ends in, as one comparable string. */
function outcome(make: () => unknown): string {
  try {
    return JSON.stringify(make());
  } catch (error) {
    return `error ${(error as { code?: string }).code ?? ''}: ${(error as Error).message}`;
  }
}

describe('a kept file-system view equals a fresh one whatever the host changed between runs', () => {
  let base: { dir: string; cleanup: () => void };
  beforeAll(() => {
    base = makeHome();
  });
  afterAll(() => base.cleanup());

  test('random sequences of host changes (fast-check)', () => {
    const before = getViewCacheCounts();
    const names = Object.keys(CHANGES);
    fc.assert(fc.property(fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 14 }), (changes) => {
      clearViewCache();
      const scene = makeScene(join(base.dir, 'scene'));
      sleep(70);
      // Kept (nothing changed within the tick), then checked after each change.
      expect(outcome(() => getFilesystemView(scene.input))).toBe(outcome(() => getFreshFilesystemView(scene.input)));
      for (const change of ['settle', ...changes]) {
        quiet(() => CHANGES[change]!(scene));
        const kept = outcome(() => getFilesystemView(scene.input));
        const fresh = outcome(() => getFreshFilesystemView(scene.input));
        expect(kept).toBe(fresh);
      }
    }), { numRuns: Number(process.env.EXECGATE_VIEW_RUNS ?? 60) });
    const after = getViewCacheCounts();
    // The test saw views reused and kept views dropped because the host changed.
    expect(after.reused - before.reused).toBeGreaterThan(20);
    expect(after.dropped - before.dropped).toBeGreaterThan(20);
  });

  test('each single change, made right after a view was kept, is seen by the next view', () => {
    const same: string[] = [];
    const notKept: string[] = [];
    for (const change of Object.keys(CHANGES).filter((name) => name !== 'settle')) {
      clearViewCache();
      const scene = makeScene(join(base.dir, 'single'));
      // Set up what the change needs (a symlink to turn back, a directory to remove).
      for (const setup of ['sshDir', 'npmrc', 'configSymlink', 'subRenamed', 'workspaceRenamed', 'workspaceSymlink', 'ancestorRenamed', 'coveredSymlink', 'coveredEntry']) {
        if (change.endsWith('Back') || change.endsWith('Gone') || change === 'sshKey' || change === 'coveredSymlinkOther' || change === 'subNew') {
          if ((change === 'configBack' && setup === 'configSymlink') || (change === 'subBack' && setup === 'subRenamed') || (change === 'subNew' && setup === 'subRenamed')
            || (change === 'workspaceBack' && setup === 'workspaceRenamed') || (change === 'workspaceSymlinkBack' && setup === 'workspaceSymlink')
            || (change === 'ancestorBack' && setup === 'ancestorRenamed') || (change === 'coveredSymlinkOther' && setup === 'coveredSymlink')
            || (['sshKey', 'sshBack'].includes(change) && setup === 'sshDir') || (change === 'npmrcGone' && setup === 'npmrc') || (change === 'coveredEntryGone' && setup === 'coveredEntry')) {
            CHANGES[setup]!(scene);
          }
        }
      }
      if (change === 'awsGone') CHANGES.awsCredentials!(scene);
      // Kept, so that the change below meets a kept view (other programs may be changing a
      // directory every view looks at, the account's home: a few tries).
      let first = '';
      let reused = false;
      for (let attempt = 0; attempt < 5 && !reused; attempt++) {
        sleep(70);
        first = outcome(() => getFilesystemView(scene.input));
        const reusedBefore = getViewCacheCounts().reused;
        expect(outcome(() => getFilesystemView(scene.input))).toBe(first);
        reused = getViewCacheCounts().reused === reusedBefore + 1;
      }
      if (!reused) notKept.push(`${change} ${JSON.stringify(getViewCacheCounts())}`);
      CHANGES[change]!(scene);
      const fresh = outcome(() => getFreshFilesystemView(scene.input));
      if (fresh === first) same.push(change);
      expect(outcome(() => getFilesystemView(scene.input))).toBe(fresh);
    }
    // Every change but these matters to the view: a file inside a hidden directory, a hidden
    // directory made again, a hidden path made that the scene has already, an empty working
    // directory made where a missing one was named. (They may differ too: the account's real
    // home, in every view, is a directory other programs change.)
    const maySame = ['sshKey', 'sshBack', 'gnupgAgain', 'ghConfig', 'envFile', 'subKey', 'subNew'];
    expect(same.filter((change) => !maySame.includes(change))).toEqual([]);
    expect(notKept).toEqual([]);
  });
});
