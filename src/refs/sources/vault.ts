/*
 * The vault source: `<<secret:NAME>>` and `<<decrypt:ID>>` from `$EXECGATE_HOME/vault.json`.
 * Without a vault file it answers "not found" at once, loading neither libsodium nor the
 * keyring. With one, any failure to verify it (wrong or missing key, tampering, corruption)
 * fails the reference closed, even for a name the vault might not hold.
 */
import { ExecgateError } from '../../errors';
import { Vault, type VaultOptions } from '../../stores';
import type { RefKind, RefSource, SourceAnswer } from '../types';

export type VaultSourceOptions = Pick<VaultOptions, 'home' | 'env' | 'keyring' | 'lockTimeoutMs'>;

export function createVaultSource(options: VaultSourceOptions): RefSource {
  const vault = new Vault(options);
  return Object.freeze({
    name: 'vault',
    kinds: Object.freeze(['secret', 'decrypt'] as RefKind[]),
    async lookup(kind: RefKind, id: string): Promise<SourceAnswer> {
      let value: string | undefined;
      try {
        value = await vault.get(kind, id);
      } catch (error) {
        const ref = `<<${kind}:${id}>>`;
        const reason = error instanceof ExecgateError ? error.toLine() : String((error as Error)?.message ?? error);
        throw new ExecgateError(
          'EXECGATE_ERR_REF_SOURCE_FAILED',
          `The vault could not resolve ${ref}: ${reason} Nothing was run.`,
          { reference: ref, source: 'vault', reason: error instanceof ExecgateError ? error.code : 'EXECGATE_ERR_UNEXPECTED' },
          { cause: error },
        );
      }
      return value === undefined ? { found: false } : { found: true, value };
    },
    // Entry names are listed without decrypting anything; no key, no names.
    async list(kind: RefKind): Promise<string[]> {
      try {
        return (await vault.list()).filter((entry) => entry.kind === kind).map((entry) => entry.name);
      } catch {
        return [];
      }
    },
  });
}
