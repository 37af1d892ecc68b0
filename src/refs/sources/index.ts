export { createKeyringSource } from './keyring';
export type { KeyringSource, KeyringSourceOptions } from './keyring';
export { createVaultSource } from './vault';
export type { VaultSourceOptions } from './vault';
export { Vault } from '../../stores';
export type { VaultOptions, VaultEntryInfo, VaultStatus, RotateResult } from '../../stores';
export { isKeyringDisabled } from '../../stores';
