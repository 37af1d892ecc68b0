/*
 * A stop signals the processes of a run's PID namespace, found through the sandbox's first
 * process. That process is known by pid, PID namespace and start time as the gate saw it: once
 * the sandbox has ended its pid can belong to anyone (a process of the gateway's own namespace
 * included), and "that pid's namespace" would then be the host's. A stale identity finds no
 * namespace and signals nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { listNamespace, terminateRun } from '../../src/process/terminate';
import { checkPlatform } from '../../src/sandbox';
import { findSandboxInit, identifySandboxInit, isSameInit, type SandboxInit } from '../../src/process/bwrap/verify';
import { isAlive, waitFor } from '../helpers/tmp';
import { describeSandboxed } from './helpers';

function startSandbox(): ChildProcess {
  const helper = checkPlatform();
  if (!helper.ok) throw new Error(helper.reason);
  return spawn(helper.helper, ['--unshare-pid', '--unshare-user', '--dev-bind', '/', '/', '--proc', '/proc', '--', 'sh', '-c', 'sleep 60 & sleep 60'], { detached: true, stdio: 'ignore' });
}

async function identify(launcher: ChildProcess): Promise<SandboxInit> {
  let init: SandboxInit | undefined;
  await waitFor(() => {
    const pid = findSandboxInit(launcher.pid as number);
    init = pid === undefined ? undefined : identifySandboxInit(pid);
    return init !== undefined && listNamespace(init).length >= 2;
  }, 20_000);
  if (init === undefined) throw new Error('no sandbox init found');
  return init;
}

describeSandboxed('the sandbox\'s first process is known by its identity, not its pid', () => {
  test('a live sandbox: its namespace is listed; a process of the gateway\'s own namespace is never an init', async () => {
    const launcher = startSandbox();
    try {
      const init = await identify(launcher);
      expect(isSameInit(init)).toBe(true);
      expect(listNamespace(init).length).toBeGreaterThanOrEqual(2);
      expect(identifySandboxInit(process.pid)).toBeUndefined();
      expect(identifySandboxInit(launcher.pid as number)).toBeUndefined();
    } finally {
      try { process.kill(-(launcher.pid as number), 'SIGKILL'); } catch { /* gone already */ }
    }
  });

  test('an init whose pid now belongs to another process (reuse) lists nothing and a stop signals nothing outside', async () => {
    const launcher = startSandbox();
    const init = await identify(launcher);
    process.kill(-(launcher.pid as number), 'SIGKILL');
    await once(launcher, 'exit');
    expect(await waitFor(() => !isAlive(init.pid), 20_000)).toBe(true);
    expect(isSameInit(init)).toBe(false);
    expect(listNamespace(init)).toEqual([]);

    // The same pid held by a process of the gateway's own namespace, as after a reuse: a
    // bystander in a group of its own, which a stop of the dead run must not touch.
    const bystander = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    const group = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    try {
      const reused: SandboxInit = { ...init, pid: bystander.pid as number };
      expect(isSameInit(reused)).toBe(false);
      expect(listNamespace(reused)).toEqual([]);
      // The right pid and namespace with another start time (a later process) is not the init either.
      expect(isSameInit({ ...init, start: String(Number(init.start) + 1) })).toBe(false);
      const report = await terminateRun({ pgid: group.pid as number, runId: 'r-stale-init', grace: 200, sandboxInit: reused, sweep: false });
      expect(report.escalated).toBe(false);
      expect(await waitFor(() => !isAlive(group.pid as number), 20_000)).toBe(true);
      expect(isAlive(bystander.pid as number)).toBe(true);
      expect(isAlive(process.pid)).toBe(true);
    } finally {
      bystander.kill('SIGKILL');
      group.kill('SIGKILL');
    }
  });
});
