/*
 * What an executor needs from whatever starts its process: a pid (also the process group id,
 * every run is spawned detached), the three stdio streams, and how the process ended. Two
 * implementations: `direct` (child_process.spawn in this process) and `helper` (a small
 * long-lived process spawns, see helper.ts).
 */
import type { Readable, Writable } from 'node:stream';
import type { SandboxLaunch } from '../bwrap/launch';
import type { SandboxInit } from '../bwrap/verify';

export interface SpawnRequest {
  readonly shell: string;
  readonly args: readonly string[];
  /** The child's whole environment (resolved values included); never put on any argv. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** `ignore`: /dev/null (sync mode). `pipe`: a writable stream the caller feeds (background). */
  readonly stdin: 'ignore' | 'pipe';
  /** Run on a pseudo-terminal of this size (stdout carries both streams); see pty.ts. */
  readonly terminal?: { readonly cols: number; readonly rows: number };
  /**
   * Sandboxed: how bubblewrap is started around `shell` + `args`, which then run inside (in `cwd`,
   * entered there); see process/bwrap/launch.ts and process/bwrap/gate.ts.
   */
  readonly sandbox?: SandboxLaunch;
  /**
   * Sandboxed: settles once the program may act (the run's start record is durable). The sandbox
   * is set up and checked meanwhile; the program is let go only after it resolves, and a rejection
   * ends the sandbox with nothing of the run started and is the spawn's error.
   */
  readonly ready?: Promise<void>;
  /**
   * Settles once the run's result has been handed to its caller (its end record written). Work a
   * spawner does for the runs after this one (setting the next warm sandbox up: a fork of this
   * process and bubblewrap's set-up on the same cores) waits for it, so that it does not delay
   * this run's result. Absent: the process's exit.
   */
  readonly settled?: Promise<unknown>;
}

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface SpawnedProcess {
  readonly pid: number;
  readonly stdin: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Settles once: resolves when the process exits, rejects (EXECGATE_ERR_SPAWN_FAILED) when its
   * end can no longer be known (the helper died). A promise, not an event, so an exit that
   * happens before the caller listens is not lost.
   */
  readonly exit: Promise<ProcessExit>;
  /**
   * Resolves once the process has ended even though its output may still be open (a PTY master
   * still holding buffered bytes). Absent: `exit` says it.
   */
  readonly exited?: Promise<void>;
  /**
   * Read what is left of the output without waiting; true once its end was reached. For a
   * terminal, whose end (EIO) the event loop may never be told about.
   */
  readonly readRest?: () => boolean;
  /** Stop reading output now (the drain gave up); absent: the caller destroys the streams. */
  readonly release?: () => void;
  /** Whether the process and its streams keep this process's event loop alive (default: they do). */
  readonly setRef?: (on: boolean) => void;
  /**
   * Hands every later read of `stdout` or `stderr` to `sink`, synchronously, as a view of a
   * buffer that the next read overwrites (nothing is allocated per read; see
   * spawner/output-reader.ts); the stream then only ends. False (nothing changes) while the
   * stream still holds bytes read earlier. Absent: read the streams. Carried through wrappers
   * that spread this object (the sandbox gate's), whose own streams hold only what was read
   * before the claim.
   */
  readonly claim?: (name: 'stdout' | 'stderr', sink: (bytes: Buffer) => void) => boolean;
  /** Sandboxed: the sandbox's first process (PID 1 inside), as this process saw it at the gate. */
  readonly sandboxInit?: SandboxInit;
}

export type SpawnerKind = 'direct' | 'helper' | 'auto';

export interface Spawner {
  /**
   * Resolves once the process runs (pid known, streams connected); rejects if it could not start.
   * A request with `sandbox` starts bubblewrap around the program as it is (no gate); runs are
   * started through process/bwrap/gate.ts, which adds the gate, or through `startSandboxed`.
   */
  spawn(request: SpawnRequest): Promise<SpawnedProcess>;
  /** A sandboxed run started this spawner's own way (a terminal's gate, a warm sandbox); default: the pipe gate over `spawn`. */
  startSandboxed?(request: SpawnRequest & { readonly sandbox: SandboxLaunch }): Promise<SpawnedProcess>;
  /** Stop any helper process; runs still in flight keep running but are no longer reported. */
  close(): Promise<void>;
}
