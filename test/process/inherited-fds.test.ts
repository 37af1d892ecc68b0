/*
 * The descriptor-closing bash runs only when the process spawning a run holds a descriptor a
 * child would inherit. A Node process (the built library) started by a bash that first closes
 * everything above 2, then opens what the case needs without close-on-exec, reports what it
 * finds and what a gateway run sees.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLOSE_FDS } from '../../src/plan/prepare';
import { makeTempDir, UNSANDBOXED_POLICY } from '../helpers/tmp';

const DIST = join(__dirname, '..', '..', 'dist');
const maybe = existsSync(join(DIST, 'process', 'inherited-fds.js')) ? describe : describe.skip;

const SCRIPT = `
const { hasInheritedDescriptors } = require(${JSON.stringify(join(DIST, 'process', 'inherited-fds.js'))});
const { preparePlan } = require(${JSON.stringify(join(DIST, 'plan', 'prepare.js'))});
const { createGateway } = require(${JSON.stringify(DIST)});
const found = hasInheritedDescriptors();
const policy = JSON.parse(process.argv[2]);
const env = { PATH: '/usr/bin:/bin', EXECGATE_KEYRING: 'off' };
const audit = process.argv[3] === 'audit';
const gateway = createGateway({ home: process.argv[1], policy, env, ...(audit ? {} : { audit: false }) });
(async () => {
  const plan = await preparePlan({ refs: gateway.refs, policy, env, cwd: process.cwd(), shell: '/bin/bash', supportedModes: new Set(['sync']) }, { command: 'true' });
  const result = await gateway.exec({ command: 'ls /proc/self/fd | tr "\\\\n" " "; for f in /proc/$$/fd/*; do echo -n "\${f##*/} " >&2; done' });
  process.stdout.write(JSON.stringify({ found, fds: result.stdout.trim(), shellFds: result.stderr.trim(), closer: plan.args.some((a) => a.includes('__execgate_fd')) }));
  await gateway.close();
})();
`;

function runWith(open: string, audit = false): { found: boolean; fds: string; shellFds: string; closer: boolean } {
  const tmp = makeTempDir();
  try {
    const out = execFileSync('/bin/bash', ['-c', `${CLOSE_FDS}; ${open} exec "$@"`, 'test', process.execPath, '-e', SCRIPT, join(tmp.dir, 'home'), JSON.stringify(UNSANDBOXED_POLICY), audit ? 'audit' : ''], { encoding: 'utf8', cwd: tmp.dir });
    return JSON.parse(out) as { found: boolean; fds: string; shellFds: string; closer: boolean };
  } finally {
    tmp.cleanup();
  }
}

maybe('descriptors inherited by the gateway process', () => {
  test('none: nothing to close, so the shell is started without the closing bash', () => {
    const run = runWith('');
    expect(run.found).toBe(false);
    expect(run.closer).toBe(false);
    expect(run.fds).toBe('0 1 2 3');
  });

  test('one without close-on-exec: found, and closed before the command runs', () => {
    const run = runWith('exec 200</dev/null;');
    expect(run.found).toBe(true);
    expect(run.closer).toBe(true);
    expect(run.fds).toBe('0 1 2 3');
    // (the shell's own listing: its glob's directory is the 3)
    expect(run.shellFds).toBe('0 1 2 3');
  });

  test('a parked bash (the audit log on) closes them itself, before the command runs', () => {
    // Several, high and low, one a directory: none reaches the command or its shell.
    const run = runWith('exec 200</dev/null 7<>/dev/null 9</;', true);
    expect(run.found).toBe(true);
    expect(run.fds).toBe('0 1 2 3');
    // (the shell's own listing: its glob's directory is the 3)
    expect(run.shellFds).toBe('0 1 2 3');
  });
});
