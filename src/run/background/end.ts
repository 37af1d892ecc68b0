/*
 * How a background run ended, in words: its final state, why (when execgate ended it), and the
 * closing lines of its output (a drain that gave up says so first).
 */
import type { RunEnd } from '../lifecycle';
import type { BackgroundState } from './types';

/** Why execgate is ending a run: killed on request, gateway closed, supervisor stopped. */
export interface Stopping {
  readonly state: BackgroundState;
  readonly reason: string;
}

export interface EndState {
  readonly state: BackgroundState;
  readonly reason: string | undefined;
  readonly lines: string[];
}

const INCOMPLETE = '[execgate: the output did not end within the drain timeout; the last bytes may be missing]';

/** The stop that ended the run: the one asked for, else its own timeout (`maxRuntime`). */
export function getStopping(end: RunEnd, asked: Stopping | undefined, maxRuntime: number): Stopping | undefined {
  if (end.stopped === 'timeout' && !asked) return { state: 'timed_out', reason: `timed out after ${maxRuntime} ms` };
  return asked;
}

export function describeEnd(exitCode: number | null, signal: NodeJS.Signals | null, stopping: Stopping | undefined, complete: boolean): EndState {
  let state: BackgroundState = 'exited';
  let line: string;
  if (stopping) {
    state = stopping.state;
    const how = signal ? `by ${signal}` : `with exit code ${exitCode}`;
    line = state === 'timed_out'
      ? `[background process ${stopping.reason}; ended ${how}]`
      : `[background process killed (${stopping.reason}); ended ${how}]`;
  } else {
    line = signal ? `[background process completed: killed by ${signal}]` : `[background process completed with exit code ${exitCode}]`;
  }
  return { state, reason: stopping?.reason, lines: complete ? [line] : [INCOMPLETE, line] };
}
