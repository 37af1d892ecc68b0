/*
 * The OS keyring source: `<<secret:NAME>>` is the password of account NAME under service
 * `execgate` (macOS Keychain, Windows Credential Manager, the Secret Service on Linux).
 *
 * No keyring at all (no D-Bus session, no Secret Service, no native module) is a normal
 * situation on servers and in containers: the source then answers "not found", says so once in
 * the log, and resolution goes on to the vault. A keyring that answers but refuses (locked,
 * access denied) is not: the reference fails closed with EXECGATE_ERR_REF_SOURCE_FAILED.
 */
import { ExecgateError } from '../../errors';
import { createKeyringClient, KeyringUnavailableError, DEFAULT_SERVICE } from '../../stores/os-keyring';
import { isValidRefId } from '../tokens';
import type { RefKind, RefSource, SourceAnswer } from '../types';

export interface KeyringSourceOptions {
  /** Keyring service name (default `execgate`). */
  service?: string;
  /** Receives the one "keyring unavailable" warning (default: process.emitWarning). */
  logger?: { warn(obj: object, msg: string): void };
  /** Give up on one keyring call after this many milliseconds (default 30 s). */
  timeoutMs?: number;
}

export type KeyringSource = RefSource & { isAvailable(): Promise<boolean> };

export function createKeyringSource(options: KeyringSourceOptions = {}): KeyringSource {
  const service = options.service ?? DEFAULT_SERVICE;
  const client = createKeyringClient(options.timeoutMs === undefined ? { service } : { service, timeoutMs: options.timeoutMs });
  let warned = false;

  function warnUnavailable(reason: string): void {
    if (warned) return;
    warned = true;
    const message = `keyring unavailable: ${reason}`;
    if (options.logger) options.logger.warn({ source: 'keyring', service, reason }, message);
    else process.emitWarning(message, { code: 'EXECGATE_KEYRING_UNAVAILABLE' });
  }

  return Object.freeze({
    name: 'keyring',
    kinds: Object.freeze(['secret'] as RefKind[]),
    async lookup(kind: RefKind, id: string): Promise<SourceAnswer> {
      if (kind !== 'secret') return { found: false };
      let value: string | null;
      try {
        value = await client.get(id);
      } catch (error) {
        if (error instanceof KeyringUnavailableError) {
          warnUnavailable(error.message);
          return { found: false };
        }
        const ref = `<<secret:${id}>>`;
        throw new ExecgateError(
          'EXECGATE_ERR_REF_SOURCE_FAILED',
          `The keyring could not resolve ${ref}: ${(error as Error).message}. Unlock the keyring (service \`${service}\`) and retry. Nothing was run.`,
          { reference: ref, source: 'keyring', reason: 'EXECGATE_ERR_KEYRING_FAILED' },
          { cause: error },
        );
      }
      return value === null || value === '' ? { found: false } : { found: true, value };
    },
    async list(kind: RefKind): Promise<string[]> {
      if (kind !== 'secret') return [];
      try {
        return (await client.accounts()).filter(isValidRefId);
      } catch {
        return [];
      }
    },
    async isAvailable(): Promise<boolean> {
      return (await client.probe()).available;
    },
  });
}
