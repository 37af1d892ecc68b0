/*
 * Serializes writers of one audit chain across processes (a CLI run beside a long-lived MCP
 * server, both under the same state directory), so that two processes never link two records
 * to the same predecessor. Synchronous on purpose: a record is sealed and written before the
 * call that produced it goes on. The lock itself (the queue, a dead holder, a hung one) is
 * fs/lock.ts.
 *
 * Kept between records. Taking the lock is a symlink(2) and giving it back a readlink and an
 * unlink: metadata changes, which wait for the file system's journal, and right after an
 * fdatasync (a run's start record is synced before its command acts) the next one waits for
 * that commit. A run's two turns of the lock were most of what the gateway added to an
 * unsandboxed run (docs/performance.md). So this process keeps the lock once it has it, as long
 * as it goes on writing and no other process waits: before each record it checks, with reads
 * only, that the lock still names this acquisition and that no waiter has queued beside it
 * (fs/lock.ts: a waiter queues as soon as it finds the lock taken). It gives the lock back when
 * a waiter is there (at its next record), after HOLD_MS without a record, when a write fails,
 * when the log closes, and when the process exits; a process killed meanwhile leaves a lock that
 * the next writer breaks, as one killed in the middle of a record always did. So another process
 * waits at most HOLD_MS longer than before for a log this one has stopped writing.
 */
import { ExecgateError } from '../errors';
import { acquireLockSync, isHeldUncontested, releaseLock, type LockFileOptions } from '../fs/lock';

/** How long the lock is kept without a record. */
export const HOLD_MS = 10;

interface Held {
  readonly target: string;
  readonly timer: NodeJS.Timeout;
}

/** The locks this process keeps, by path (shared by every log of this process on that path). */
const held = new Map<string, Held>();
let exitHooked = false;

function lockOptions(path: string, options: { timeoutMs?: number }): LockFileOptions {
  return {
    ...options,
    onTimeout: (holder, heldMs, still) => new ExecgateError(
      'EXECGATE_ERR_AUDIT_LOCKED',
      `${holder[0]?.toUpperCase()}${holder.slice(1)} has held the audit log lock \`${path}\` for ${(heldMs / 1000).toFixed(1)} s and has not used the CPU for ${(still / 1000).toFixed(1)} s: it looks hung or stopped (a record takes milliseconds). Nothing was run. Find out why that process is stuck; the lock goes with it when it ends.`,
      { path, heldMs, stillMs: still },
    ),
    onError: (error) => new ExecgateError(
      'EXECGATE_ERR_AUDIT_IO',
      `Cannot take the audit log lock \`${path}\`: ${error.code ?? String(error)}. Nothing is run while the audit log cannot be written.`,
      { path, errno: error.code },
      { cause: error },
    ),
  };
}

/** Give back the lock `path` if this process keeps it. */
export function releaseAuditLock(path: string): void {
  const mine = held.get(path);
  if (mine === undefined) return;
  held.delete(path);
  clearTimeout(mine.timer);
  releaseLock(path, mine.target);
}

/** Run `fn` holding the lock `path`, kept afterwards while this process writes and nobody waits. */
export function withLockSync<T>(path: string, fn: () => T, options: { timeoutMs?: number } = {}): T {
  let mine = held.get(path);
  if (mine !== undefined && !isHeldUncontested(path, mine.target)) {
    releaseAuditLock(path);
    mine = undefined;
  }
  if (mine === undefined) {
    const target = acquireLockSync(path, lockOptions(path, options));
    const timer = setTimeout(() => releaseAuditLock(path), HOLD_MS);
    timer.unref();
    mine = { target, timer };
    held.set(path, mine);
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', () => {
        for (const each of [...held.keys()]) releaseAuditLock(each);
      });
    }
  } else {
    mine.timer.refresh();
  }
  try {
    return fn();
  } catch (error) {
    // A failed write (a full disk) gives the lock back at once, as before.
    releaseAuditLock(path);
    throw error;
  }
}
