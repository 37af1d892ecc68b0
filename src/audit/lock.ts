/*
 * Serializes writers of one audit chain across processes (a CLI run beside a long-lived MCP
 * server, both under the same state directory), so that two processes never link two records
 * to the same predecessor. Held for one record at a time: a few system calls. Synchronous on
 * purpose: a record is sealed and written before the call that produced it goes on. The lock
 * itself (staleness, breaking, owner check on release) is fs/lock.ts.
 */
import { ExecgateError } from '../errors';
import { withLockSync as withLockFileSync } from '../fs/lock';

/** Run `fn` holding the lock file `path`. */
export function withLockSync<T>(path: string, fn: () => T): T {
  return withLockFileSync(path, fn, {
    onTimeout: (holder, waited) => new ExecgateError(
      'EXECGATE_ERR_AUDIT_LOCKED',
      `${holder[0]?.toUpperCase()}${holder.slice(1)} held the audit log lock \`${path}\` for more than ${waited / 1000} s. If no execgate process is running, remove the lock file.`,
      { path },
    ),
    onError: (error) => new ExecgateError('EXECGATE_ERR_AUDIT_IO', `Cannot create the audit lock \`${path}\`: ${error.code ?? String(error)}.`, { path }, { cause: error }),
  });
}
