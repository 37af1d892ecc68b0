export { Vault, VAULT_FILE, KEY_FILE } from './vault';
export type { VaultOptions, VaultEntryInfo, VaultStatus, RotateResult } from './vault';
export type { KeyStoreKind } from './format';
export { ENV_KEY as VAULT_KEY_ENV } from './keys';
export { isValidSecretName, validateSecretName, MAX_VALUE_BYTES } from './names';
export {
  createKeyringClient,
  createDisabledKeyringClient,
  isKeyringDisabled,
  classifyKeyringError,
  KeyringFailedError,
  KeyringUnavailableError,
  DEFAULT_SERVICE as DEFAULT_KEYRING_SERVICE,
} from './os-keyring';
export type { KeyringClient, KeyringClientOptions } from './os-keyring';
