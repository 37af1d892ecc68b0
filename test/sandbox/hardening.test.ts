/*
 * Escapes an adversarial review found after the sandbox landed, each tried through a real
 * gateway with real bubblewrap and real bash. Several only mean something when the gateway
 * runs as root (as CI does): the kernel lets uid 0 write sysctls without any capability.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { getRecordPath } from '../../src/run/background/records';
import { createGateway } from '../../src/gateway';
import { getRuntimeBase } from '../../src/fs/runtime-dir';
import { baseEnv, isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeGateway, MODES, runIn, type Mode } from './helpers';

jest.setTimeout(120_000);

/**
 * The spawn-helper directories whose socket this process listens on (its socket inodes against
 * /proc/net/unix): other gateways on the machine have their own, which a test must not touch.
 */
function getOwnSpawnDirs(temp: string): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (match) inodes.add(match[1] as string);
    } catch {
      // closed meanwhile
    }
  }
  const dirs = new Set<string>();
  for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const path = fields[7];
    if (path && inodes.has(fields[6] as string) && path.startsWith(`${temp}/execgate-spawn-`)) dirs.add(dirname(path));
  }
  return [...dirs];
}

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

/**
 * `execgate run` in a child bash that first opens `fd` on `file` without close-on-exec, as a
 * user's shell does for `execgate run -- '...' 200<file`.
 */
async function cliRunHolding(mode: Mode, sandbox: 'required' | 'off', fd: number, file: string, command: string): Promise<{ output: string; sandboxed: boolean }> {
  const policy = join(tmp.dir, `policy-${sandbox}.yaml`);
  writeFileSync(policy, `version: 1\nsandbox:\n  mode: ${sandbox}\n`);
  const state = join(tmp.dir, 'state');
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('/bin/bash', ['-c', `exec ${fd}<"$1"; shift; exec "$@"`, 'holder', file, process.execPath, CLI, 'run', '--json', '--mode', mode, '--policy', policy, '--', command], {
      cwd: work,
      env: { ...baseEnv(), EXECGATE_HOME: state },
      encoding: 'utf8',
    }, (error, out) => (out ? resolve(out) : reject(error)));
  });
  const json = JSON.parse(stdout) as { output?: string; outputPath?: string; sandboxed?: boolean; sandbox?: { sandboxed: boolean }; id?: string };
  if (mode !== 'background') return { output: json.output ?? '', sandboxed: json.sandbox?.sandboxed === true };
  const path = json.outputPath as string;
  expect(await waitFor(() => existsSync(path) && readFileSync(path, 'utf8').includes('[background process completed'), 20_000)).toBe(true);
  const record = getRecordPath(state, json.id as string);
  const supervisor = (): number => (JSON.parse(readFileSync(record, 'utf8')) as { supervisorPid: number }).supervisorPid;
  expect(await waitFor(() => !isAlive(supervisor()), 20_000)).toBe(true);
  return { output: readFileSync(path, 'utf8'), sandboxed: json.sandboxed === true };
}

let tmp: ReturnType<typeof makeTempDir>;
let work: string;

beforeEach(() => {
  tmp = makeTempDir('execgate-hard-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
});
afterEach(() => rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));

