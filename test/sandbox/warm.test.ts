/*
 * Warm sandboxes (src/process/bwrap/warm.ts): a run that starts in a sandbox set up ahead of it must be
 * indistinguishable from one that starts cold, to the command and to whoever reads the host's
 * /proc: the same environment (bash's own variables, SHLVL and PWD included), working directory,
 * descriptors and output; no value on any argv or in the waiting sandbox; a path replaced since
 * the sandbox was set up (the working directory, a hidden directory) makes the run cold; nothing
 * outlives the gateway or its idle time.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { createGateway, type Gateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { preparePlan } from '../../src/plan/prepare';
import { directSpawner } from '../../src/process/spawner';
import { RefStore } from '../../src/refs/store';
import { checkPlatform } from '../../src/sandbox';
import type { SandboxedRequest } from '../../src/process/bwrap/gate';
import type { SandboxLaunch } from '../../src/process/bwrap/launch';
import { encodeFrame, isWarmableEnv, WarmSandboxes } from '../../src/process/bwrap/warm';
import type { Spawner } from '../../src/process/spawner/types';
import { getWarmStubScript } from '../../src/process/programs';
import { baseEnv, isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, findProcesses, makeHome, sandboxPolicy } from './helpers';

jest.setTimeout(120_000);

let tmp: ReturnType<typeof makeTempDir>;
let work: string;
let home: string;
const open: Gateway[] = [];
const cleanups: Array<() => void> = [];

// Loopback only: no per-run proxy credentials in the environment to tell two runs apart.
const OFFLINE = sandboxPolicy({ mode: 'required' }, { network: { ...DEFAULT_POLICY.network, mode: 'none', allow: [], deny: [] } });

/**
 * Every process below `pid`. One that ends while the tree is read (a run's process exiting, a
 * short-lived helper of the gateway) is left out: its children list is gone by the time it is read.
 */
function descendants(pid: number): number[] {
  let listed: string;
  try {
    listed = readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1');
  } catch {
    return [];
  }
  return listed.trim().split(' ').filter(Boolean).flatMap((child) => [Number(child), ...descendants(Number(child))]);
}

/** The command line of `pid`, NULs kept; empty once it has ended. */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
  } catch {
    return '';
  }
}

// A gateway started from bash has `_` (its program's path) in its environment, as bash exports it.
function gatewayWith(warmSandboxes: number, userHome = home, extra: Record<string, string> = {}): Gateway {
  const gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, `state-${open.length}`), env: baseEnv({ HOME: userHome, ...extra }), cwd: work, warmSandboxes });
  open.push(gateway);
  return gateway;
}

async function untilWaiting(gateway: Gateway): Promise<void> {
  expect(await waitFor(() => (gateway.warmSandboxes?.waiting ?? 0) > 0, 30_000)).toBe(true);
}

beforeEach(() => {
  tmp = makeTempDir('execgate-warm-');
  work = join(tmp.dir, 'work');
  home = join(tmp.dir, 'home');
  mkdirSync(work);
  mkdirSync(home);
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close()));
  for (const cleanup of cleanups.splice(0)) cleanup();
  rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
});

describe('the frame and who is warm (no sandbox needed)', () => {
  test('lengths are bytes, SHLVL is sent one higher (exec lowers it), fields travel whole', () => {
    const frame = encodeFrame('/w d', ['/bin/bash', '-c', 'echo é'], { A: 'x=y\nz', SHLVL: '4' });
    const text = frame.toString('utf8');
    expect(text.startsWith('5 2 4 4 9 2 7 7 7\n')).toBe(true);
    expect(text.includes('/w dnull/bin/bash')).toBe(true);
    expect(text.endsWith('A=x=y\nzSHLVL=5')).toBe(true);
  });

  test.each([
    [{ PATH: '/bin', LANG: 'C.UTF-8', X_1: 'v' }, true],
    [{ SHLVL: '2' }, true],
    [{ SHLVL: 'abc' }, false],
    [{ SHLVL: '007' }, false],
    [{ 'a-b': '1' }, false],
    [{ 'BASH_FUNC_f%%': '() { id; }' }, false],
    [{ BASH_ENV: '/x' }, false],
    [{ RANDOM: '4' }, false],
    [{ SHELLOPTS: 'xtrace' }, false],
    [{ IFS: ':' }, false],
    [{ b: 'the waiting bash uses this name' }, false],
  ])('%j warmable: %s', (env, expected) => {
    expect(isWarmableEnv(env as Record<string, string>)).toBe(expected);
  });
});

