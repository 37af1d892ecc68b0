/*
 * The code no run may write (sandbox/own-code.ts), as every run's view reads it: each directory
 * once (every dependency found in one node_modules names that same directory, and the view
 * resolves each entry for every run), and nothing of it lost to the de-duplication.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { getProtectedCode } from '../../src/sandbox/own-code';

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
