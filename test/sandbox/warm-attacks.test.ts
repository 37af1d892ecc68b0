/*
 * Attacks on the warm sandbox whose frame (the run's environment, resolved values included) is
 * sent at the take, before the mount check at the take and the durable start record, the program
 * starting only at `go` (src/process/bwrap/warm.ts, src/programs/warm-stub.bash):
 *   a. the gateway closes while the waiting bash holds the frame and the start record is not yet
 *      durable: the program never starts, then or after, and nothing of the sandbox remains;
 *   b. the audit log's disk is full when the start record is written: the run fails, the program
 *      never starts, the waiting bash is gone;
 *   c. a concurrent sandboxed run of the same gateway (other PID namespace, same network
 *      namespace) looks through its /proc and its file system for the value while warm runs are
 *      handed frames: it never finds it;
 *   d. the plan changes between set-up and use (a credential file appears, the policy is
 *      reloaded to hide a directory, another working directory): the run sees the plan of now;
 *   e. the run's environment is the one a cold run gets, names the waiting bash uses for itself
 *      (a, e, x) and TMOUT (which bash's `read` obeys) included.
 */
import { existsSync, mkdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { AuditFields, AuditSink } from '../../src/audit/log';
import { createGateway, type Gateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { mountSmallDisk, testWithMounts } from '../faults/helpers';
import { baseEnv, isAlive, waitFor } from '../helpers/tmp';
import { describeSandboxed, findProcesses, makeHome, ownDescendants, sandboxPolicy } from './helpers';

jest.setTimeout(60_000);

const OFFLINE = sandboxPolicy({ mode: 'required' }, { network: { ...DEFAULT_POLICY.network, mode: 'none', allow: [], deny: [] } });

let tmp: { dir: string; cleanup: () => void };
let work: string;
let home: string;
const open: Gateway[] = [];

beforeEach(() => {
  tmp = makeHome();
  work = join(tmp.dir, 'work');
  home = join(tmp.dir, 'home');
  mkdirSync(work);
  mkdirSync(home);
});

afterEach(async () => {
  for (const gateway of open.splice(0)) await gateway.close().catch(() => undefined);
  tmp.cleanup();
});

/** A host sink that makes each `exec.started` durable only when told. */
function heldSink(): AuditSink & { release(error?: Error): void; asked(): Promise<void> } {
  const held: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  let waiting: (() => void) | undefined;
  return {
    asked: () => (held.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => { waiting = resolve; })),
    write(_event: string, _fields: AuditFields) { /* memory */ },
    writeAndSync() {
      return new Promise<void>((resolve, reject) => {
        held.push({ resolve, reject });
        waiting?.();
        waiting = undefined;
      });
    },
    release(error?: Error) {
      const next = held.shift();
      if (error) next?.reject(error);
      else next?.resolve();
    },
    close() { /* memory */ },
  };
}

async function untilWaiting(gateway: Gateway): Promise<void> {
  expect(await waitFor(() => (gateway.warmSandboxes?.waiting ?? 0) > 0, 30_000)).toBe(true);
}

/** Whether `pid` has `dir` as its working directory (the waiting bash has read its frame). */
function inDir(pid: number, dir: string): boolean {
  try {
    const cwd = statSync(`/proc/${pid}/cwd`);
    const want = statSync(dir);
    return cwd.dev === want.dev && cwd.ino === want.ino;
  } catch {
    return false;
  }
}

describeSandboxed('attacks on a warm sandbox that holds its frame before go', () => {
  test.each([['released after the close'], ['failed after the close']])('a. the gateway closes while the frame waits for go (start record %s)', async (how) => {
    const sink = heldSink();
    const gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: home }), cwd: work, audit: sink, warmSandboxes: 1 });
    open.push(gateway);
    const first = gateway.exec({ command: 'true' });
    await sink.asked();
    sink.release();
    await first;
    await untilWaiting(gateway);
    const waiting = ownDescendants(findProcesses('read -r -a l'));
    expect(waiting.length).toBeGreaterThan(0);
    const marker = join(work, 'acted');
    const run = gateway.exec({ command: `touch ${marker}; echo ran` }).then((r) => `${r.exitCode}:${r.output}`, (error: { code?: string }) => `rejected ${error.code}`);
    await sink.asked();
    // The frame is read: the waiting bash entered the run's directory.
    expect(await waitFor(() => waiting.some((pid) => inDir(pid, work)), 30_000)).toBe(true);
    const closing = gateway.close();
    await delay(200);
    if (how.startsWith('released')) sink.release();
    else sink.release(new Error('EIO'));
    await closing;
    const outcome = await run;
    // The program did not start: the run failed as closed (whether its start record became
    // durable after the close or failed), not started and then stopped.
    expect(outcome).toBe('rejected EXECGATE_ERR_GATEWAY_CLOSED');
    // Nothing of the sandbox is left (its processes die a moment after bubblewrap, by the kernel:
    // a bounded wait), so nothing can start after either; and nothing did.
    expect(await waitFor(() => waiting.filter(isAlive).length === 0, 20_000)).toBe(true);
    expect(findProcesses(`touch ${marker}`)).toEqual([]);
    expect(existsSync(marker)).toBe(false);
    console.log(`warm attack a (${how}): ${outcome}`);
  });

  testWithMounts('b. the audit log\'s disk fills up while warm runs are handed frames: a run that fails never starts', async () => {
    const disk = mountSmallDisk(512 * 1024);
    try {
      mkdirSync(join(disk.dir, 'audit'));
      const gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: home }), cwd: work, audit: { path: join(disk.dir, 'audit', 'audit.log') }, warmSandboxes: 1 });
      open.push(gateway);
      await gateway.exec({ command: 'true' });
      const outcomes: Record<string, number> = {};
      let n = 0;
      // Each time: the disk filled, one page given back, then runs until one fails; the records
      // before the start record fit or not, whichever run meets the full disk at whichever write.
      for (let round = 0; round < 4; round++) {
        disk.fill();
        const fill = join(disk.dir, '.fill');
        truncateSync(fill, Math.max(0, statSync(fill).size - 4096 * (1 + round)));
        for (let i = 0; i < 30; i++) {
          await untilWaiting(gateway);
          const discarded = gateway.warmSandboxes!.discarded;
          const marker = join(work, `acted-${n++}`);
          const result = await gateway.exec({ command: `touch ${marker}; echo ran` }).then((r) => `${r.exitCode}:${r.stdout}`, (error: { code?: string }) => `rejected ${error.code}`);
          const taken = gateway.warmSandboxes!.discarded > discarded ? ' (a taken sandbox discarded)' : '';
          outcomes[result.replace(/\n/g, '') + taken] = (outcomes[result.replace(/\n/g, '') + taken] ?? 0) + 1;
          if (result === '0:ran\n') {
            expect(existsSync(marker)).toBe(true);
            continue;
          }
          expect(result).toMatch(/^rejected EXECGATE_ERR_AUDIT/);
          await delay(300);
          expect(existsSync(marker)).toBe(false);
          expect(findProcesses(`touch ${marker}`)).toEqual([]);
          break;
        }
        disk.free();
      }
      console.log(`warm attack b: ${JSON.stringify(outcomes)}`);
      expect(Object.keys(outcomes).some((key) => key.startsWith('rejected'))).toBe(true);
      await gateway.close();
    } finally {
      disk.unmount();
    }
  });

  test('c. a concurrent run looks through its /proc and files for a value sent to waiting bashes', async () => {
    const secret = `frame-secret-${process.pid}-${Date.now()}`;
    const gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: home }), cwd: work, audit: false, warmSandboxes: 2 });
    open.push(gateway);
    gateway.refs.set('secret', 'tok', secret);
    await gateway.exec({ command: 'true' });
    await untilWaiting(gateway);
    // The scanner: every pid it can see, their environments, command lines, memory maps' files,
    // descriptors; /tmp, /dev/shm and the workspace; for as long as it is told to.
    const pattern = `frame[-]${secret.slice(6)}`; // not itself on the scanner's command line
    const scanner = `end=$((SECONDS + 12)); seen=0; while [ $SECONDS -lt $end ]; do
      for p in /proc/[0-9]*; do seen=$((seen+1)); cat $p/environ $p/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -a "${pattern}" >> $HOME/../work/found;
        for f in $p/fd/*; do timeout 0.2 cat "$f" 2>/dev/null | grep -a "${pattern}" >> $HOME/../work/found; done; done
      grep -ra "${pattern}" /tmp /dev/shm 2>/dev/null >> $HOME/../work/found
      ls /proc | grep -c '^[0-9]' >> $HOME/../work/pids; done; echo scanned`;
    const scan = await gateway.exec({ command: scanner, mode: 'background' });
    let warmRuns = 0;
    const before = gateway.warmSandboxes!.warm;
    while (gateway.background.get(scan.id).state === 'running') {
      const result = await gateway.exec({ command: 'test -n "$TOK" && echo ok', env: { TOK: '<<secret:tok>>' } });
      expect(result.stdout).toBe('ok\n');
      warmRuns += 1;
    }
    warmRuns = gateway.warmSandboxes!.warm - before;
    expect(warmRuns).toBeGreaterThan(3);
    expect(readFileSync(join(work, 'found'), 'utf8')).toBe('');
    // Only its own PID namespace: a handful of pids, never the waiting bashes' or other runs'.
    const counts = readFileSync(join(work, 'pids'), 'utf8').trim().split('\n').map(Number);
    expect(Math.max(...counts)).toBeLessThan(8);
    console.log(`warm attack c: ${warmRuns} warm runs while scanned ${counts.length} times, at most ${Math.max(...counts)} pids seen`);
  });

  test('d. the plan changes between set-up and use: a credential file, a policy reload, another directory', async () => {
    const file = join(tmp.dir, 'policy.yaml');
    writeFileSync(file, 'version: 1\nsandbox:\n  mode: required\n  network: none\n');
    mkdirSync(join(home, 'private'));
    writeFileSync(join(home, 'private', 'token'), 'SECRET-PRIVATE');
    mkdirSync(join(work, 'sub'));
    const gateway = createGateway({ policyFile: file, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: home }), cwd: work, audit: false, warmSandboxes: 1 });
    open.push(gateway);
    const show = 'pwd; cat ~/.ssh/id_rsa ~/private/token 2>&1; true';
    expect((await gateway.exec({ command: show })).stdout).toContain('SECRET-PRIVATE');
    await untilWaiting(gateway);
    // A credential file appears (its directory was missing when the sandbox was set up).
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'id_rsa'), 'SECRET-SSH');
    const afterKey = (await gateway.exec({ command: show })).stdout;
    expect(afterKey).not.toContain('SECRET-SSH');
    await untilWaiting(gateway);
    // The policy is reloaded to hide a directory the waiting sandbox shows.
    writeFileSync(file, 'version: 1\nsandbox:\n  mode: required\n  filesystem:\n    hidden: ["~/private"]\n  network: none\n');
    expect(await gateway.reloadPolicy()).toBe(true);
    const afterReload = (await gateway.exec({ command: show })).stdout;
    expect(afterReload).not.toMatch(/SECRET-/);
    await untilWaiting(gateway);
    // Another working directory than the one the sandbox was set up for.
    const other = (await gateway.exec({ command: show, cwd: join(work, 'sub') })).stdout;
    expect(other.split('\n')[0]).toBe(join(work, 'sub'));
    expect(other).not.toMatch(/SECRET-/);
  });

  test('e. the environment a warm run gets is a cold run\'s: names the waiting bash uses or obeys start cold, others warm', async () => {
    const warm = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state-w'), env: baseEnv({ HOME: home }), cwd: work, audit: false, warmSandboxes: 1 });
    const cold = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state-c'), env: baseEnv({ HOME: home }), cwd: work, audit: false, warmSandboxes: 0 });
    open.push(warm, cold);
    const command = 'for n in a e x l t b o i TMOUT LC_ALL PATH GLOBIGNORE OLDPWD PS4 ENV HISTFILE; do printf "%s=%s\\n" "$n" "$(printenv "$n")"; done; pwd; echo "$SHLVL"';
    await warm.exec({ command: 'true' });
    const cases: Array<[Record<string, string>, boolean | undefined]> = [
      [{ a: 'value-a', e: 'value-e', x: 'value-x' }, false],
      [{ l: 'value-l', t: 'value-t', b: 'value-b', o: 'value-o', i: 'value-i' }, false],
      // Not passed to a run at all (the policy's environment rules): the same either way.
      [{ TMOUT: '0.001', LC_ALL: 'xx_YY.bogus', GLOBIGNORE: '*', OLDPWD: '/nowhere', PS4: '+$(echo traced)', ENV: '/nowhere', HISTFILE: '/nowhere' }, undefined],
    ];
    for (const [env, warmed] of cases) {
      await untilWaiting(warm);
      const before = warm.warmSandboxes!.warm;
      const fromWarm = await warm.exec({ command, env });
      const used = warm.warmSandboxes!.warm - before;
      const fromCold = await cold.exec({ command, env });
      expect({ env, out: fromWarm.stdout, err: fromWarm.stderr, code: fromWarm.exitCode }).toEqual({ env, out: fromCold.stdout, err: fromCold.stderr, code: fromCold.exitCode });
      if (warmed !== undefined) expect({ env, warm: used }).toEqual({ env, warm: warmed ? 1 : 0 });
    }
  });
});
