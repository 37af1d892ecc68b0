/*
 * The sandboxed runs alive in this process, with what they may write and when they started. A
 * file a run may not write is made read-only by a mount on its name, and the host replacing
 * that file by rename(2) (an editor's atomic save, `sed -i`) detaches that mount in every run
 * already started: from then on such a run can write the new file. The policy files are read
 * only through here: a policy file that changed (ctime) after a live run that could write it
 * started is refused, since that run may have written it.
 */
import { realpathSync, statSync } from 'node:fs';
import { isInside } from '../fs/paths';

export interface LiveRun {
  readonly id: string;
  /** When the run was started (ms since the epoch, taken before its sandbox was spawned). */
  readonly started: number;
  /** Its writable roots (real paths). */
  readonly writable: readonly string[];
  /** When it ended; undefined while it is alive. */
  readonly ended?: number;
}

const live = new Map<symbol, LiveRun>();
/** Runs that have ended, newest last: a change made while one was alive stays its possible work. */
const ended: LiveRun[] = [];
const MAX_ENDED = 4096;

/** Lists a sandboxed run as alive; the function returned marks it ended. */
export function registerLiveRun(run: LiveRun): () => void {
  const key = Symbol(run.id);
  const entry = Object.freeze({ ...run, writable: Object.freeze([...run.writable]) });
  live.set(key, entry);
  return () => {
    if (!live.delete(key)) return;
    ended.push(Object.freeze({ ...entry, ended: Date.now() }));
    if (ended.length > MAX_ENDED) ended.splice(0, ended.length - MAX_ENDED);
  };
}

/** The sandboxed runs of this process: those alive, and those that have ended (with their end). */
export function getLiveRuns(): LiveRun[] {
  return [...live.values(), ...ended];
}

/**
 * The first of `runs` whose writable roots hold `file` and which was alive when the file last
 * changed (its ctime: after the run started, before it ended): a run that may have written it.
 * Undefined for a file that does not exist. Saving the file again once no such run is alive
 * clears it.
 */
export function findWriterSince(file: string, runs: readonly LiveRun[] = getLiveRuns()): { run: LiveRun; changed: number } | undefined {
  if (runs.length === 0) return undefined;
  let path: string;
  let changed: number;
  try {
    path = realpathSync.native(file);
    changed = statSync(path).ctimeMs;
  } catch {
    return undefined;
  }
  for (const run of runs) {
    if (run.started <= changed && (run.ended === undefined || changed <= run.ended) && run.writable.some((root) => isInside(path, root))) return { run, changed };
  }
  return undefined;
}
