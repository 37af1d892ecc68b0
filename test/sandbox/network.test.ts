/*
 * The gateway's shared network namespace (src/process/bwrap/network.ts). Bubblewrap announces the
 * holder's pid on its info fd as soon as it has cloned it, before the child has finished setting
 * up (as an unprivileged user: before its uid map is written; entering then makes the next
 * bubblewrap fail with "No permissions to create new namespace"). A gateway that entered in that
 * window fell back to a network namespace per run, and a dev server started by one run was
 * unreachable from the next. Here a real bubblewrap stands behind a helper script that widens the
 * window to well over a second and refuses to be entered inside it, as bubblewrap does:
 * joining must wait for the holder to be ready, and then share its namespace.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkPlatform, SharedNetwork } from '../../src/sandbox';
import { untilEntered, type JoinMemory } from '../../src/process/bwrap/network';
import { forgetPlatformCheck, joinMemory } from '../../src/sandbox/detect';
import { createGateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { setSandboxSpecHookForTests } from '../../src/sandbox/plan';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const platform = checkPlatform();
const nsenter = ['/usr/bin/nsenter', '/bin/nsenter', '/usr/sbin/nsenter'].find((path) => spawnSync(path, ['--version']).status === 0);
const maybe = platform.ok && nsenter ? describe : describe.skip;

/** A bubblewrap whose holder's command starts only once `go` exists (1.5 s later), and which cannot be entered before. */
function slowHolderHelper(dir: string, bwrap: string): string {
  const script = join(dir, 'bwrap-slow-holder');
  writeFileSync(script, `#!/bin/bash
state='${dir}'
if [[ " $* " == *" --info-fd "* ]]; then
  : > "$state/holder"
  ( sleep 1.5; : > "$state/go" ) </dev/null >/dev/null 2>&1 3>&- &
  args=(); wrapped=0
  for arg in "$@"; do
    args+=("$arg")
    if [[ $wrapped == 0 && $arg == -- ]]; then
      wrapped=1
      args+=(/bin/sh -c 'while [ ! -e "$0/go" ]; do sleep 0.02; done; exec "$@"' "$state")
    fi
  done
  exec '${bwrap}' "\${args[@]}"
fi
if [ -e "$state/holder" ] && [ ! -e "$state/go" ]; then
  echo 'bwrap: No permissions to create new namespace (entered before the holder was set up)' >&2
  exit 1
fi
exec '${bwrap}' "$@"
`);
  chmodSync(script, 0o755);
  return script;
}

