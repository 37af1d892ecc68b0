/*
 * The code no run may write (sandbox/own-code.ts), as every run's view reads it: each directory
 * once (every dependency found in one node_modules names that same directory, and the view
 * resolves each entry for every run), and nothing of it lost to the de-duplication.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import fc from 'fast-check';
import { getDependencyDirs, getDependencyDirsCached, getProtectedCode, PROTECTED_CODE_CACHE_FILE } from '../../src/sandbox/own-code';
import { makeTempDir } from '../helpers/tmp';

const ROOT = resolve(__dirname, '..', '..');

test('the protected code lists each directory once, execgate\'s code, its dependencies and the system\'s among them', () => {
  const listed = getProtectedCode();
  expect(new Set(listed).size).toBe(listed.length);
  // Run from the checkout: the compiled code and the node_modules holding the dependencies.
  expect(listed).toContain(join(ROOT, 'dist'));
  expect(listed).toContain(join(ROOT, 'node_modules'));
  for (const system of ['/usr', '/etc']) expect(listed).toContain(system);
  // Every runtime dependency lies inside some listed directory.
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const names = Object.keys(manifest.dependencies ?? {});
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) {
    const dir = join(ROOT, 'node_modules', name);
    if (!existsSync(dir)) continue;
    expect(listed.some((entry) => dir === entry || dir.startsWith(`${entry}/`))).toBe(true);
  }
});

test('the dependency walk finds what Node\'s lookup would: nested, scoped, linked, hoisted above the package, optional', () => {
  const tmp = makeTempDir('execgate-own-code-');
  try {
    const dir = realpathSync(tmp.dir);
    const pkg = (at: string, deps: Record<string, string> = {}, optional: Record<string, string> = {}): void => {
      mkdirSync(at, { recursive: true });
      writeFileSync(join(at, 'package.json'), JSON.stringify({ name: at, dependencies: deps, optionalDependencies: optional }));
    };
    const root = join(dir, 'work', 'app');
    pkg(root, { a: '1', '@s/b': '1', c: '1', hoisted: '1' }, { missing: '1' });
    pkg(join(root, 'node_modules', 'a'), { e: '1', '@s/b': '1' });
    pkg(join(root, 'node_modules', 'a', 'node_modules', 'e'));
    pkg(join(root, 'node_modules', '@s', 'b'), { a: '1' });
    // A link to a package elsewhere: its real directory, and its own dependencies from there.
    pkg(join(dir, 'store', 'node_modules', 'c'), { f: '1' });
    pkg(join(dir, 'store', 'node_modules', 'f'));
    symlinkSync(join(dir, 'store', 'node_modules', 'c'), join(root, 'node_modules', 'c'));
    // Found in a node_modules above the package, as Node finds it.
    pkg(join(dir, 'node_modules', 'hoisted'));
    // A directory that is not a dependency is not listed.
    pkg(join(root, 'node_modules', 'unused'));
    expect(getDependencyDirs(root).sort()).toEqual([
      join(dir, 'node_modules', 'hoisted'),
      join(dir, 'store', 'node_modules', 'c'),
      join(dir, 'store', 'node_modules', 'f'),
      join(root, 'node_modules', '@s', 'b'),
      join(root, 'node_modules', 'a'),
      join(root, 'node_modules', 'a', 'node_modules', 'e'),
    ].sort());
  } finally {
    tmp.cleanup();
  }
});

/*
 * The walk kept in the state directory (getDependencyDirsCached): taken only while everything it
 * read is unchanged. The fixtures are made just before the walk, so the racy check (a walk that
 * read something changed within 2 s of its start is not kept) is given a clock 10 s ahead.
 */
