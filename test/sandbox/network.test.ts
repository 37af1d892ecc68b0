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
import { chmodSync, existsSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkPlatform, SharedNetwork } from '../../src/sandbox';
import { untilEntered } from '../../src/process/bwrap/network';
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
});

function readlinkSelf(): string {
  return spawnSync('readlink', ['/proc/self/ns/net'], { encoding: 'utf8' }).stdout.trim();
}