maybe('the shared network namespace', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let network: SharedNetwork | undefined;

  beforeEach(() => {
    tmp = makeTempDir('execgate-sbx-network-');
  });
  afterEach(() => {
    network?.close();
    network = undefined;
    tmp.cleanup();
  });

  test('joining waits until the holder is set up, then every entry lands in its namespace', async () => {
    const helper = slowHolderHelper(tmp.dir, (platform as { helper: string }).helper);
    network = new SharedNetwork(helper);
    const join = await network.join();
    expect(join).toBeDefined();
    expect(join!.namespace).toMatch(/^net:\[\d+\]$/);
    const enter = (): string => {
      const [program, ...prefix] = join!.prefix;
      const run = spawnSync(program!, [...prefix, '--ro-bind', '/', '/', '--', '/bin/sh', '-c', 'readlink /proc/self/ns/net'], { encoding: 'utf8' });
      expect(run.stderr).toBe('');
      return run.stdout.trim();
    };
    expect(enter()).toBe(join!.namespace);
    expect(enter()).toBe(join!.namespace);
    // The same holder for a later join, not a new namespace.
    expect((await network.join())?.namespace).toBe(join!.namespace);
    expect(readlinkSelf()).not.toBe(join!.namespace);
  });

  test('a holder that ends before it is ready: no shared namespace (runs fall back to one each), nothing hangs', async () => {
    // The holder's command exits at once, before it says ready: join() gives up instead of waiting.
    const dying = join(tmp.dir, 'bwrap-dying-holder');
    writeFileSync(dying, `#!/bin/bash\nargs=(); for arg in "$@"; do [[ $arg == -- ]] && break; args+=("$arg"); done\nexec '${(platform as { helper: string }).helper}' "\${args[@]}" -- /bin/sh -c 'exit 0'\n`);
    chmodSync(dying, 0o755);
    network = new SharedNetwork(dying);
    expect(await network.join()).toBeUndefined();
  });

  test('a gateway whose shared namespace cannot be started says so once, and its runs still run sandboxed with a loopback each', async () => {
    const dying = join(tmp.dir, 'bwrap-dying-holder');
    writeFileSync(dying, `#!/bin/bash\nif [[ " $* " == *" --info-fd "* ]]; then args=(); for arg in "$@"; do [[ $arg == -- ]] && break; args+=("$arg"); done; exec '${(platform as { helper: string }).helper}' "\${args[@]}" -- /bin/sh -c 'exit 0'; fi\nexec '${(platform as { helper: string }).helper}' "$@"\n`);
    chmodSync(dying, 0o755);
    const warnings: string[] = [];
    const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' as const, helper: dying }, network: { ...DEFAULT_POLICY.network, mode: 'none' as const, allow: [], deny: [] } };
    const gateway = createGateway({ policy, home: join(tmp.dir, 'state'), env: baseEnv(), cwd: tmp.dir, logger: { warn: (_obj: object, msg: string): void => { warnings.push(msg); } } });
    try {
      for (let i = 0; i < 2; i += 1) {
        const result = await gateway.exec({ command: 'readlink /proc/self/ns/net' });
        expect(result.exitCode).toBe(0);
        expect(result.stdout.trim()).not.toBe(readlinkSelf());
      }
    } finally {
      await gateway.close();
    }
    expect(warnings.filter((w) => w.includes('do not share a network namespace'))).toHaveLength(1);
  });

  /*
   * A run joins the shared namespace by the holder's pid (nsenter --net=/proc/PID/ns/net); a holder
   * that died and whose pid went to another process would put the run in that process's network.
   * The gate's check compares the sandbox's namespace with the one the plan names: here bubblewrap
   * is told to make a namespace of its own after entering (the plan's check still names the
   * shared one), and the run is refused with nothing run.
   */
  test.each([['cold', 0], ['warm', 1]] as const)('%s: a sandbox that is not in the shared namespace the plan names runs nothing', async (_name, warmSandboxes) => {
    const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' as const }, network: { ...DEFAULT_POLICY.network, mode: 'none' as const, allow: [], deny: [] } };
    const gateway = createGateway({ policy, home: join(tmp.dir, 'state'), env: baseEnv(), cwd: tmp.dir, warmSandboxes });
    const marker = join(tmp.dir, 'ran');
    try {
      const shared = (await gateway.exec({ command: 'readlink /proc/self/ns/net' })).stdout.trim();
      expect(shared).toMatch(/^net:\[\d+\]$/);
      expect(shared).not.toBe(readlinkSelf());
      setSandboxSpecHookForTests((spec) => ({ ...spec, unshare: [...spec.unshare, 'net'] }));
      await expect(gateway.exec({ command: `touch ${marker}` })).rejects.toMatchObject({
        code: 'EXECGATE_ERR_SANDBOX_MISMATCH',
        details: { mismatch: expect.stringContaining(`not the gateway's shared ${shared}`) },
      });
      expect(existsSync(marker)).toBe(false);
      setSandboxSpecHookForTests(undefined);
      expect((await gateway.exec({ command: 'readlink /proc/self/ns/net' })).stdout.trim()).toBe(shared);
    } finally {
      setSandboxSpecHookForTests(undefined);
      await gateway.close();
    }
  });

  test('untilEntered resolves once a process that enters late is inside the namespace (what a kept background run waits for)', async () => {
    network = new SharedNetwork((platform as { helper: string }).helper);
    const join = await network.join();
    expect(join).toBeDefined();
    const [nsenter, ...prefix] = join!.prefix;
    const target = prefix.slice(0, prefix.indexOf('--'));
    // Enters once `go` exists, written after the wait began: the same pid, first in this
    // namespace, then in the shared one (a file, not a delay: on a loaded machine this test could
    // look later than a delay lasts).
    const go = `${tmp.dir}/go`;
    const late = spawn('/bin/sh', ['-c', 'while [ ! -e "$0" ]; do sleep 0.02; done; exec "$@"', go, nsenter!, ...target, '--', 'sleep', '10'], { stdio: 'ignore' });
    try {
      expect(readlinkSync(`/proc/${late.pid}/ns/net`)).toBe(readlinkSelf());
      const entered = untilEntered(late.pid!, join!.namespace, 60_000);
      writeFileSync(go, '');
      await entered;
      expect(readlinkSync(`/proc/${late.pid}/ns/net`)).toBe(join!.namespace);
    } finally {
      late.kill('SIGKILL');
    }
  });

  /*
   * Entering the namespace is probed once (nsenter, bubblewrap, a shell), remembered in the state
   * directory, and not probed again while the platform is the same (sandbox/detect.ts recallJoin).
   * A bubblewrap that logs each call that is not the holder's shows which starts probed.
   */
  function loggingHelper(): { helper: string; probes: () => number } {
    const log = join(tmp.dir, 'calls');
    const refuse = join(tmp.dir, 'refuse');
    const helper = join(tmp.dir, 'bwrap-logging');
    writeFileSync(helper, `#!/bin/bash
if [[ " $* " != *" --info-fd "* ]]; then
  echo "$*" >> '${log}'
  if [ -e '${refuse}' ]; then echo 'bwrap: entering refused' >&2; exit 1; fi
fi
exec '${(platform as { helper: string }).helper}' "$@"
`);
    chmodSync(helper, 0o755);
    return { helper, probes: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((line) => line.endsWith('exit 0')).length : 0) };
  }
  function memoryOf(): JoinMemory & { remembered: Set<string> } {
    const remembered = new Set<string>();
    return { remembered, recall: (path) => remembered.has(path), remember: (path) => { remembered.add(path); } };
  }

  test('entering is probed once, remembered, and taken on that word by the next holder, which can be entered', async () => {
    const { helper, probes } = loggingHelper();
    const memory = memoryOf();
    network = new SharedNetwork(helper, undefined, memory);
    const first = await network.join();
    expect(first).toBeDefined();
    expect(probes()).toBe(1);
    expect(network.unverified).toBe(false);
    expect([...memory.remembered]).toEqual([first!.prefix[0]]);
    network.close();
    network = new SharedNetwork(helper, undefined, memory);
    const second = await network.join();
    expect(second).toBeDefined();
    // Another holder. Not told by the namespace's number: the kernel gives a new namespace the
    // lowest free number, which is the first one's once that has been freed with its holder.
    const holderOf = (joined: { prefix: readonly string[] }): string | undefined => joined.prefix.find((arg) => arg.startsWith('--net='));
    expect(holderOf(second!)).toMatch(/^--net=\/proc\/\d+\/ns\/net$/);
    expect(holderOf(second!)).not.toBe(holderOf(first!));
    expect(probes()).toBe(1);
    expect(network.unverified).toBe(true);
    const [program, ...prefix] = second!.prefix;
    const entered = spawnSync(program!, [...prefix, '--ro-bind', '/', '/', '--', '/bin/sh', '-c', 'readlink /proc/self/ns/net'], { encoding: 'utf8' });
    expect(entered.stdout.trim()).toBe(second!.namespace);
    // Probed on demand (a run failed to set up): it passes, and the namespace is verified from then on.
    expect(await network.reprobe()).toBe(true);
    expect(probes()).toBe(2);
    expect(network.unverified).toBe(false);
  });

  test('a remembered join that no longer works: the probe made after a failed run closes the namespace', async () => {
    const { helper, probes } = loggingHelper();
    const memory = memoryOf();
    memory.remembered.add(nsenter!);
    network = new SharedNetwork(helper, undefined, memory);
    const taken = await network.join();
    expect(taken).toBeDefined();
    expect(probes()).toBe(0);
    writeFileSync(join(tmp.dir, 'refuse'), '');
    expect(await network.reprobe()).toBe(false);
    expect(probes()).toBe(1);
    // Closed: no holder to hand out any more.
    expect(network.holderPid(taken!.namespace)).toBeUndefined();
  });

  test('the remembered join is keyed by the helper and nsenter\'s file, and forgotten with the platform check', () => {
    const state = join(tmp.dir, 'state-join');
    spawnSync('mkdir', ['-p', state]);
    const helper = (platform as { helper: string }).helper;
    const memory = joinMemory(state, helper);
    expect(memory.recall(nsenter!)).toBe(false);
    memory.remember(nsenter!);
    expect(memory.recall(nsenter!)).toBe(true);
    expect(joinMemory(state, loggingHelper().helper).recall(nsenter!)).toBe(false);
    const copy = join(tmp.dir, 'nsenter-copy');
    copyFileSync(nsenter!, copy);
    expect(memory.recall(copy)).toBe(false);
    forgetPlatformCheck(state);
    expect(memory.recall(nsenter!)).toBe(false);
  });

  test('a gateway whose remembered join is wrong: the run that fails says so, and the next run probes and runs with a loopback of its own', async () => {
    // Refuses to start inside any network namespace but this process's: entering never works.
    const refusing = join(tmp.dir, 'bwrap-not-entered');
    writeFileSync(refusing, `#!/bin/bash
if [[ " $* " != *" --info-fd "* && "$(readlink /proc/self/ns/net)" != '${readlinkSelf()}' ]]; then echo 'bwrap: refused in an entered namespace' >&2; exit 1; fi
exec '${(platform as { helper: string }).helper}' "$@"
`);
    chmodSync(refusing, 0o755);
    const state = join(tmp.dir, 'state');
    spawnSync('mkdir', ['-p', state]);
    joinMemory(state, refusing).remember(nsenter!);
    const warnings: string[] = [];
    const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required' as const, helper: refusing }, network: { ...DEFAULT_POLICY.network, mode: 'none' as const, allow: [], deny: [] } };
    const gateway = createGateway({ policy, home: state, env: baseEnv(), cwd: tmp.dir, warmSandboxes: 0, logger: { warn: (_obj: object, msg: string): void => { warnings.push(msg); } } });
    const marker = join(tmp.dir, 'ran');
    try {
      await expect(gateway.exec({ command: `touch ${marker}` })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_FAILED' });
      expect(existsSync(marker)).toBe(false);
      expect(joinMemory(state, refusing).recall(nsenter!)).toBe(false);
      for (let i = 0; i < 2; i += 1) {
        const result = await gateway.exec({ command: 'readlink /proc/self/ns/net' });
        expect(result.exitCode).toBe(0);
        expect(result.stdout.trim()).toMatch(/^net:\[\d+\]$/);
        expect(result.stdout.trim()).not.toBe(readlinkSelf());
      }
    } finally {
      await gateway.close();
    }
    expect(warnings.filter((w) => w.includes('do not share a network namespace'))).toHaveLength(1);
  });
});

function readlinkSelf(): string {
  return spawnSync('readlink', ['/proc/self/ns/net'], { encoding: 'utf8' }).stdout.trim();
}
