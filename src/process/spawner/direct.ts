/*
 * Spawning in this process: child_process.spawn, which on Linux is a fork(2) of this process.
 * Its cost grows with this process's resident memory (page tables are copied) and blocks the
 * event loop meanwhile; helper.ts avoids that for large hosts.
 *
 * The child's stdout and stderr are pipes this process made (pipes.ts), not child_process's
 * sockets: a program may open them by name (/dev/stdout, /proc/self/fd/2). They are read into a
 * reused buffer (output-reader.ts); the run's reader claims them (SpawnedProcess.claim).
 */
import { spawn, type ChildProcess, type StdioPipe } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { closeFds, renderLaunch, type RenderedLaunch } from '../bwrap/launch';
import { OutputReader } from './output-reader';
import { closePipe, getPipePool, type PipePair } from './pipes';
import type { ProcessExit, SpawnedProcess, Spawner, SpawnRequest } from './types';

export async function spawnDirect(request: SpawnRequest): Promise<SpawnedProcess> {
  const pipes = await getPipePool().take().catch(() => undefined);
  return spawnWith(request, pipes);
}

function spawnWith(request: SpawnRequest, pipes: [PipePair, PipePair] | undefined): Promise<SpawnedProcess> {
  let child: ChildProcess;
  let launch: RenderedLaunch | undefined;
  const outputs: [number | StdioPipe, number | StdioPipe] = pipes ? [pipes[0].write, pipes[1].write] : ['pipe', 'pipe'];
  // The readers first: nothing that can fail comes between the spawn and the run's streams, so
  // a run never starts without a reader (it would run unrecorded, reported as not started).
  let readers: [OutputReader, OutputReader] | undefined;
  if (pipes) {
    const made: OutputReader[] = [];
    try {
      for (const pair of pipes) made.push(new OutputReader(pair.read));
    } catch (error) {
      // A reader owns its descriptor from its construction on; the others are closed here.
      made.forEach((reader) => reader.destroy());
      pipes.forEach((pair, index) => { if (index >= made.length) closePipe(pair); else closeSync(pair.write); });
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    readers = made as [OutputReader, OutputReader];
  }
  try {
    // Sandboxed: bubblewrap reads its options from descriptor 3 and mounts descriptors opened
    // (and checked) here; see process/bwrap/launch.ts. It starts in `/`: the run's directory is
    // entered inside the sandbox.
    launch = request.sandbox === undefined ? undefined : renderLaunch(request.sandbox, [request.shell, ...request.args]);
    child = launch
      ? spawn(launch.file, launch.args, { cwd: '/', env: request.env, detached: true, stdio: [request.stdin, ...outputs, 'pipe', ...launch.fds] })
      : spawn(request.shell, request.args as string[], { cwd: request.cwd, env: request.env, detached: true, stdio: [request.stdin, ...outputs] });
  } catch (error) {
    readers?.forEach((reader) => reader.destroy());
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  } finally {
    // The child holds its own copies from the fork on; bubblewrap closes them once mounted.
    if (launch) closeFds(launch.fds);
    // Likewise the write ends of its output pipes: held here, they would keep the pipes from ending.
    if (pipes) for (const pair of pipes) closeSync(pair.write);
  }
  const stdout: Readable = readers ? readers[0] : child.stdout!;
  const stderr: Readable = readers ? readers[1] : child.stderr!;
  if (launch) {
    const options = child.stdio[3] as Writable | null;
    options?.on('error', () => { /* bubblewrap exited before reading: its exit says why */ });
    options?.end(launch.data);
  }
  if (child.pid === undefined) {
    readers?.forEach((reader) => reader.destroy());
    return new Promise((_resolve, reject) => child.once('error', reject));
  }
  const exit = new Promise<ProcessExit>((resolve, reject) => {
    // A spawn error after a pid was assigned is rare (exec failure surfaces as exit 126/127).
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  exit.catch(() => { /* the caller handles it */ });
  const setRef = (on: boolean): void => {
    for (const handle of [child, child.stdin, stdout, stderr] as Array<{ ref?: () => void; unref?: () => void } | null>) {
      if (on) handle?.ref?.();
      else handle?.unref?.();
    }
  };
  const claim = readers ? (name: 'stdout' | 'stderr', sink: (bytes: Buffer) => void): boolean => readers[name === 'stdout' ? 0 : 1].claim(sink) : undefined;
  return Promise.resolve({ pid: child.pid, stdin: child.stdin, stdout, stderr, exit, setRef, ...(claim ? { claim } : {}) });
}

export const directSpawner: Spawner = Object.freeze({
  spawn: spawnDirect,
  close: async (): Promise<void> => { /* nothing held */ },
});
