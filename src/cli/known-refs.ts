/*
 * The reference names the secret stores know, for "did you mean" after a mistyped
 * reference: `EXECGATE_SECRET_*` variable names, keyring account names and vault entry names.
 * Listings only: no value is read for this (the vault lists its entries without decrypting
 * them). A store that cannot list (no keyring, no vault key) simply offers no names.
 */
import { getCliStores } from './commands/secret-stores';
import type { CliIo } from './io';
import type { RefKind } from '../refs/types';
import { createKeyringClient, isKeyringDisabled, isValidSecretName } from '../stores';

/** A listing is a convenience: never wait long on a keyring that prompts for unlocking. */
const KEYRING_LIST_TIMEOUT_MS = 5_000;

const ENV_PREFIX = 'EXECGATE_SECRET_';

export async function getKnownRefNames(io: CliIo, kind: RefKind): Promise<string[]> {
  const names: string[] = [];
  if (kind === 'secret') {
    // `EXECGATE_SECRET_GITHUB_TOKEN` is reached by `github-token` (and `github_token`, ...):
    // offer the spelling people write.
    for (const variable of Object.keys(io.env)) {
      if (variable.startsWith(ENV_PREFIX) && variable.length > ENV_PREFIX.length && io.env[variable]) {
        names.push(variable.slice(ENV_PREFIX.length).toLowerCase().replace(/_/g, '-'));
      }
    }
  }
  const stores = getCliStores(io);
  if (kind === 'secret' && !isKeyringDisabled(io.env)) {
    try {
      names.push(...(await createKeyringClient({ timeoutMs: KEYRING_LIST_TIMEOUT_MS }).accounts()).filter(isValidSecretName));
    } catch {
      // No keyring here, or it refused: nothing to offer from it.
    }
  }
  try {
    for (const entry of await stores.vault.list()) if (entry.kind === kind) names.push(entry.name);
  } catch {
    // No vault key or an unreadable vault: its names stay unknown; the run itself said why.
  }
  return names;
}
