/*
 * The one result shape for sync and PTY runs, success and failure alike. Every text field is
 * already redacted; `command` is the unresolved command.
 */
import type { EgressSummary, RunNetwork } from '../egress/describe';
import type { ExecMode } from '../policy/effective';
import type { RefUse } from '../plan/prepare';

/**
 * What a sync or PTY run answers: redacted stdout and stderr, the exit code or signal, how long it
 * ran, whether output was cut, the references it used and how it was sandboxed. No resolved value
 * appears in it.
 */
export interface ExecResult {
  readonly id: string;
  readonly command: string;
  readonly mode: ExecMode;
  readonly cwd: string;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout and stderr combined in arrival order. */
  readonly output: string;
  /** The exit code, or null when the process was ended by a signal. */
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  /** True when execgate ended the run (timeout or gateway shutdown). */
  readonly killed: boolean;
  readonly truncated: { readonly stdout: boolean; readonly stderr: boolean; readonly output: boolean };
  readonly bytes: { readonly stdout: number; readonly stderr: number };
  readonly durationMs: number;
  /** Number of secret occurrences replaced in the output. */
  readonly redactions: number;
  readonly env: { readonly removed: readonly string[]; readonly withheld: readonly string[] };
  readonly refs: readonly RefUse[];
  /** Whether the run was sandboxed, or why not (the audit record has the full sandbox plan). */
  readonly sandbox: { readonly sandboxed: boolean; readonly reason?: string };
  /** What the run could reach and how; which of its secrets were bound to hosts or injected. */
  readonly network: RunNetwork;
  /** Every egress decision of the run (host, port, allowed or refused, why), oldest first. */
  readonly egress: readonly EgressSummary[];
  /** Path of the full redacted combined output, present when any capture was cut. */
  readonly fullOutputPath?: string;
  /** One line describing how the run ended. */
  readonly message: string;
  /**
   * What went wrong around the run though the run itself went on: its full output could not be
   * saved (a full disk), its end could not be recorded in the audit log yet. Absent when nothing did.
   */
  readonly notices?: readonly string[];
}

export function describeEnding(options: {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  timeout: number;
  shutdown: boolean;
  complete?: boolean;
}): string {
  const how = options.signal ? `was killed by ${options.signal}` : `exited with code ${options.exitCode}`;
  const lost = options.complete === false ? ' Its output did not end within the drain timeout; the last bytes may be missing.' : '';
  if (options.timedOut) return `Command timed out after ${options.timeout} ms and ${how}; its process group was killed.${lost}`;
  if (options.shutdown) return `Command was stopped because the gateway closed and ${how}.${lost}`;
  return `Command ${how}.${lost}`;
}

export function formatCutNotice(cutBytes: number, fullOutputPath: string | undefined): string {
  const where = fullOutputPath ? `; full output: ${fullOutputPath}` : '';
  return `\n[... execgate cut ${cutBytes} bytes from the middle of this output${where} ...]\n`;
}
