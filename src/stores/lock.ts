/*
 * Cross-process serialization of vault writers (and of readers that met a rotation), with the
 * shared lock file (fs/lock.ts). Readers otherwise take no lock: writers replace vault.json by
 * atomic rename, so a reader always sees a complete file.
 */
import { ExecgateError } from '../errors';
import { withLock as withLockFile } from '../fs/lock';

export interface LockOptions {
  /** How long to wait for another writer, in milliseconds (default 10 s). */
  timeoutMs?: number;
}

/** Run `fn` while holding the vault lock file at `path`. */
export function withLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  return withLockFile(path, fn, {
    timeoutMs: options.timeoutMs,
    onTimeout: (holder, waited) => new ExecgateError(
      'EXECGATE_ERR_VAULT_LOCKED',
      `The vault is locked by ${holder}; waited ${waited} ms. Retry when it finishes; if no such process is running, remove \`${path}\`.`,
      { path },
    ),
  });
}
