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
import { ExecgateError, spawnFailed } from '../../errors';
import { abandonAndWait, checkSandbox, helperFailed, readMark, READY, STARTED } from '../bwrap/gate';
import { closeFds, renderLaunch, type SandboxLaunch } from '../bwrap/launch';
import { getPtyGateScript, getPtyLaunchScript } from '../programs';
import { CLOSE_FDS } from '../inherited-fds';
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
 * node-pty cannot hand a child extra descriptors, so a sandboxed PTY run starts bubblewrap
 * through a small bash outside the sandbox (src/programs/pty-launch.bash) that closes what it
 * inherited, opens the sources again by path, checks each is the inode this process opened, and
 * feeds bubblewrap its options on descriptor 3.
 */
/** The program node-pty starts: the launcher behind pty-launch.bash for a sandboxed request. */
function getProgram(request: SpawnRequest): { shell: string; args: string[]; fds: number[] } {
  if (request.sandbox === undefined) return { shell: request.shell, args: [...request.args], fds: [] };
  const launch = renderLaunch(request.sandbox, [request.shell, ...request.args]);
  const options = launch.data.toString('utf8').split('\0').slice(0, -1);
  const triples = launch.sources.flatMap((source, i) => [source.kind, source.path, String(launch.fds[i])]);
  return {
    shell: '/bin/bash',
    args: ['--norc', '--noprofile', '-c', getPtyLaunchScript(CLOSE_FDS), 'execgate-launch', String(process.pid), String(launch.sources.length), String(options.length), ...triples, ...options, launch.file, ...launch.args],
    fds: launch.fds,
  };
}

/** The gate program of a terminal run (src/programs/pty-gate.bash) around the run's program. */
function getGateProgram(request: SpawnRequest): string[] {
  return ['/bin/bash', '--norc', '--noprofile', '-c', getPtyGateScript(CLOSE_FDS), 'execgate-gate', request.shell, ...request.args];
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
    });
  } catch (error) {
    closeFds(program.fds);
    throw spawnFailed(`\`${request.shell}\` on a pseudo-terminal in \`${request.cwd}\``, (error as Error).message, { details: { shell: request.shell }, cause: error });
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
      closeFds(program.fds);
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

/**
 * A sandboxed run on a terminal, behind its gate: the sandbox is set up, its mounts checked
 * (process/bwrap/verify.ts), and only then the gate's `g` goes in, unechoed; what reaches the run's
 * output starts after the gate's marks.
 */
async function startSandboxedPty(request: SpawnRequest & { readonly sandbox: SandboxLaunch }): Promise<SpawnedProcess> {
  const gate = getGateProgram(request);
  const child = spawnPty({ ...request, shell: gate[0], args: gate.slice(1) });
  const stdout = new PassThrough();
  // While the sandbox is set up, bubblewrap's exit (a sandbox it could not set up) ends the
  // wait: the master stays open after the process ends (see `exited` above), so without this
  // the marks would be awaited until SETUP_TIMEOUT_MS. What it said is read to the end and the
  // terminal released, which ends the stream readMark reads.
  let settingUp = true;
  void child.exited?.then(() => {
    if (!settingUp) return;
    if (child.readRest?.() === false) setTimeout(() => { if (settingUp) child.release?.(); }, 200).unref();
  });
  try {
    const ready = await readMark(child.stdout, READY, new PassThrough());
    if (ready !== true) throw helperFailed(ready, request.cwd);
    const init = checkSandbox(child.pid, request.sandbox.check);
    // Set up and checked while the start record was made durable; the program acts only after.
    await request.ready;
    const started = readMark(child.stdout, STARTED, stdout);
    child.stdin!.write(Buffer.from('g'));
    const said = await started;
    if (said !== true) throw helperFailed(said, request.cwd);
    settingUp = false;
    child.stdout.pipe(stdout);
    return { ...child, stdout, sandboxInit: init };
  } catch (error) {
    settingUp = false;
    await abandonAndWait(child);
    child.release?.();
    throw error;
  }
}

export const ptySpawner: Spawner = Object.freeze({
  spawn: (request: SpawnRequest): Promise<SpawnedProcess> => {
    try {
      return Promise.resolve(spawnPty(request));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  },
  startSandboxed: startSandboxedPty,
  close: async (): Promise<void> => { /* nothing held */ },
});
