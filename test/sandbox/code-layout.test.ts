/*
 * execgate's dependencies are read-only inside a run whatever the package manager's layout:
 * here pnpm's, where the package sits in node_modules/.pnpm/execgate@V/node_modules and a
 * dependency's real files in a sibling .pnpm/<dep>@V directory. A run in the project could
 * otherwise rewrite code the gateway loads later (node-pty on the first PTY run).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { describeSandboxed } from './helpers';

jest.setTimeout(120_000);

const ROOT = resolve(__dirname, '..', '..');

describeSandboxed('a pnpm layout', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(() => { tmp = makeTempDir('execgate-pnpm-'); });
  afterAll(() => tmp.cleanup());

  test('a dependency in a sibling .pnpm directory is read-only in a run whose root is the project', () => {
    const project = join(tmp.dir, 'proj');
    const store = join(project, 'node_modules', '.pnpm');
    const modules = join(store, 'execgate@1.0.0', 'node_modules');
    mkdirSync(join(modules, 'execgate'), { recursive: true });
    for (const entry of ['dist', 'package.json', 'policies']) cpSync(join(ROOT, entry), join(modules, 'execgate', entry), { recursive: true });
    for (const name of readdirSync(join(ROOT, 'node_modules'))) {
      if (name !== '@lydell' && name !== '.bin') symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
    }
    // node-pty's real files inside the project's store, linked from execgate's node_modules.
    const pty = join(store, '@lydell+node-pty@1.0.0', 'node_modules', '@lydell');
    mkdirSync(pty, { recursive: true });
    for (const name of readdirSync(join(ROOT, 'node_modules', '@lydell'))) cpSync(join(ROOT, 'node_modules', '@lydell', name), join(pty, name), { recursive: true });
    mkdirSync(join(modules, '@lydell'));
    symlinkSync(join(pty, 'node-pty'), join(modules, '@lydell', 'node-pty'));
    const target = join(pty, 'node-pty', 'package.json');
    const script = `
      const { createGateway } = require(${JSON.stringify(join(modules, 'execgate', 'dist', 'gateway.js'))});
      const { DEFAULT_POLICY } = require(${JSON.stringify(join(modules, 'execgate', 'dist', 'policy', 'effective.js'))});
      const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required', network: 'none' } };
      const g = createGateway({ policy, home: ${JSON.stringify(join(tmp.dir, 'state'))}, cwd: ${JSON.stringify(project)}, warmSandboxes: 0 });
      g.exec({ command: ${JSON.stringify(`[ -w ${target} ] && echo "writable" || echo "read-only"; touch ${join(project, 'mine')} && echo own-files-writable`)} })
        .then((r) => { process.stdout.write(r.output); return g.close(); })
        .catch((e) => { process.stdout.write('ERR ' + e.code + ' ' + e.message); process.exitCode = 1; });`;
    const output = execFileSync(process.execPath, ['-e', script], { cwd: project, encoding: 'utf8' });
    expect(output).toContain('read-only');
    expect(output).not.toMatch(/^writable/m);
    // The project itself stays the run's to write.
    expect(output).toContain('own-files-writable');
  });
});
