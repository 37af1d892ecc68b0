/*
 * Cross-process serialization of vault writers (and of readers that met a rotation), with the
 * shared lock (fs/lock.ts). Readers otherwise take no lock: writers replace vault.json by
 * atomic rename, so a reader always sees a complete file.
 */
import { ExecgateError } from '../errors';
import { withLock as withLockFile } from '../fs/lock';

export interface LockOptions {
  /** How long a writer may hold the lock without using the CPU before a waiter gives up, in milliseconds (default 30 s). */
  timeoutMs?: number;
}

/** Run `fn` while holding the vault lock at `path`. */
export function withLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  return withLockFile(path, fn, {
    timeoutMs: options.timeoutMs,
    onTimeout: (holder, held, still) => new ExecgateError(
      'EXECGATE_ERR_VAULT_LOCKED',
      `The vault is locked by ${holder}, which has held it for ${(held / 1000).toFixed(1)} s and has not used the CPU for ${(still / 1000).toFixed(1)} s: it looks hung or stopped. Nothing was changed. Find out why that process is stuck; the lock goes with it when it ends.`,
      { path, heldMs: held, stillMs: still },
    ),
    onError: (error) => new ExecgateError(
      'EXECGATE_ERR_VAULT_IO',
      `Cannot take the vault lock \`${path}\`: ${error.code ?? String(error)}. Nothing was changed.`,
      { path, errno: error.code },
      { cause: error },
    ),
  });
}