describe('the dependency walk kept between processes', () => {
  const ahead = (): number => Date.now() + 10_000;
  /*
   * With the racy check given a clock ahead, a change made in the same tick of the kernel's
   * coarse clock as what the walk stamped could keep every time it touched (which the check
   * exists for): each change here waits out a tick first (20 ms; a tick is at most 10 ms).
   */
  const tick = (): void => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20); };
  let tmp: ReturnType<typeof makeTempDir>;
  let dir: string;
  let root: string;
  let state: string;
  const pkg = (at: string, deps: Record<string, string> = {}, optional: Record<string, string> = {}): void => {
    mkdirSync(at, { recursive: true });
    writeFileSync(join(at, 'package.json'), JSON.stringify({ name: at, dependencies: deps, optionalDependencies: optional }));
  };
  beforeEach(() => {
    tmp = makeTempDir('execgate-own-code-');
    dir = realpathSync(tmp.dir);
    root = join(dir, 'work', 'app');
    state = join(dir, 'state');
    mkdirSync(state);
    pkg(root, { a: '1', '@s/b': '1', c: '1' }, { missing: '1' });
    pkg(join(root, 'node_modules', 'a'), { e: '1' });
    pkg(join(root, 'node_modules', 'a', 'node_modules', 'e'));
    pkg(join(root, 'node_modules', '@s', 'b'));
    pkg(join(dir, 'store', 'node_modules', 'c'), { f: '1' });
    pkg(join(dir, 'store', 'node_modules', 'f'));
    pkg(join(dir, 'store2', 'node_modules', 'c'));
    symlinkSync(join(dir, 'store', 'node_modules', 'c'), join(root, 'node_modules', 'c'));
  });
  afterEach(() => tmp.cleanup());
  const cacheFile = (): string => join(state, PROTECTED_CODE_CACHE_FILE);

  test('a second walk with nothing changed is taken from the state directory, as the first one found it', () => {
    const first = getDependencyDirsCached(root, state, ahead);
    expect(first.sort()).toEqual(getDependencyDirs(root).sort());
    expect(lstatSync(cacheFile()).mode & 0o777).toBe(0o600);
    // Proof that the kept list is what is returned: a list changed in the file comes back.
    const kept = JSON.parse(readFileSync(cacheFile(), 'utf8')) as { found: string[] };
    writeFileSync(cacheFile(), JSON.stringify({ ...kept, found: [...kept.found, '/kept-marker'] }), { mode: 0o600 });
    expect(getDependencyDirsCached(root, state, ahead)).toContain('/kept-marker');
  });

  const changes: Array<[string, () => void]> = [
    ['a dependency added (a manifest rewritten, a package installed)', () => {
      pkg(root, { a: '1', '@s/b': '1', c: '1', g: '1' }, { missing: '1' });
      pkg(join(root, 'node_modules', 'g'));
    }],
    ['a package removed', () => rmSync(join(root, 'node_modules', 'a', 'node_modules', 'e'), { recursive: true })],
    ['a link retargeted', () => {
      rmSync(join(root, 'node_modules', 'c'));
      symlinkSync(join(dir, 'store2', 'node_modules', 'c'), join(root, 'node_modules', 'c'));
    }],
    ['a missing optional dependency installed above the package', () => pkg(join(dir, 'node_modules', 'missing'))],
    ['a missing optional dependency installed in a node_modules made for it', () => pkg(join(dir, 'work', 'node_modules', 'missing'))],
    ['a scope directory renamed', () => renameSync(join(root, 'node_modules', '@s'), join(root, 'node_modules', '@t'))],
    ['a package replaced by a link elsewhere', () => {
      rmSync(join(root, 'node_modules', 'a'), { recursive: true });
      pkg(join(dir, 'store', 'node_modules', 'a'));
      symlinkSync(join(dir, 'store', 'node_modules', 'a'), join(root, 'node_modules', 'a'));
    }],
    ['a linked package\'s dependency moved into it', () => {
      renameSync(join(dir, 'store', 'node_modules', 'f'), join(dir, 'store', 'node_modules', 'c', 'node_modules-f'));
      mkdirSync(join(dir, 'store', 'node_modules', 'c', 'node_modules'));
      renameSync(join(dir, 'store', 'node_modules', 'c', 'node_modules-f'), join(dir, 'store', 'node_modules', 'c', 'node_modules', 'f'));
    }],
  ];
  test.each(changes)('the kept walk is not taken once %s: the result is a fresh walk\'s', (_, change) => {
    const before = getDependencyDirsCached(root, state, ahead);
    expect(existsSync(cacheFile())).toBe(true);
    tick();
    change();
    const fresh = getDependencyDirs(root).sort();
    expect(fresh).not.toEqual([...before].sort());
    expect(getDependencyDirsCached(root, state, ahead).sort()).toEqual(fresh);
    // And what is kept now is the new walk.
    expect(getDependencyDirsCached(root, state, ahead).sort()).toEqual(fresh);
  });

  test('a walk that read something changed just before it is not kept (file times are coarse)', () => {
    expect(getDependencyDirsCached(root, state).sort()).toEqual(getDependencyDirs(root).sort());
    expect(existsSync(cacheFile())).toBe(false);
  });

  test('a kept walk of another root, in another shape, or behind a link is not taken', () => {
    getDependencyDirsCached(root, state, ahead);
    const kept = JSON.parse(readFileSync(cacheFile(), 'utf8')) as Record<string, unknown>;
    const expected = getDependencyDirs(root).sort();
    for (const forged of [{ ...kept, root: '/elsewhere', found: ['/x'] }, { ...kept, version: 99, found: ['/x'] }, { ...kept, dirs: 'no', found: ['/x'] }, { ...kept, found: [1] }]) {
      writeFileSync(cacheFile(), JSON.stringify(forged), { mode: 0o600 });
      expect(getDependencyDirsCached(root, state, ahead).sort()).toEqual(expected);
    }
    const elsewhere = join(dir, 'elsewhere.json');
    writeFileSync(elsewhere, JSON.stringify({ ...kept, found: ['/x'] }));
    rmSync(cacheFile());
    symlinkSync(elsewhere, cacheFile());
    expect(getDependencyDirsCached(root, state, ahead).sort()).toEqual(expected);
  });

  test('property: after any sequence of layout changes, the kept walk gives what a fresh walk gives', () => {
    const names = ['a', 'c', 'e', 'f', 'g', '@s/b', '@s/h'];
    const places = (): string[] => [root, join(root, 'node_modules', 'a'), join(dir, 'store', 'node_modules', 'c'), dir, join(dir, 'work')];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('install'), at: fc.nat(4), name: fc.constantFrom(...names), deps: fc.subarray(names) }),
      fc.record({ kind: fc.constant('remove'), at: fc.nat(4), name: fc.constantFrom(...names) }),
      fc.record({ kind: fc.constant('link'), at: fc.nat(4), name: fc.constantFrom(...names), store: fc.constantFrom('store', 'store2') }),
      fc.record({ kind: fc.constant('manifest'), deps: fc.subarray(names) }),
    );
    fc.assert(fc.property(fc.array(op, { minLength: 1, maxLength: 6 }), (ops) => {
      rmSync(join(state, PROTECTED_CODE_CACHE_FILE), { force: true });
      getDependencyDirsCached(root, state, ahead);
      for (const step of ops) {
        tick();
        if (step.kind === 'manifest') pkg(root, Object.fromEntries(step.deps.map((name) => [name, '1'])));
        else {
          const target = join(places()[step.at], 'node_modules', step.name);
          rmSync(target, { recursive: true, force: true });
          if (step.kind === 'install') pkg(target, Object.fromEntries(step.deps.map((name) => [name, '1'])));
          if (step.kind === 'link') {
            const stored = join(dir, step.store, 'node_modules', step.name);
            if (!existsSync(stored)) pkg(stored);
            mkdirSync(dirname(target), { recursive: true });
            symlinkSync(stored, target);
          }
        }
        expect(getDependencyDirsCached(root, state, ahead).sort()).toEqual(getDependencyDirs(root).sort());
      }
    }), { numRuns: 60 });
  });
});
