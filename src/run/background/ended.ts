/*
 * The `background.ended` audit record, built in one place for both writers: the gateway that
 * holds a run in-process and the detached supervisor that holds it for the CLI.
 */
import type { BackgroundProcess } from './types';

export function getEndedFields(ended: BackgroundProcess, actor: string, durationMs: number): Record<string, unknown> {
  return {
    runId: ended.id,
    actor,
    command: ended.command,
    state: ended.state,
    exitCode: ended.exitCode,
    signal: ended.signal,
    reason: ended.reason,
    durationMs,
  };
}