describeSandboxed('warm sandboxes', () => {
  test('a run in a warm sandbox sees exactly what a cold run sees (property, real bash as the oracle)', async () => {
    // Both gateways as if started from bash: `_` in their environment (the requested names include it too).
    const warm = gatewayWith(1, home, { _: process.execPath });
    const cold = gatewayWith(0, home, { _: process.execPath });
    const probe = [
      '/bin/cat /proc/$$/environ | /usr/bin/tr "\\0" "\\n" | /usr/bin/grep -v "^EXECGATE_RUN_ID=" | LC_ALL=C /usr/bin/sort',
      'echo "shlvl=$SHLVL pwd=$PWD dollar_=$_ cwd=$(/bin/pwd) umask=$(umask)"',
      // (a glob, not `ls /proc/$$/fd | ...`: a pipeline's own pipe is open in the shell or not, by timing)
      'for f in /proc/$$/fd/*; do echo -n "${f##*/}=$(/usr/bin/readlink "$f") "; done; echo',
      // Signal masks of a child (the shell's own blocked set changes as it waits for children).
      '/usr/bin/grep -E "^(Sig(Ign|Blk)|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status',
      '/usr/bin/grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/$$/status',
      'echo "args=$# $0"',
    ].join('; ');
    const name = fc.oneof(
      fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/),
      // (requested names must be identifiers: other names can only come from the gateway's own environment)
      fc.constantFrom('SHLVL', 'PWD', 'OLDPWD', 'LC_ALL', 'LANG', 'TZ', 'POSIXLY_CORRECT', 'TMOUT', 'IFS', 'RANDOM', 'BASH_X', '_', 'p', 'e', 'l', 'HISTFILE', 'PS4', 'ENV', 'CDPATH', 'GLOBIGNORE'),
    );
    const value = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom('0', '3', '998', '999', '007', '-1', 'abc', '', 'xx_YY.bogus', 'C', ' a  b ', 'x\ny', '$(id)', '`id`', '\\', '=', '%s', '\u00e9\u4e16'),
    );
    let warmRuns = 0;
    await warm.exec({ command: 'true' });
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 5 }), async (env) => {
        // A warm sandbox is set up during the first run of this gateway; each case's second run uses one.
        await untilWaiting(warm);
        const before = warm.warmSandboxes!.warm;
        const [a, b] = [await warm.exec({ command: probe, env }), await cold.exec({ command: probe, env })];
        if (warm.warmSandboxes!.warm > before) warmRuns += 1;
        // Socket and pipe inode numbers differ from run to run, and so do the names of the output
        // pipes (FIFOs of the gateway's pool, unlinked); what they are does not.
        const seen = (r: typeof a): object => ({
          stdout: r.stdout.replace(/:\[\d+\]/g, ':[inode]').replace(/\/execgate-pipes-[0-9]+-[^/ ]+\/[0-9]+ \(deleted\)/g, '/execgate-pipes-[pipe] (deleted)'),
          stderr: r.stderr,
          exit: r.exitCode,
        });
        expect(seen(a)).toEqual(seen(b));
        expect(a.exitCode).toBe(0);
      }),
      { numRuns: 40 },
    );
    // The property is about warm runs: most cases (every warmable one) did start warm.
    expect(warmRuns).toBeGreaterThan(10);
    expect(cold.warmSandboxes).toBeUndefined();
  });

  test('a gateway started from bash (`_` in its environment) gets warm runs, and its runs see no `_` warm or cold', async () => {
    // Its environment as a real bash hands it to a program it starts (not by `exec`, which drops `_`).
    const fromBash = (await import('node:child_process')).spawnSync('/bin/bash', ['-c', `${JSON.stringify(process.execPath)} -p "process.env._"; true`], { env: baseEnv(), encoding: 'utf8' });
    const underscore = fromBash.stdout.trim();
    expect(underscore).toBe(process.execPath);
    const gateway = gatewayWith(1, home, { _: underscore });
    const probe = '/bin/cat /proc/$$/environ | /usr/bin/tr "\\0" "\\n" | /usr/bin/grep -c "^_=" || true';
    expect((await gateway.exec({ command: probe })).stdout).toBe('0\n');
    await untilWaiting(gateway);
    const { warm } = gateway.warmSandboxes!;
    expect((await gateway.exec({ command: probe })).stdout).toBe('0\n');
    expect(gateway.warmSandboxes!.warm).toBe(warm + 1);
  });

  test('a replaced working directory makes the run cold: it sees the new directory', async () => {
    const gateway = gatewayWith(1);
    writeFileSync(join(work, 'old.txt'), 'old');
    expect((await gateway.exec({ command: 'ls' })).stdout).toBe('old.txt\n');
    await untilWaiting(gateway);
    // Same path, new inode: a bind set up before this would still show the old directory.
    rmSync(work, { recursive: true });
    mkdirSync(work);
    writeFileSync(join(work, 'new.txt'), 'new');
    const { discarded, warm } = gateway.warmSandboxes!;
    const result = await gateway.exec({ command: 'ls; echo more > more.txt' });
    expect(result.stdout).toBe('new.txt\n');
    expect(readFileSync(join(work, 'more.txt'), 'utf8')).toBe('more\n');
    expect(gateway.warmSandboxes!.discarded).toBe(discarded + 1);
    expect(gateway.warmSandboxes!.warm).toBe(warm);
    // Unchanged since: the next one is warm again.
    await untilWaiting(gateway);
    expect((await gateway.exec({ command: 'ls' })).stdout).toBe('more.txt\nnew.txt\n');
    expect(gateway.warmSandboxes!.warm).toBe(warm + 1);
  });

  test('a sandbox whose set-up failed is not taken, though bubblewrap has not been seen to exit', async () => {
    // bubblewrap stands behind a script that, for a warm sandbox, waits for \`go\`, runs
    // bubblewrap so that it fails (an option it does not know), says \`done\` and lives on a
    // while: the gateway has not seen it exit when the next run comes.
    const bwrap = checkPlatform().helper!;
    const helper = join(tmp.dir, 'bwrap-gated');
    writeFileSync(helper, [
      '#!/bin/bash',
      `state=${JSON.stringify(tmp.dir)}`,
      'if [[ "$*" == *\'read -r -a l\'* && -e "$state/gate" ]]; then',
      '  : > "$state/waiting"; while [ ! -e "$state/go" ]; do sleep 0.02; done',
      `  ${JSON.stringify(bwrap)} --not-an-option "$@"; rc=$?`,
      '  : > "$state/done"; sleep 5; exit $rc',
      'fi',
      `exec ${JSON.stringify(bwrap)} "$@"`,
    ].join('\n'));
    chmodSync(helper, 0o755);
    writeFileSync(join(tmp.dir, 'gate'), '');
    const policy = { ...OFFLINE, sandbox: { ...OFFLINE.sandbox, helper } };
    const gateway = createGateway({ policy, home: join(tmp.dir, 'gated-state'), env: baseEnv({ HOME: home }), cwd: work });
    open.push(gateway);
    await gateway.exec({ command: 'true' });
    // The next sandbox's bubblewrap is about to run (its spawn may come later than the run, from the spawn helper under load).
    expect(await waitFor(() => existsSync(join(tmp.dir, 'waiting')), 30_000)).toBe(true);
    writeFileSync(join(tmp.dir, 'go'), '');
    expect(await waitFor(() => existsSync(join(tmp.dir, 'done')), 30_000)).toBe(true);
    const { warm } = gateway.warmSandboxes!;
    const result = await gateway.exec({ command: 'echo back' });
    expect(result.output).toBe('back\n');
    expect(result.exitCode).toBe(0);
    expect(gateway.warmSandboxes!.warm).toBe(warm);
  });

  test('a hidden directory replaced after the sandbox was set up stays hidden', async () => {
    // Outside the temp directories (the sandbox's own /tmp would hide a home under /tmp anyway)
    // and outside the workspace (which may not hold the home directory).
    const outside = makeHome();
    cleanups.push(outside.cleanup);
    const home = outside.dir;
    mkdirSync(join(home, '.ssh'), { recursive: true });
    writeFileSync(join(home, '.ssh', 'id_old'), 'OLD-KEY-MATERIAL');
    const gateway = gatewayWith(1, home);
    const first = await gateway.exec({ command: 'ls -A ~/.ssh | wc -l' });
    expect(first.stdout.trim()).toBe('0');
    await untilWaiting(gateway);
    // The hiding tmpfs sits on the old directory's dentry; a new directory at the same path is not under it.
    renameSync(join(home, '.ssh'), join(home, 'ssh-old'));
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'id_new'), 'NEW-KEY-MATERIAL');
    const result = await gateway.exec({ command: 'cat ~/.ssh/id_new; ls -A ~/.ssh | wc -l' });
    expect(result.stdout).not.toContain('NEW-KEY-MATERIAL');
    expect(result.stdout.trim().split('\n').pop()).toBe('0');
    expect(gateway.warmSandboxes!.discarded).toBe(1);
    // The same replacement seen from the host, to be sure the test is about something: the file is there.
    expect(readFileSync(join(home, '.ssh', 'id_new'), 'utf8')).toBe('NEW-KEY-MATERIAL');
  });

  test('a descriptor this process held when the sandbox was set up does not reach the run', async () => {
    const gateway = gatewayWith(1);
    // A PTY run in progress holds terminal masters without close-on-exec (node-pty): a warm
    // sandbox set up meanwhile inherits them; the waiting bash closes them before the run.
    // The PTY run waits for `go`, written only once the warm sandbox is waiting: it is surely
    // in progress while that sandbox is set up.
    const pty = gateway.exec({ command: 'while [ ! -e go ]; do sleep 0.02; done; echo done', mode: 'pty' });
    await gateway.exec({ command: 'true' });
    await untilWaiting(gateway);
    writeFileSync(join(work, 'go'), '');
    const { warm } = gateway.warmSandboxes!;
    expect((await pty).stdout).toContain('done');
    const result = await gateway.exec({ command: 'for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink "$f")"; done' });
    expect(gateway.warmSandboxes!.warm).toBe(warm + 1);
    const fds = result.stdout.trim().split('\n').map((line) => line.split(' '));
    // 0-2, and the pipe of the `$(readlink)` being run: nothing else, no terminal.
    expect(fds.filter(([fd]) => Number(fd) > 2).map(([, target]) => target).every((target) => target!.startsWith('pipe:'))).toBe(true);
    expect(result.stdout).not.toMatch(/ptmx|\/dev\/pts/);
  });

  test('a warm run: its value on no argv, none in the waiting sandbox; masked; stopped on timeout with nothing left', async () => {
    const gateway = gatewayWith(1);
    const secret = `warm-secret-${Date.now()}-value`;
    gateway.refs.set('secret', 'tok', secret);
    await gateway.exec({ command: 'true' });
    await untilWaiting(gateway);
    const marker = `warm-marker-${process.pid}`;
    const running = gateway.exec({ command: `echo "$EXECGATE_RUN_ID <<secret:tok>>"; exec -a ${marker} sleep 30`, timeout: 8000 });
    expect(await waitFor(() => findProcesses(marker).length > 0, 20_000)).toBe(true);
    // The next warm sandbox is being set up or waiting: neither it nor anything else holds the value on an argv or in an environment outside the run.
    await untilWaiting(gateway);
    const runPids = new Set(findProcesses(marker));
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || runPids.has(Number(entry))) continue;
      try {
        expect(readFileSync(`/proc/${entry}/cmdline`, 'latin1')).not.toContain(secret);
      } catch { /* gone */ }
    }
    const result = await running;
    expect(result.timedOut).toBe(true);
    expect(result.stdout).toContain('[REDACTED:secret:tok]');
    expect(result.stdout).not.toContain(secret);
    expect(gateway.warmSandboxes!.warm).toBeGreaterThanOrEqual(1);
    expect(await waitFor(() => findProcesses(marker).length === 0, 30_000)).toBe(true);
  });

  test('the next sandbox is set up after the run\'s result is back, not before it', async () => {
    // The set-up forks this process and runs bubblewrap on the same cores: begun at the run's exit,
    // it came before the run's end record and result. Now nothing of it has started when the
    // result arrives (checked in the same turn), and it is ready a moment later.
    // Waiting sandboxes being set up or set up: processes running the waiting bash's program.
    const stub = getWarmStubScript();
    const sandboxes = (): number[] => descendants(process.pid).filter((pid) => commandLine(pid).includes(stub));
    const gateway = gatewayWith(1);
    await gateway.exec({ command: 'true' });
    await untilWaiting(gateway);
    const before = gateway.warmSandboxes!.warm;
    // A run still going after REFILL_AFTER_MS (200 ms, warm.ts) gets its next sandbox set up during
    // it, by design: on a loaded machine even `echo $$` can take that long, so only runs well
    // under it are held to "nothing before the result" (at least 5 of them).
    let checked = 0;
    let runs = 0;
    for (; checked < 5 && runs < 40; runs += 1) {
      const started = performance.now();
      const result = await gateway.exec({ command: 'echo $$' });
      const took = performance.now() - started;
      expect(result.exitCode).toBe(0);
      expect(gateway.warmSandboxes!.waiting).toBe(0);
      if (took < 150) {
        expect(sandboxes()).toEqual([]);
        checked += 1;
      }
      await untilWaiting(gateway);
      expect(sandboxes().length).toBeGreaterThan(0);
    }
    expect(checked).toBe(5);
    expect(gateway.warmSandboxes!.warm).toBe(before + runs);
  });

  test('close ends every waiting sandbox', async () => {
    // Processes this worker already had (another test file's sandboxed file server, say) are
    // not this gateway's.
    const earlier = new Set(descendants(process.pid));
    const gateway = gatewayWith(1);
    await gateway.exec({ command: 'true' });
    await untilWaiting(gateway);
    // Every bubblewrap below this process, and everything below those: the waiting sandbox, the network namespace's holder.
    const bwraps = descendants(process.pid).filter((pid) => !earlier.has(pid) && commandLine(pid).split('\0')[0]!.endsWith('bwrap'));
    // Each process by pid and start time: on a busy machine a pid that ended can be reused by an
    // unrelated process within the wait, which must not count as a survivor.
    const startOf = (pid: number): string | undefined => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      } catch {
        return undefined;
      }
    };
    const processes = bwraps.flatMap((pid) => [pid, ...descendants(pid)]).map((pid) => ({ pid, start: startOf(pid) }));
    const running = (): string[] => processes
      .filter(({ pid, start }) => isAlive(pid) && startOf(pid) === start)
      .map(({ pid }) => {
        try {
          return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').slice(0, 120)}`;
        } catch {
          return `${pid}: (ended while read)`;
        }
      });
    expect(processes.length).toBeGreaterThanOrEqual(3);
    expect(running()).toHaveLength(processes.length);
    await gateway.close();
    // close() waited for bubblewrap; the sandbox's own init follows it by its parent-death signal.
    await waitFor(() => running().length === 0, 30_000);
    expect(running()).toEqual([]);
    expect(gateway.warmSandboxes!.waiting).toBe(0);
  });

  test('a host that never closes its gateway still exits, and its waiting sandbox dies with it', async () => {
    const script = `
      const { createGateway } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'gateway.js'))});
      const g = createGateway({ policy: ${JSON.stringify(OFFLINE)}, home: ${JSON.stringify(join(tmp.dir, 'host-state'))}, cwd: ${JSON.stringify(work)} });
      g.exec({ command: 'true' }).then(async () => {
        while (g.warmSandboxes.waiting === 0) await new Promise((r) => setTimeout(r, 20));
        // Every process below this one now: the waiting bubblewrap and the sandbox inside it.
        const fs = require('node:fs');
        // (one that ends while the tree is read is left out)
        const listed = (pid) => { try { return fs.readFileSync('/proc/' + pid + '/task/' + pid + '/children', 'latin1'); } catch { return ''; } };
        const below = (pid) => listed(pid).trim().split(' ').filter(Boolean).flatMap((c) => [Number(c), ...below(c)]);
        process.stdout.write('waiting ' + below(process.pid).join(' ') + '\\n');
      });`;
    const child = spawn(process.execPath, ['-e', script], { env: { ...baseEnv({ HOME: home }) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(out).toMatch(/^waiting( \d+)+\n$/);
    const pids = out.trim().split(' ').slice(1).map(Number);
    // bubblewrap, its init, the waiting bash inside (and the network namespace's holder).
    expect(pids.length).toBeGreaterThanOrEqual(3);
    expect(code).toBe(0);
    // bubblewrap --die-with-parent: the waiting sandbox ended with the process that started it.
    expect(await waitFor(() => pids.filter(isAlive).length === 0, 30_000)).toBe(true);
  });

  test('a waiting sandbox left idle is ended', async () => {
    const sandboxes = new WarmSandboxes(directSpawner, { size: 1, maxIdle: 300 });
    const plan = await preparePlan({ refs: new RefStore([]), policy: OFFLINE, env: baseEnv({ HOME: home }), cwd: work, shell: '/bin/bash', supportedModes: new Set(['sync']), sandbox: { home: join(tmp.dir, 'idle-state') } }, { command: 'true' });
    const started = await sandboxes.startSandboxed({ shell: plan.shell, args: plan.args, env: plan.env, cwd: plan.cwd, stdin: 'ignore', sandbox: plan.launch! });
    await started.exit;
    expect(await waitFor(() => sandboxes.stats.waiting === 1, 30_000)).toBe(true);
    const [pid] = sandboxes.waiting;
    expect(await waitFor(() => sandboxes.stats.waiting === 0, 30_000)).toBe(true);
    expect(sandboxes.stats.discarded).toBe(1);
    expect(await waitFor(() => !isAlive(pid!), 30_000)).toBe(true);
    await sandboxes.close();
  });

  /** directSpawner, recording what is written to each child's stdin (the frames), by pid. */
  function recordingSpawner(): Spawner & { written: Map<number, string> } {
    const written = new Map<number, string>();
    return {
      written,
      spawn: async (request) => {
        const child = await directSpawner.spawn(request);
        const stdin = child.stdin;
        if (stdin) {
          const write = stdin.write.bind(stdin) as (chunk: unknown, ...rest: unknown[]) => boolean;
          (stdin as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]): boolean => {
            written.set(child.pid, (written.get(child.pid) ?? '') + Buffer.from(chunk as Buffer).toString('latin1'));
            return write(chunk, ...rest);
          };
        }
        return child;
      },
      close: () => directSpawner.close(),
    };
  }

  async function planOf(command: string, state: string): Promise<{ request: SandboxedRequest; launch: SandboxLaunch }> {
    const plan = await preparePlan({ refs: new RefStore([]), policy: OFFLINE, env: baseEnv({ HOME: home }), cwd: work, shell: '/bin/bash', supportedModes: new Set(['sync']), sandbox: { home: join(tmp.dir, state) } }, { command });
    return { request: { shell: plan.shell, args: plan.args, env: plan.env, cwd: plan.cwd, stdin: 'ignore', sandbox: plan.launch! }, launch: plan.launch! };
  }

  test('a check that fails after the frame was sent: the program never runs, the sandbox is gone', async () => {
    const spawner = recordingSpawner();
    const sandboxes = new WarmSandboxes(spawner, { size: 1 });
    const first = await planOf('true', 'frame-state');
    await (await sandboxes.startSandboxed(first.request)).exit;
    expect(await waitFor(() => sandboxes.stats.waiting === 1, 30_000)).toBe(true);
    const [pid] = sandboxes.waiting;
    // The same sandbox (the same launch: it is taken), with a plan that now wants a mount the
    // sandbox does not have: the check at the take fails, after the frame went out.
    const marker = join(work, 'acted');
    const { request } = await planOf(`touch ${marker}`, 'frame-state');
    const check = { ...request.sandbox.check, mounted: [...request.sandbox.check.mounted, join(work, 'not-mounted')] };
    const run = sandboxes.startSandboxed({ ...request, sandbox: { ...request.sandbox, check } });
    // The cold start it falls back to fails the same check.
    await expect(run).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_MISMATCH' });
    expect(spawner.written.get(pid!)).toContain(`touch ${marker}`);
    expect(await waitFor(() => !isAlive(pid!), 30_000)).toBe(true);
    // The cold start's bubblewrap has exited when the run rejects; the rest of its sandbox dies
    // with it (the kernel ends a PID namespace's processes after its first), a moment later.
    expect(await waitFor(() => findProcesses(`touch ${marker}`).length === 0, 5_000)).toBe(true);
    expect(existsSync(marker)).toBe(false);
    expect(sandboxes.stats).toMatchObject({ warm: 0, discarded: 1 });
    await sandboxes.close();
  });

  test('a sandbox that does not match its plan once set up is never sent a frame', async () => {
    const spawner = recordingSpawner();
    const sandboxes = new WarmSandboxes(spawner, { size: 1 });
    const first = await planOf('true', 'ready-state');
    // A plan whose check passes for the cold run, then (before the next sandbox is set up for
    // it) wants a mount no sandbox has: the next sandbox fails its check once set up.
    const mounted = [...first.launch.check.mounted];
    const launch: SandboxLaunch = { ...first.launch, check: { ...first.launch.check, mounted } };
    const started = await sandboxes.startSandboxed({ ...first.request, sandbox: launch });
    mounted.push(join(work, 'not-mounted'));
    await started.exit;
    expect(await waitFor(() => sandboxes.stats.discarded === 1, 30_000)).toBe(true);
    expect(sandboxes.stats.waiting).toBe(0);
    const marker = join(work, 'acted');
    const { request } = await planOf(`touch ${marker}`, 'ready-state');
    const result = await sandboxes.startSandboxed(request);
    expect((await result.exit).code).toBe(0);
    expect(existsSync(marker)).toBe(true);
    // The run started cold; no sandbox but those of the runs was written to beyond the cold gate's `go`.
    expect(sandboxes.stats.warm).toBe(0);
    expect([...spawner.written.values()].filter((text) => text.includes('touch'))).toEqual([]);
    await sandboxes.close();
  });

  test('PTY and background runs never take a warm sandbox', async () => {
    const gateway = gatewayWith(1);
    await gateway.exec({ command: 'true' });
    await untilWaiting(gateway);
    const before = gateway.warmSandboxes!;
    await gateway.exec({ command: 'echo pty', mode: 'pty' });
    const started = await gateway.exec({ command: 'echo bg', mode: 'background' });
    await gateway.background.wait(started.id, 30_000);
    expect(gateway.warmSandboxes).toEqual(before);
  });

  test('warmSandboxes out of range is a coded error', () => {
    expect(() => gatewayWith(9)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION' }));
    expect(() => gatewayWith(1.5)).toThrow(/whole number from 0 to 4, got `1.5` \(number\)/);
  });
});
