/*
 * Spawning in this process: child_process.spawn, which on Linux is a fork(2) of this process.
 * Its cost grows with this process's resident memory (page tables are copied) and blocks the
 * event loop meanwhile; helper.ts avoids that for large hosts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { closeFds, renderLaunch, type RenderedLaunch } from '../bwrap/launch';
import type { ProcessExit, SpawnedProcess, Spawner, SpawnRequest } from './types';

export function spawnDirect(request: SpawnRequest): Promise<SpawnedProcess> {
  let child: ChildProcess;
  let launch: RenderedLaunch | undefined;
  try {
    // Sandboxed: bubblewrap reads its options from descriptor 3 and mounts descriptors opened
    // (and checked) here; see process/bwrap/launch.ts. It starts in `/`: the run's directory is
    // entered inside the sandbox.
    launch = request.sandbox === undefined ? undefined : renderLaunch(request.sandbox, [request.shell, ...request.args]);
    child = launch
      ? spawn(launch.file, launch.args, { cwd: '/', env: request.env, detached: true, stdio: [request.stdin, 'pipe', 'pipe', 'pipe', ...launch.fds] })
      : spawn(request.shell, request.args as string[], { cwd: request.cwd, env: request.env, detached: true, stdio: [request.stdin, 'pipe', 'pipe'] });
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  } finally {
    // The child holds its own copies from the fork on; bubblewrap closes them once mounted.
    if (launch) closeFds(launch.fds);
  }
  if (launch) {
    const options = child.stdio[3] as Writable | null;
    options?.on('error', () => { /* bubblewrap exited before reading: its exit says why */ });
    options?.end(launch.data);
  }
  if (child.pid === undefined) {
    return new Promise((_resolve, reject) => child.once('error', reject));
  }
  const exit = new Promise<ProcessExit>((resolve, reject) => {
    // A spawn error after a pid was assigned is rare (exec failure surfaces as exit 126/127).
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  exit.catch(() => { /* the caller handles it */ });
  const setRef = (on: boolean): void => {
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?: () => void; unref?: () => void } | null>) {
      if (on) handle?.ref?.();
      else handle?.unref?.();
    }
  };
  return Promise.resolve({ pid: child.pid, stdin: child.stdin, stdout: child.stdout!, stderr: child.stderr!, exit, setRef });
}

export const directSpawner: Spawner = Object.freeze({
  spawn: spawnDirect,
  close: async (): Promise<void> => { /* nothing held */ },
});
