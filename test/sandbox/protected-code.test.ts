/*
 * The code no run may write (sandbox/own-code.ts), as every run's view reads it: each directory
 * once (every dependency found in one node_modules names that same directory, and the view
 * resolves each entry for every run), and nothing of it lost to the de-duplication.
 */
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { getDependencyDirs, getProtectedCode } from '../../src/sandbox/own-code';
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
