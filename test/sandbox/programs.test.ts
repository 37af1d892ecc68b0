/*
 * The programs execgate starts are real files (src/programs/): shellcheck reads the shell ones,
 * node parses the others, and the seccomp filters are exactly what scripts/generate-seccomp.py makes from its
 * list with libseccomp (so the list in that script is the one place the filter is written).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';

const PROGRAMS = join(__dirname, '..', '..', 'src', 'programs');
const GENERATOR = join(__dirname, '..', '..', 'scripts', 'generate-seccomp.py');

const shellcheck = ['/usr/bin/shellcheck', '/bin/shellcheck'].find((path) => existsSync(path));
const python = '/usr/bin/python3';
const hasSeccompBindings = existsSync(python) && spawnSync(python, ['-c', 'import seccomp'], { stdio: 'ignore' }).status === 0;

describe('the programs of a sandboxed run', () => {
  const scripts = readdirSync(PROGRAMS).filter((name) => name.endsWith('.sh') || name.endsWith('.bash'));

  test('there are the gates, the warm stub, the terminal launcher, the watchdog; the node programs parse', () => {
    expect(scripts.sort()).toEqual(['gate.sh', 'pty-gate.bash', 'pty-launch.bash', 'warm-stub.bash', 'watchdog.bash']);
    const scriptsJs = readdirSync(PROGRAMS).filter((name) => name.endsWith('.js')).sort();
    expect(scriptsJs).toEqual(['egress-run-bridge.js', 'egress-shared-bridge.js', 'spawn-helper.js']);
    for (const name of scriptsJs) {
      const result = spawnSync(process.execPath, ['--check', join(PROGRAMS, name)], { encoding: 'utf8' });
      expect({ name, status: result.status, stderr: result.stderr }).toEqual({ name, status: 0, stderr: '' });
    }
  });

  (shellcheck ? test : test.skip)('shellcheck finds nothing in any of them', () => {
    for (const name of scripts) {
      const result = spawnSync(shellcheck!, ['--shell', name.endsWith('.sh') ? 'sh' : 'bash', '--severity', 'style', join(PROGRAMS, name)], { encoding: 'utf8' });
      expect({ name, output: result.stdout, status: result.status }).toEqual({ name, output: '', status: 0 });
    }
  });

  (hasSeccompBindings ? test : test.skip)('the committed seccomp filters are what the generator makes (libseccomp)', () => {
    const tmp = makeTempDir('execgate-seccomp-');
    try {
      const result = spawnSync(python, [GENERATOR, tmp.dir], { encoding: 'utf8' });
      expect(result.status).toBe(0);
      for (const name of ['x86_64.bpf', 'aarch64.bpf']) {
        const made = readFileSync(join(tmp.dir, name));
        expect(made.length % 8).toBe(0);
        expect(made.equals(readFileSync(join(PROGRAMS, 'seccomp', name)))).toBe(true);
      }
    } finally {
      tmp.cleanup();
    }
  });
});
