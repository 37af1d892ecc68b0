export { createKeyringSource } from './keyring';
export type { KeyringSource, KeyringSourceOptions } from './keyring';
export { createVaultSource } from './vault';
export type { VaultSourceOptions } from './vault';
export { Vault, openVault } from '../../vault';
export type { VaultOptions, VaultEntryInfo, VaultStatus, RotateResult } from '../../vault';
export { isKeyringDisabled } from '../../vault';
