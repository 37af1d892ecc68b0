/*
 * Starting a command on a pseudo-terminal with node-pty, loaded on first use so that hosts that
 * never ask for a PTY never load the native module. node-pty makes the child a session leader
 * with the terminal as its controlling TTY, so its pid is also its process group id and the
 * same group kill and cookie sweep apply as for pipes.
 *
 * Reading the master to the end: node-pty reports the exit only once the master stream has
 * closed, and if it has not closed 200 ms after the process ended it destroys the stream,
 * dropping whatever the kernel still buffers (under load, the last kilobytes of a large
 * output); and the EIO that marks the end of a terminal whose last holder is gone often never
 * reaches the stream. So that destroy is intercepted and becomes the `exited` signal (the
 * process is gone, its output is not), and `readRest()` reads the master directly, without
 * blocking, until EIO: the end, every byte read. EAGAIN means something still holds the
 * terminal (a leftover that was kept); the lifecycle then waits, bounded, and `release()`s.
 */
import { readSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { PassThrough, Writable, type Readable } from 'node:stream';
import type { IPty } from '@lydell/node-pty';
import { ExecgateError } from '../../errors';
import { closeBindSources, openBindSources } from '../../sandbox/sources';
import type { ProcessExit, SpawnedProcess, Spawner, SpawnRequest } from './types';

let nodePty: typeof import('@lydell/node-pty') | undefined;

function loadNodePty(): typeof import('@lydell/node-pty') {
  if (!nodePty) {
    try {
      nodePty = require('@lydell/node-pty') as typeof import('@lydell/node-pty');
    } catch (error) {
      throw new ExecgateError(
        'EXECGATE_ERR_MODE_UNAVAILABLE',
        `PTY mode needs the node-pty module, which could not be loaded (${(error as Error).message}). Reinstall execgate so that the prebuilt @lydell/node-pty package for this platform is installed.`,
        { mode: 'pty' },
        { cause: error },
      );
    }
  }
  return nodePty;
}

/** node-pty reports signals as numbers (0 = none). */
export function getSignalName(signal: number | undefined): NodeJS.Signals | null {
  if (!signal) return null;
  const entry = Object.entries(osConstants.signals).find(([, number]) => number === signal);
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null;
}

/** The master side of the terminal: node-pty's own read stream (not part of its typed API). */
interface PtyInternals {
  readonly _socket: Readable & { destroy(error?: Error): Readable };
  readonly _fd: number;
}

/*
 * node-pty cannot hand a child extra descriptors, so a sandboxed PTY run starts with a small
 * bash (dash cannot open descriptors above 9) that opens each bind source itself, checks that what it opened is the inode this process
 * opened and checked (`-ef` against /proc/PID/fd/N, see sandbox/sources.ts), and execs
 * bubblewrap with those descriptors. Paths only on its argv; the environment is the run's, as
 * bubblewrap's would be.
 */
const BIND_SCRIPT = [
  'gw=$1; shift; n=3',
  'while [ "$1" != -- ]; do',
  '  if ! { eval "exec $n<\"\\$2\"" && [ "/proc/self/fd/$n" -ef "/proc/$gw/fd/$1" ]; } 2>/dev/null; then',
  '    printf "execgate: %s changed while its sandbox was being set up; nothing was run\\n" "$2" >&2; exit 125',
  '  fi',
  '  n=$((n + 1)); shift 2',
  'done',
  'shift; exec "$@"',
].join('\n');

/** The program node-pty starts: bubblewrap behind BIND_SCRIPT when there are sources to bind. */
function getProgram(request: SpawnRequest): { shell: string; args: string[]; fds: number[] } {
  if (request.programAt === undefined) return { shell: request.shell, args: [...request.args], fds: [] };
  const sources = openBindSources(request.args, request.programAt);
  if (sources.fds.length === 0) return { shell: request.shell, args: sources.args, fds: [] };
  const pairs = sources.fds.flatMap((fd, i) => [String(fd), sources.paths[i] as string]);
  return { shell: '/bin/bash', args: ['--norc', '--noprofile', '-c', BIND_SCRIPT, 'execgate-bind', String(process.pid), ...pairs, '--', request.shell, ...sources.args], fds: sources.fds };
}

export function spawnPty(request: SpawnRequest): SpawnedProcess {
  const pty = loadNodePty();
  const env = { ...request.env };
  if (!env.TERM) env.TERM = 'xterm-256color';
  let term: IPty;
  const program = getProgram(request);
  try {
    term = pty.spawn(program.shell, program.args, {
      name: env.TERM,
      cols: request.terminal?.cols ?? 80,
      rows: request.terminal?.rows ?? 24,
      cwd: request.cwd,
      env,
      encoding: null,
    } as Parameters<typeof pty.spawn>[2]);
  } catch (error) {
    closeBindSources(program.fds);
    throw new ExecgateError(
      'EXECGATE_ERR_SPAWN_FAILED',
      `Could not start \`${request.shell}\` on a pseudo-terminal in \`${request.cwd}\`: ${(error as Error).message}.`,
      { shell: request.shell },
      { cause: error },
    );
  }
  const { _socket: master, _fd: fd } = term as unknown as PtyInternals;
  const destroy = master.destroy.bind(master);
  let released = false;
  let markExited!: () => void;
  const exited = new Promise<void>((resolve) => { markExited = resolve; });
  master.destroy = (error?: Error): Readable => {
    if (released || error) return destroy(error);
    markExited(); // node-pty's post-exit timer: the process is gone, keep reading
    return master;
  };
  const exit = new Promise<ProcessExit>((resolve) => {
    term.onExit(({ exitCode, signal }) => {
      // Held until the end: the bash above compares against them before bubblewrap starts.
      closeBindSources(program.fds);
      const name = getSignalName(signal);
      markExited();
      resolve({ code: name ? null : exitCode, signal: name });
    });
  });
  // The terminal merges both streams: stdout carries it all, stderr stays empty.
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  master.on('data', (chunk: Buffer) => stdout.write(chunk));
  master.on('error', () => { /* EIO: the end; the close that follows ends the streams */ });
  const release = (): void => {
    if (released) return;
    released = true;
    stdout.end();
    stderr.end();
    destroy();
  };
  master.once('close', release);
  const chunk = Buffer.allocUnsafe(65_536);
  const readRest = (): boolean => {
    if (released) return true;
    for (;;) {
      let read: number;
      try {
        read = readSync(fd, chunk, 0, chunk.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return false;
        release(); // EIO: no process holds the terminal and every byte was read
        return true;
      }
      if (read === 0) {
        release();
        return true;
      }
      stdout.write(Buffer.from(chunk.subarray(0, read)));
    }
  };
  const stdin = new Writable({
    write(data: Buffer, _encoding, callback) {
      term.write(data.toString('utf8'));
      callback();
    },
  });
  return { pid: term.pid, stdin, stdout, stderr, exit, exited, readRest, release };
}

export const ptySpawner: Spawner = Object.freeze({
  spawn: (request: SpawnRequest): Promise<SpawnedProcess> => {
    try {
      return Promise.resolve(spawnPty(request));
    } catch (error) {
      return Promise.reject(error);
    }
  },
  close: async (): Promise<void> => { /* nothing held */ },
});