describeSandboxed('hardening', () => {
  describe.each(MODES)('%s mode', (mode: Mode) => {
    test('kernel knobs under /proc are read-only and kernel state is masked (core_pattern escape)', async () => {
      const before = readFileSync('/proc/sys/kernel/core_pattern', 'utf8');
      const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work });
      try {
        // Harmless probes: `test -w`, and writing the current value back (a no-op if it lands).
        const run = await runIn(gateway, mode, [
          'test -w /proc/sys/kernel/core_pattern && echo CORE-PATTERN-WRITABLE',
          '(cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern) 2>/dev/null && echo CORE-PATTERN-WRITTEN',
          'test -w /proc/sys/vm/drop_caches && echo SYSCTL-WRITABLE',
          'test -w /proc/sysrq-trigger && echo SYSRQ-WRITABLE',
          'test -e /proc/keys && test -s /proc/keys && echo KEYS-READABLE',
          'test -w /sys/kernel && echo SYS-WRITABLE',
          'test -w /sys/fs/cgroup && echo CGROUP-WRITABLE',
          'cat /proc/sys/kernel/ostype',
        ].join('; '));
        expect(run.sandboxed).toBe(true);
        // /proc/sys is still readable: tools that read sysctls keep working.
        expect(run.output).toContain('Linux');
        for (const leak of ['CORE-PATTERN-WRITABLE', 'CORE-PATTERN-WRITTEN', 'SYSCTL-WRITABLE', 'SYSRQ-WRITABLE', 'KEYS-READABLE', 'SYS-WRITABLE', 'CGROUP-WRITABLE']) {
          expect(run.output).not.toContain(leak);
        }
      } finally {
        await gateway.close();
      }
      expect(readFileSync('/proc/sys/kernel/core_pattern', 'utf8')).toBe(before);
    });

    test.each(['required', 'off'] as const)('a descriptor the gateway inherited does not reach the command (sandbox %s)', async (sandbox) => {
      const state = join(tmp.dir, 'state');
      mkdirSync(state, { recursive: true, mode: 0o700 });
      const secret = join(state, 'held.key');
      writeFileSync(secret, 'HELD-KEY-MATERIAL-4242');
      const run = await cliRunHolding(mode, sandbox, 200, secret, 'cat 2>/dev/null <&200 | rev; ls /proc/self/fd | tr "\\n" " " | sed "s/^/fds=/"');
      expect(run.sandboxed).toBe(sandbox === 'required');
      expect(run.output).toContain('fds=');
      expect(run.output).not.toContain('2424-LAIRETAM-YEK-DLEH');
      // Only the listing counts (stderr may share the line in `output`).
      expect(run.output).not.toMatch(/fds=[\d ]*\b200\b/);
    });
  });

  test.each(MODES)('a hidden path cannot be uncovered by renaming its ancestor inside the cwd (%s)', async (mode) => {
    const state = join(work, 'sub', '.execgate');
    const userHome = join(work, 'home');
    mkdirSync(join(userHome, '.config', 'gh'), { recursive: true });
    writeFileSync(join(userHome, '.config', 'gh', 'hosts.yml'), 'oauth_token: GH-TOKEN-7777');
    mkdirSync(join(tmp.dir, 'audit'));
    // (listed by its path: a workspace may not hold the home directory itself)
    const gateway = makeGateway({ home: state, env: baseEnv(), cwd: work, audit: { path: join(tmp.dir, 'audit', 'audit.log') }, sandbox: { filesystem: { hidden: [join(userHome, '.config', 'gh')], writable: [], readOnly: [] } } });
    try {
      writeFileSync(join(state, 'vault.key'), 'VAULT-KEY-MATERIAL-5151');
      const moved = await runIn(gateway, mode, 'mv sub sub2 2>&1; echo mv=$?; mv home/.config home/cfg 2>&1; echo mv2=$?');
      expect(moved.sandboxed).toBe(true);
      expect(moved.output).toMatch(/mv=[1-9]/);
      expect(moved.output).toMatch(/mv2=[1-9]/);
      expect(existsSync(join(state, 'vault.key'))).toBe(true);
      const read = await runIn(gateway, mode, 'cat sub*/.execgate/vault.key home/*/gh/hosts.yml 2>&1 | rev');
      expect(read.output).not.toContain('1515-LAIRETAM-YEK-TLUAV');
      expect(read.output).not.toContain('7777-NEKOT-HG');
    } finally {
      await gateway.close();
    }
  });

  test('a state directory that vanished or was replaced is not re-created: a coded error, nothing runs', async () => {
    const state = join(work, 'sub', '.execgate');
    // The audit log elsewhere, so that only the sandbox step meets the missing directory.
    mkdirSync(join(tmp.dir, 'audit'));
    // No warm sandbox: one being set up while the test moves directories makes bubblewrap create
    // the mount points it misses (SECURITY.md, warm sandboxes); this test is about the gateway's own check.
    const gateway = makeGateway({ home: state, env: baseEnv(), cwd: work, audit: { path: join(tmp.dir, 'audit', 'audit.log') }, warmSandboxes: 0 });
    try {
      expect((await gateway.exec({ command: 'echo first' })).output).toContain('first');
      // What a run could have done before the ancestors were pinned, or any process outside.
      renameSync(join(work, 'sub'), join(work, 'sub2'));
      await expect(gateway.exec({ command: 'touch ran' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_STATE_DIR' });
      expect(existsSync(state)).toBe(false);
      mkdirSync(state, { recursive: true });
      await expect(gateway.exec({ command: 'touch ran' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_STATE_DIR' });
      expect(existsSync(join(work, 'ran'))).toBe(false);
      // Put the real one back: the gateway takes it again (its audit log is written on close).
      rmSync(join(work, 'sub'), { recursive: true });
      renameSync(join(work, 'sub2'), join(work, 'sub'));
      expect((await gateway.exec({ command: 'echo back' })).output).toContain('back');
    } finally {
      await gateway.close();
    }
  });

  test.each(MODES)('the policy file and its extends chain are read-only inside, their directory cannot be renamed (%s)', async (mode) => {
    const conf = join(work, 'conf');
    mkdirSync(conf);
    writeFileSync(join(conf, 'base.yaml'), 'version: 1\nsandbox:\n  mode: required\n');
    writeFileSync(join(conf, 'policy.yaml'), 'version: 1\nextends: ./base.yaml\n');
    const gateway = createGateway({ policyFile: join(conf, 'policy.yaml'), home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work });
    try {
      const run = await runIn(gateway, mode, [
        'echo "sandbox: {mode: off}" >> conf/policy.yaml 2>/dev/null && echo POLICY-WRITTEN',
        'echo "sandbox: {mode: off}" >> conf/base.yaml 2>/dev/null && echo BASE-WRITTEN',
        'mv conf conf2 2>/dev/null && echo DIR-MOVED',
        'cat conf/base.yaml',
        'echo ok > conf/other && echo other-ok',
      ].join('; '));
      expect(run.sandboxed).toBe(true);
      expect(run.output).toContain('mode: required');
      expect(run.output).toContain('other-ok');
      for (const leak of ['POLICY-WRITTEN', 'BASE-WRITTEN', 'DIR-MOVED']) expect(run.output).not.toContain(leak);
      expect(readFileSync(join(conf, 'base.yaml'), 'utf8')).toBe('version: 1\nsandbox:\n  mode: required\n');
    } finally {
      await gateway.close();
    }
  });

  test.each(MODES)('the spawn helper socket is out of reach of a run whose writable root holds the temp directory (%s)', async (mode) => {
    const temp = realpathSync(getRuntimeBase());
    mkdirSync(join(tmp.dir, 'audit'));
    const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: temp, spawner: 'helper', audit: { path: join(tmp.dir, 'audit', 'audit.log') } });
    try {
      // The helper exists once a run went through it; its socket sits under the temp directory.
      await gateway.exec({ command: 'true' });
      const ours = getOwnSpawnDirs(temp).map((dir) => basename(dir));
      expect(ours).toHaveLength(1);
      const run = await runIn(gateway, mode, [
        // This gateway's socket (the run's /tmp is private: others' are out of sight too).
        `test -S ${temp}/${ours[0]}/s && echo "SOCKET-VISIBLE"`,
        // Only this gateway's own directory is touched: others on the machine belong to others.
        `rm -f ${temp}/${ours[0]}/s 2>/dev/null`,
        `rmdir ${temp}/${ours[0]} 2>/dev/null`,
        `mv ${temp}/${ours[0]} ${temp}/moved-spawn 2>/dev/null && echo DIR-MOVED`,
        'echo done',
      ].join('; '));
      expect(run.sandboxed).toBe(true);
      expect(run.output).toContain('done');
      expect(run.output).not.toContain('SOCKET-VISIBLE');
      expect(run.output).not.toContain('DIR-MOVED');
      expect(existsSync(join(temp, ours[0] as string, 's'))).toBe(true);
      // Later runs still go through the helper and come back.
      expect((await gateway.exec({ command: 'echo after' })).output).toContain('after');
    } finally {
      await gateway.close();
    }
  });
});
