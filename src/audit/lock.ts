/*
 * Serializes writers of one audit chain across processes (a CLI run beside a long-lived MCP
 * server, both under the same state directory), so that two processes never link two records
 * to the same predecessor. Held for one record at a time: a few system calls. Synchronous on
 * purpose: a record is sealed and written before the call that produced it goes on. The lock
 * itself (the queue, a dead holder, a hung one) is fs/lock.ts.
 */
import { ExecgateError } from '../errors';
import { releaseLease, withLockSync as withLockFileSync } from '../fs/lock';

export { releaseLease };

/**
 * How long a writer keeps the lock after a record while it has nothing more to write (a lease,
 * fs/lock.ts): a run's start and end, and runs back to back, then share one acquisition (a
 * command shorter than this costs one turn of the lock, not two). Another process that queues
 * gets it as soon as this writer's event loop sees its ticket.
 */
export const AUDIT_LEASE_MS = 100;

/*
 * Leases are for processes whose event loop is never held up while they hold one: a lease is
 * handed over on the holder's event loop, so a host that blocks it (a `spawnSync` of a CLI
 * writing the same log, a long synchronous computation) would keep every other writer of the log
 * waiting meanwhile. execgate's own long-running programs, `execgate run` and `execgate mcp`, turn
 * them on for their process; a library host's gateway takes the lock per record.
 */
let leaseMs = 0;

/** Audit writers of this process keep the lock as a lease (see above). Called by execgate's own programs. */
export function useAuditLeases(ms = AUDIT_LEASE_MS): void {
  leaseMs = ms;
}

/** The lease the audit writers of this process keep (0: none). */
export function getAuditLeaseMs(): number {
  return leaseMs;
}

/** Run `fn` holding the lock `path`. */
export function withLockSync<T>(path: string, fn: () => T, options: { timeoutMs?: number; leaseMs?: number } = {}): T {
  return withLockFileSync(path, fn, {
    ...options,
    onTimeout: (holder, held, still) => new ExecgateError(
      'EXECGATE_ERR_AUDIT_LOCKED',
      `${holder[0]?.toUpperCase()}${holder.slice(1)} has held the audit log lock \`${path}\` for ${(held / 1000).toFixed(1)} s and has not used the CPU for ${(still / 1000).toFixed(1)} s: it looks hung or stopped (a record takes milliseconds). Nothing was run. Find out why that process is stuck; the lock goes with it when it ends.`,
      { path, heldMs: held, stillMs: still },
    ),
    onError: (error) => new ExecgateError(
      'EXECGATE_ERR_AUDIT_IO',
      `Cannot take the audit log lock \`${path}\`: ${error.code ?? String(error)}. Nothing is run while the audit log cannot be written.`,
      { path, errno: error.code },
      { cause: error },
    ),
  });
}
