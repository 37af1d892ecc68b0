/*
 * The boundary around a run, item by item: the workspace is fixed when the gateway starts (a
 * request's directory elsewhere is read-only, one in the host's /tmp refused); before the program starts, the sandbox's mounts
 * are compared with the plan and a difference refuses the run (audited, nothing run); the kernel
 * surface is small (no nested user namespace, the seccomp filter's list refused); the command
 * learns nothing of the gateway (bubblewrap's argv is not on /proc/1/cmdline, no state-directory
 * path in its environment, a nested execgate finds an empty state); a stop gives the run its
 * grace period; bubblewrap's own words become coded errors. Sync, PTY and background alike.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { preparePlan } from '../../src/plan/prepare';
import { startRun } from '../../src/run/lifecycle';
import { loadPolicyFile } from '../../src/policy/load';
import { RefStore } from '../../src/refs/store';
import { setSandboxSpecHookForTests } from '../../src/sandbox/plan';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { createGateway } from '../../src/gateway';
import { describeSandboxed, makeGateway, MODES, runIn, sandboxPolicy } from './helpers';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const PROBE = join(__dirname, 'fixtures', 'probe.py');

let tmp: ReturnType<typeof makeTempDir>;
let work: string;
let state: string;
// The user's home directory, beside the workspace (a workspace may not hold it).
let userHome: string;
beforeEach(() => {
  tmp = makeTempDir('execgate-boundary-');
  work = join(tmp.dir, 'work');
  state = join(work, '.execgate');
  userHome = join(tmp.dir, 'home');
  mkdirSync(work);
  mkdirSync(userHome);
});
afterEach(() => {
  setSandboxSpecHookForTests(undefined);
  tmp.cleanup();
});

function gateway(extra: Parameters<typeof makeGateway>[0] = {}): ReturnType<typeof makeGateway> {
  return makeGateway({ home: state, cwd: work, env: baseEnv({ HOME: userHome }), sandbox: { network: 'none' }, ...extra });
}

function auditRecords(): Array<Record<string, unknown>> {
  return readFileSync(join(state, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

describeSandboxed('the workspace is fixed when the gateway starts', () => {
  test.each(MODES)('%s: the workspace is writable; a directory outside it is read-only, one in the host\'s /tmp is refused', async (mode) => {
    const outside = join(tmp.dir, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'present'), 'here\n');
    // A listening socket there, as a terminal multiplexer keeps one: binding the directory in,
    // even read-only, would let the run connect to it.
    const listener = createServer((socket) => socket.end('host-side\n'));
    await new Promise<void>((done) => listener.listen(join(outside, 'sock'), done));
    const g = gateway();
    try {
      const inside = await runIn(g, mode, 'touch made-inside && echo made');
      expect(inside.output).toContain('made');
      expect(existsSync(join(work, 'made-inside'))).toBe(true);
      // The test's own directory lies under the host's /tmp, outside the workspace: refused.
      const marker = join(outside, 'ran');
      await expect(runIn(g, mode, `touch ${marker}; cat present`, { cwd: outside })).rejects.toMatchObject({
        code: 'EXECGATE_ERR_SANDBOX_PATH',
        message: expect.stringContaining('temp directory'),
      });
      expect(existsSync(marker)).toBe(false);
      // And nothing under the host's /tmp is reachable from the workspace by its name either.
      const probe = await runIn(g, mode, `cat ${join(outside, 'present')} 2>&1; ls ${tmp.dir} 2>&1; echo "rc=$?"`);
      expect(probe.output).not.toContain('here');
      expect(probe.output).toMatch(/No such file or directory/);
      const system = await runIn(g, mode, 'pwd; touch x 2>&1; echo "rc=$?"', { cwd: '/usr' });
      expect(system.output).toContain('/usr');
      expect(system.output).toMatch(/Read-only file system|Permission denied/);
    } finally {
      await g.close();
      listener.close();
    }
  });

  test('the result and the audit record say whether the working directory was writable', async () => {
    const g = gateway();
    try {
      await g.exec({ command: 'true' });
      await g.exec({ command: 'true', cwd: '/usr' });
      const started = auditRecords().filter((r) => r.event === 'exec.started').map((r) => (r.sandbox as { cwd: unknown }).cwd);
      expect(started).toEqual([{ path: work, writable: true }, { path: '/usr', writable: false }]);
    } finally {
      await g.close();
    }
  });

  test('a policy that names /tmp as a writable root is refused when it loads, with the position', () => {
    const file = join(tmp.dir, 'policy.yaml');
    writeFileSync(file, 'version: 1\ncwd:\n  roots: [/builds, /tmp]\nsandbox:\n  filesystem:\n    writable: [/tmp/]\n');
    expect(() => loadPolicyFile(file)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_POLICY_INVALID' }));
    try {
      loadPolicyFile(file);
    } catch (error) {
      const problems = (error as { details: { problems: string[] } }).details.problems;
      expect(problems).toEqual([
        expect.stringMatching(/policy\.yaml:3:20: `cwd\.roots\[1\]`: `\/tmp` cannot be writable: every sandboxed run gets a private, empty \/tmp/),
        expect.stringMatching(/policy\.yaml:6:16: `sandbox\.filesystem\.writable\[0\]`: `\/tmp\/` cannot be writable/),
      ]);
    }
  });

  test('every shipped policy loads', () => {
    for (const name of ['default', 'strict', 'ci']) {
      expect(() => loadPolicyFile(join(__dirname, '..', '..', 'policies', `${name}.yaml`))).not.toThrow();
    }
  });
});

describeSandboxed('the mount check before the program starts', () => {
  test.each([
    ['sync, cold', 'sync', 0],
    ['sync, warm', 'sync', 1],
    ['pty', 'pty', 0],
    ['background', 'background', 0],
  ] as const)('%s: a mount the plan does not name refuses the run: coded, audited, nothing run', async (_name, mode, warmSandboxes) => {
    const g = gateway({ warmSandboxes });
    mkdirSync(state, { recursive: true });
    writeFileSync(join(state, 'vault.key'), 'not-for-runs\n');
    try {
      // A sandbox that differs from its plan: the state directory also shows up under /tmp.
      setSandboxSpecHookForTests((spec) => ({ ...spec, mounts: [...spec.mounts, { kind: 'bind', source: state, dest: '/tmp/leak', readOnly: true }] }));
      const marker = join(work, 'ran');
      await expect(g.exec({ command: `touch ${marker}; cat /tmp/leak/vault.key`, mode })).rejects.toMatchObject({
        code: 'EXECGATE_ERR_SANDBOX_MISMATCH',
        details: { mismatch: expect.stringContaining('/tmp/leak') },
      });
      expect(existsSync(marker)).toBe(false);
      const failed = auditRecords().filter((r) => r.event === 'exec.failed');
      expect(failed).toEqual([expect.objectContaining({ code: 'EXECGATE_ERR_SANDBOX_MISMATCH', reason: expect.stringContaining('did not match its plan') })]);
      // The same gateway runs the next command once nothing changes the plan.
      setSandboxSpecHookForTests(undefined);
      expect((await g.exec({ command: 'echo fine' })).stdout).toBe('fine\n');
    } finally {
      await g.close();
    }
  });

  test('a hidden path in the workspace that a run replaced with a symlink to /proc/self, /, /dev/null or the workspace does not stop later runs', async () => {
    // Paths the policy hides inside the workspace (the built-in credential paths, in the home
    // directory, are never where a run writes).
    const names = ['.aws', '.ssh', '.netrc', '.kube', '.gnupg'];
    const g = gateway({ sandbox: { network: 'none', filesystem: { hidden: names.map((name) => join(work, name)), writable: [], readOnly: [] } } });
    try {
      const plant = 'ln -s /proc/self .aws; ln -s / .ssh; ln -s /dev/null .netrc; ln -s "$PWD" .kube; ln -s .. .gnupg; echo planted';
      expect((await g.exec({ command: plant })).stdout).toBe('planted\n');
      for (const mode of MODES) {
        const next = await runIn(g, mode, 'echo next-run');
        expect(next.output).toContain('next-run');
      }
      const started = auditRecords().filter((r) => r.event === 'exec.started').at(-1) as { sandbox: { skipped: string[]; hidden: string[] } };
      for (const name of names) {
        expect(started.sandbox.skipped).toContainEqual(expect.stringContaining(`${join(work, name)} (a symlink to `));
      }
      // What stays hidden still is: the state directory.
      expect(started.sandbox.hidden).toContain(state);
      // A real directory in the same place is hidden as before.
      await g.exec({ command: 'rm .aws' });
      mkdirSync(join(work, '.aws'));
      writeFileSync(join(work, '.aws', 'credentials'), 'aws-key-material\n');
      const hidden = await g.exec({ command: 'cat .aws/credentials 2>&1; ls -A .aws | wc -l' });
      expect(hidden.stdout).not.toContain('aws-key-material');
      expect(hidden.stdout).toMatch(/No such file or directory\n0\n$/);
    } finally {
      await g.close();
    }
  });

  test('an audit log whose directory is the workspace refuses the start; one in a directory inside it is hidden whole, rotated files and lock included', async () => {
    const log = join(work, 'audit.log');
    expect(() => createGateway({ home: state, cwd: work, env: baseEnv({ HOME: userHome }), policy: sandboxPolicy({ network: 'none' }, { audit: { enabled: true, fingerprints: true, env: true, path: log } }) }))
      .toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_IN_WORKSPACE' }));
    const inner = join(work, 'logs');
    mkdirSync(inner);
    writeFileSync(join(inner, 'audit.log.20250105T102030123Z'), 'rotated-record-text\n');
    writeFileSync(join(inner, 'other.txt'), 'inner-text\n');
    writeFileSync(join(work, 'notes.txt'), 'notes-text\n');
    const g = createGateway({ home: state, cwd: work, env: baseEnv({ HOME: userHome }), policy: sandboxPolicy({ network: 'none' }, { audit: { enabled: true, fingerprints: true, env: true, path: join(inner, 'audit.log') } }) });
    try {
      await g.exec({ command: 'true' });
      const seen = await g.exec({ command: 'cat logs/* 2>&1; ls -A logs | wc -l; cat notes.txt; echo new > mine.txt && cat mine.txt' });
      expect(seen.stdout).not.toMatch(/inner-text|rotated-record-text|"event"/);
      expect(seen.stdout).toContain('notes-text\nnew\n');
      expect(readFileSync(join(inner, 'audit.log'), 'utf8')).toContain('"event"');
    } finally {
      await g.close();
    }
  });

  test('a hidden directory that is not covered refuses the run', async () => {
    const secrets = join(work, 'secrets');
    mkdirSync(secrets);
    writeFileSync(join(secrets, 'token'), 'x');
    const g = makeGateway({ home: state, cwd: work, env: baseEnv({ HOME: userHome }), sandbox: { network: 'none', filesystem: { hidden: [secrets], writable: [], readOnly: [] } } });
    try {
      // bubblewrap is told to cover it, then to bind it back over the cover.
      setSandboxSpecHookForTests((spec) => ({ ...spec, mounts: [...spec.mounts, { kind: 'bind', source: secrets, dest: secrets, readOnly: false }] }));
      await expect(g.exec({ command: 'cat secrets/token' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_MISMATCH' });
    } finally {
      await g.close();
    }
  });

  test('bubblewrap\'s own failure is a coded error without its raw words: a working directory removed after the plan', async () => {
    const gone = join(work, 'gone');
    mkdirSync(gone);
    const plan = await preparePlan({
      refs: new RefStore([]), policy: sandboxPolicy({ network: 'none' }), env: baseEnv({ HOME: userHome }), cwd: work, shell: '/bin/bash',
      supportedModes: new Set(['sync']), sandbox: { home: state },
    }, { command: 'echo should-not-run', cwd: gone });
    rmdirSync(gone);
    const error = await startRun(plan, { onData: () => undefined }).then(() => undefined, (e: unknown) => e as { code: string; message: string });
    expect(error).toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_PATH' });
    expect(error!.message).toContain(`The working directory ${gone} cannot be entered inside the sandbox`);
    expect(error!.message).not.toContain('bwrap:');
  });
});

describeSandboxed('a small kernel surface', () => {
  test.each(MODES)('%s: no nested user namespace, the filter\'s system calls refused, no TIOCSTI', async (mode) => {
    const g = gateway();
    try {
      const run = await runIn(g, mode, [
        `python3 ${PROBE}`,
        'unshare -U true 2>/dev/null && echo "unshare-U: ok" || echo "unshare-U: refused"',
        'unshare -m true 2>/dev/null && echo "unshare-m: ok" || echo "unshare-m: refused"',
        'unshare -Urm true 2>/dev/null && echo "unshare-Urm: ok" || echo "unshare-Urm: refused"',
        'bwrap --ro-bind / / true 2>/dev/null && echo "bwrap: ok" || echo "bwrap: refused"',
        'grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status',
      ].join('; '));
      const text = run.output.replace(/\r/g, '');
      expect(text).toContain('probe-done');
      for (const name of ['keyctl', 'add_key', 'bpf', 'perf_event_open', 'userfaultfd', 'unshare', 'setns', 'clone', 'mount', 'umount2', 'pivot_root', 'open_by_handle_at', 'io_uring_setup', 'init_module', 'kexec_load']) {
        expect(text).toContain(`${name}: EPERM`);
      }
      expect(text).toContain('clone3: ENOSYS');
      for (const name of ['unshare-U', 'unshare-m', 'unshare-Urm', 'bwrap']) expect(text).toContain(`${name}: refused`);
      expect(text).toMatch(/Seccomp:\s+2/);
      expect(text).toMatch(/NoNewPrivs:\s+1/);
      expect(text).toMatch(/CapEff:\s+0+\n/);
      if (mode === 'pty') expect(text).toContain('TIOCSTI: EPERM');
    } finally {
      await g.close();
    }
  });

  test('real work still works: a compiler, make -j, git, node, python3', async () => {
    const g = gateway();
    try {
      writeFileSync(join(work, 'hello.c'), '#include <stdio.h>\nint main(void) { puts("compiled"); return 0; }\n');
      writeFileSync(join(work, 'Makefile'), 'all: a b\na:\n\t@echo made-a\nb:\n\t@echo made-b\n');
      const run = await g.exec({
        command: [
          'cc -o hello hello.c && ./hello',
          'make -j2 -s',
          'git init -q repo && cd repo && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && git log --oneline | wc -l && cd ..',
          'node -e "console.log(\'node\', 1 + 1)"',
          'python3 -c "import threading, subprocess; print(\'python\', subprocess.run([\'true\']).returncode)"',
        ].join(' && '),
        timeout: 60_000,
      });
      expect(run.exitCode).toBe(0);
      for (const expected of ['compiled', 'made-a', 'made-b', 'node 2', 'python 0']) expect(run.stdout).toContain(expected);
    } finally {
      await g.close();
    }
  });
});

describeSandboxed('the command learns nothing of the gateway', () => {
  test.each(MODES)('%s: /proc/1/cmdline and the environment name no hidden path; a nested execgate finds an empty state', async (mode) => {
    // The gateway's own environment names its state directory; the run's does not.
    const g = gateway({ env: baseEnv({ HOME: userHome, EXECGATE_HOME: state, EXECGATE_POLICY: join(work, 'policy.yaml') }) });
    try {
      // Something in the state directory for a nested execgate to find if it could.
      await g.exec({ command: 'true' });
      const run = await runIn(g, mode, [
        'echo "cmdline=$(tr "\\0" " " < /proc/1/cmdline)"',
        'env | sed "s/^/ENV:/"',
        `node ${CLI} audit verify 2>&1 | head -3; echo "nested-default=$?"`,
        `EXECGATE_HOME=${state} node ${CLI} audit verify 2>&1 | head -3`,
        `ls -A ${state} | wc -l | sed "s/^/state-entries=/"`,
      ].join('; '));
      const text = run.output.replace(/\r/g, '');
      const cmdline = /cmdline=(.*)/.exec(text)?.[1] ?? '';
      expect(cmdline).toMatch(/bwrap --args \d+ --/);
      for (const path of [state, work, '/run/user', 'execgate-spawn', 'execgate-egress', '.ssh']) expect(cmdline).not.toContain(path);
      const env = text.split('\n').filter((line) => line.startsWith('ENV:'));
      expect(env.length).toBeGreaterThan(3);
      expect(env.filter((line) => line.startsWith('ENV:EXECGATE_') && !line.startsWith('ENV:EXECGATE_RUN_ID='))).toEqual([]);
      expect(env.filter((line) => line.includes(state) || line.includes('execgate-spawn') || line.includes('execgate-egress-'))).toEqual([]);
      // The state directory is an empty directory in every run: nothing to verify, nothing to read.
      expect(text).toContain('state-entries=0');
      expect(text).not.toMatch(/entries verified|chain intact/i);
      expect(existsSync(join(state, 'audit.log'))).toBe(true);
    } finally {
      await g.close();
    }
  });
});

describeSandboxed('a stop gives a sandboxed run its grace period', () => {
  const TRAP = 'trap \'echo got-term; sleep 0.5; echo cleaned > cleaned; exit 3\' TERM; echo ready; sleep 30 & wait';

  test.each(['sync', 'pty'] as const)('%s: a timeout sends SIGTERM to the run\'s processes first; its handler runs and finishes', async (mode) => {
    const g = gateway();
    try {
      const result = await g.exec({ command: TRAP, mode, timeout: 1500, grace: 5000 });
      expect(result.timedOut).toBe(true);
      expect(result.output).toContain('got-term');
      expect(readFileSync(join(work, 'cleaned'), 'utf8')).toBe('cleaned\n');
    } finally {
      await g.close();
    }
  });

  test('background: kill runs the handler; one that ignores SIGTERM is killed after the grace period', async () => {
    const g = gateway();
    try {
      const started = await g.exec({ command: TRAP, mode: 'background' });
      expect(await waitFor(() => readFileSync(started.outputPath, 'utf8').includes('ready'), 30_000)).toBe(true);
      await g.background.kill(started.id);
      expect(readFileSync(started.outputPath, 'utf8')).toContain('got-term');
      expect(readFileSync(join(work, 'cleaned'), 'utf8')).toBe('cleaned\n');
      const stubborn = await g.exec({ command: 'trap "echo ignoring" TERM; echo ready; while :; do sleep 0.1; done', mode: 'background' });
      expect(await waitFor(() => readFileSync(stubborn.outputPath, 'utf8').includes('ready'), 30_000)).toBe(true);
      const ended = await g.background.kill(stubborn.id, { grace: 500 });
      expect(ended.state).toBe('killed');
      expect(readFileSync(stubborn.outputPath, 'utf8')).toContain('ignoring');
    } finally {
      await g.close();
    }
  });
});
