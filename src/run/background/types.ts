/*
 * Shapes of background runs. A BackgroundProcess is safe to hand to an agent: its command is
 * the unresolved one and its output file holds redacted bytes only.
 */
import type { EgressSummary } from '../../egress/describe';
import type { EgressDecision } from '../../egress/proxy';
import type { Spawner } from '../../process/spawner/types';

/**
 * Where a background run stands: still running, exited, killed, timed out, failed to start or to
 * finish cleanly, or `lost`: the run's end was never recorded (its supervising process died, or
 * could not write it); whichever process notices first records it as lost, with the reason.
 */
export type BackgroundState = 'running' | 'exited' | 'killed' | 'timed_out' | 'failed' | 'lost';

/**
 * A background run as an agent may see it: its command is the unresolved one (tokens as written)
 * and its output file holds redacted bytes only.
 */
export interface BackgroundProcess {
  readonly id: string;
  /** The unresolved command (tokens as written). */
  readonly command: string;
  readonly pid: number;
  readonly pgid: number;
  readonly state: BackgroundState;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly startedAt: string;
  readonly endedAt: string | null;
  /** Redacted output (stdout and stderr combined), then one completion line. */
  readonly outputPath: string;
  readonly cwd: string;
  readonly pty: boolean;
  /** Whether it runs in the OS sandbox (the audit record says how, or why not). */
  readonly sandboxed?: boolean;
  /** Why it ended, when it did not simply exit (killed, timed out, failed, gateway closed, lost). */
  readonly reason?: string;
  /** Output the file could not take (a full disk): how many bytes are missing from it, and why. */
  readonly notice?: string;
  /**
   * The run's egress decisions so far (host, port, allowed or refused, why), oldest first, when it
   * goes through an egress proxy. A detached run (a CLI background run, kept by its supervisor)
   * has them as of its record's last writing, at its start and at its end; the audit log has
   * each as it happens (`egress.decision` under the run's id).
   */
  readonly egress?: readonly EgressSummary[];
}

/**
 * A slice of a background run's output file, with the offsets to read the next one.
 */
export interface OutputSlice {
  /** Decoded UTF-8; a slice never ends inside a multi-byte character unless the output did. */
  readonly text: string;
  /** Byte offset of `text` in the output file. */
  readonly offset: number;
  /** Where the next read should start to get every byte exactly once. */
  readonly nextOffset: number;
  /** Bytes in the output file so far. */
  readonly totalBytes: number;
  /** True once the process has ended and everything up to `totalBytes` was returned. */
  readonly eof: boolean;
}

/**
 * A background run with its runtime and a slice of its (redacted) output.
 */
export interface BackgroundStatus extends BackgroundProcess {
  readonly runtimeMs: number;
  readonly output: OutputSlice;
}

/**
 * Which part of a background run's output `status` returns: a page from an offset, or the tail.
 */
export interface StatusOptions {
  /** Read from this byte offset (paging). Without it, the tail is returned. */
  offset?: number;
  /** Bytes to read from `offset` (default 64 KiB, at most 1 MiB), or of the tail (default 4 KiB). */
  length?: number;
}

/**
 * How `kill` stops a background run: the first signal, and the grace period before SIGKILL.
 */
export interface KillOptions {
  /** First signal to the group (default SIGTERM). */
  signal?: NodeJS.Signals;
  /** Milliseconds before SIGKILL (default: the policy grace period). */
  grace?: number;
}

export interface BackgroundRunOptions {
  readonly home: string;
  /** Bytes of recent output kept in memory. */
  readonly ringBytes: number;
  /** Cap of the output file. */
  readonly maxFileBytes: number;
  /** Kill after this many ms (0 = never). */
  readonly maxRuntime: number;
  /** What starts pipe runs; default this process. */
  readonly spawner?: Spawner;
  /** The run's egress decisions, where a proxy other than the plan's serves it (a supervisor's own). */
  readonly egressDecisions?: () => readonly EgressDecision[];
}
