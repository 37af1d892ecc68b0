/*
 * Where would `<<secret:NAME>>` resolve from? The CLI's `secret test` and `secret set` ask, in
 * the gateway's order after host-registered values: the environment variable, the OS keyring,
 * the vault. Values are looked up but never returned.
 */
import { ExecgateError } from '../../errors';
import { Vault, createKeyringClient, KeyringUnavailableError, type KeyringClient } from '../../stores';

export type SecretLocation =
  | { readonly source: 'env'; readonly variable: string }
  | { readonly source: 'keyring'; readonly service: string }
  | { readonly source: 'vault'; readonly path: string };

export interface FindSecretOptions {
  env: NodeJS.ProcessEnv;
  /** `$EXECGATE_HOME`. */
  home: string;
  /** The keyring to check (default: service `execgate`), or false to skip it. */
  keyring?: false | KeyringClient;
  /** The vault to check (default: the one under `home`, its key in the same keyring). */
  vault?: Vault;
  /** Told why the keyring was skipped when none is reachable. */
  onKeyringUnavailable?(reason: string): void;
}

/** `github-token` -> `EXECGATE_SECRET_GITHUB_TOKEN` (`-`, `.`, `/` become `_`). */
export function getSecretVariable(name: string): string {
  return `EXECGATE_SECRET_${name.toUpperCase().replace(/[-./]/g, '_')}`;
}

export async function findSecretSource(name: string, options: FindSecretOptions): Promise<SecretLocation | undefined> {
  const variable = getSecretVariable(name);
  const fromEnv = options.env[variable];
  if (fromEnv !== undefined && fromEnv !== '') return { source: 'env', variable };
  const keyring = options.keyring === undefined ? createKeyringClient() : options.keyring;
  if (keyring !== false) {
    try {
      const value = await keyring.get(name);
      if (value !== null && value !== '') return { source: 'keyring', service: keyring.service };
    } catch (error) {
      if (!(error instanceof KeyringUnavailableError)) {
        throw new ExecgateError(
          'EXECGATE_ERR_KEYRING_FAILED',
          `The OS keyring could not be checked for <<secret:${name}>>: ${(error as Error).message}. Unlock the keyring and retry.`,
          { reference: `<<secret:${name}>>` },
          { cause: error },
        );
      }
      options.onKeyringUnavailable?.(error.message);
    }
  }
  const vault =
    options.vault ??
    new Vault({ home: options.home, env: options.env, keyring: keyring === false ? false : { service: keyring.service } });
  if (await vault.has('secret', name)) return { source: 'vault', path: vault.path };
  return undefined;
}
