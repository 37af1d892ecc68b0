/*
 * Where the vault key lives, and how it is found, created and replaced.
 *
 * - `EXECGATE_VAULT_KEY` (base64 of 32 bytes), when set, is the key: for containers and CI.
 * - Otherwise the vault header's `keyStore` says where the key was put when the vault was made:
 *   `keyring` (the OS keyring, service `execgate`, account `__vault_key__/<vaultId>`, so vaults
 *   under different homes never share or clobber a key) or `file` (`vault.key` beside the
 *   vault, created 0600 and refused when group or others may read it, or when it is a symlink
 *   or owned by another user). A new vault goes to the keyring when one is reachable, else to
 *   the key file.
 *
 * Rotation keeps the old key until the vault written under the new key is committed: the new
 * key is first stored as *pending* (`vault.key.next`, or account `__vault_key_next__/<vaultId>`),
 * then the vault is replaced, then the pending key is promoted. The vault records the id of the
 * key it was written under, so after a crash at any point the loader picks whichever of
 * current/pending matches; a later write finishes the promotion.
 */
import { promises as fs } from 'node:fs';
import { ExecgateError } from '../errors';
import { createFileExclusive, fsyncDir, writeFileAtomic } from '../fs/atomic';
import { readPrivateFile, type PrivateFileRules } from '../fs/private';
import { decodeKey, encodeKey, generateKey, getKeyId } from './crypto';
import type { KeyStoreKind } from './format';
import { KeyringFailedError, KeyringUnavailableError, type KeyringClient } from './os-keyring';
import type { Sodium } from './sodium';
import { dirname } from 'node:path';

export const ENV_KEY = 'EXECGATE_VAULT_KEY';

export interface KeyConfig {
  readonly env: NodeJS.ProcessEnv;
  /** `vault.key` beside the vault. */
  readonly keyPath: string;
  /** Undefined when the keyring is disabled for the vault key. */
  readonly keyring: KeyringClient | undefined;
}

export interface LoadedKey {
  readonly key: Uint8Array;
  readonly keyId: string;
  readonly store: KeyStoreKind;
  /** True when the key was found in the pending slot of an unfinished rotation. */
  readonly pending: boolean;
}

export function getKeyAccount(vaultId: string, pending = false): string {
  return `${pending ? '__vault_key_next__' : '__vault_key__'}/${vaultId}`;
}

export function getPendingKeyPath(keyPath: string): string {
  return `${keyPath}.next`;
}

export function hasEnvKey(env: NodeJS.ProcessEnv): boolean {
  return env[ENV_KEY] !== undefined && env[ENV_KEY] !== '';
}

function keyInvalid(where: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_VAULT_KEY_INVALID',
    `The vault key in ${where} is not base64 of exactly 32 bytes. Restore the key the vault was written with.`,
    { where },
  );
}

function keyringFailed(error: KeyringFailedError, doing: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_KEYRING_FAILED',
    `The OS keyring refused ${doing}: ${error.message}. Unlock the keyring (or grant access) and retry.`,
    {},
    { cause: error },
  );
}

function describeStore(store: KeyStoreKind, config: KeyConfig): string {
  if (store === 'env') return ENV_KEY;
  if (store === 'file') return `the key file \`${config.keyPath}\``;
  return `the OS keyring (service \`${config.keyring?.service ?? 'execgate'}\`)`;
}

const KEY_FILE_RULES: PrivateFileRules = {
  what: 'vault key file',
  permissionsCode: 'EXECGATE_ERR_VAULT_KEY_PERMISSIONS',
  ioCode: 'EXECGATE_ERR_VAULT_IO',
  advice: ' (and consider rotating the key with `execgate vault rotate-key`)',
};

/** Read a key file, refusing one that others could read or that is not plainly ours. */
async function readKeyFile(path: string): Promise<string | undefined> {
  const bytes = await readPrivateFile(path, KEY_FILE_RULES);
  if (bytes === undefined) return undefined;
  const text = bytes.toString('utf8');
  bytes.fill(0);
  return text;
}

async function keyringGet(config: KeyConfig, account: string, store: KeyStoreKind): Promise<string | null> {
  const keyring = config.keyring;
  if (keyring === undefined) throw keyMissing(config, store, 'the keyring is disabled for the vault key');
  try {
    return await keyring.get(account);
  } catch (error) {
    if (error instanceof KeyringUnavailableError) throw keyMissing(config, store, `the keyring is not reachable (${error.message})`);
    throw keyringFailed(error as KeyringFailedError, 'to give out the vault key');
  }
}

function keyMissing(config: KeyConfig, store: KeyStoreKind, why: string): ExecgateError {
  const hint =
    store === 'env'
      ? `This vault was created with a key given in ${ENV_KEY}; set it again.`
      : `Set ${ENV_KEY} to the vault's key, or restore ${describeStore(store, config)}.`;
  return new ExecgateError('EXECGATE_ERR_VAULT_KEY_MISSING', `The vault key cannot be found: ${why}. ${hint}`, { store });
}

function decodeOrThrow(sodium: Sodium, text: string, where: string): Uint8Array {
  const key = decodeKey(sodium, text);
  if (key === undefined) throw keyInvalid(where);
  return key;
}

/** The key the vault `{vaultId, keyId, keyStore}` was written with, or a coded error. */
export async function loadKey(
  sodium: Sodium,
  config: KeyConfig,
  header: { vaultId: string; keyId: string; keyStore: KeyStoreKind },
  vaultPath: string,
): Promise<LoadedKey> {
  const candidates: { text: string; where: string; pending: boolean; store: KeyStoreKind }[] = [];
  if (hasEnvKey(config.env)) {
    candidates.push({ text: config.env[ENV_KEY]!, where: ENV_KEY, pending: false, store: 'env' });
  } else if (header.keyStore === 'env') {
    throw keyMissing(config, 'env', `${ENV_KEY} is not set`);
  } else if (header.keyStore === 'file') {
    // Pending before current: a promotion moves pending into current, so read in this order
    // a concurrent promotion cannot hide the new key from us.
    const pendingPath = getPendingKeyPath(config.keyPath);
    const pending = await readKeyFile(pendingPath);
    const current = await readKeyFile(config.keyPath);
    if (current !== undefined) candidates.push({ text: current, where: `\`${config.keyPath}\``, pending: false, store: 'file' });
    if (pending !== undefined) candidates.push({ text: pending, where: `\`${pendingPath}\``, pending: true, store: 'file' });
    if (candidates.length === 0) throw keyMissing(config, 'file', `\`${config.keyPath}\` does not exist`);
  } else {
    const pending = await keyringGet(config, getKeyAccount(header.vaultId, true), 'keyring');
    const current = await keyringGet(config, getKeyAccount(header.vaultId), 'keyring');
    if (current !== null) candidates.push({ text: current, where: 'the OS keyring', pending: false, store: 'keyring' });
    if (pending !== null) candidates.push({ text: pending, where: 'the OS keyring (pending rotation)', pending: true, store: 'keyring' });
    if (candidates.length === 0) throw keyMissing(config, 'keyring', `the keyring has no entry \`${getKeyAccount(header.vaultId)}\``);
  }
  const tried: string[] = [];
  for (const candidate of candidates) {
    const key = decodeOrThrow(sodium, candidate.text, candidate.where);
    const keyId = getKeyId(sodium, key);
    if (keyId === header.keyId) return { key, keyId, store: candidate.store, pending: candidate.pending };
    sodium.memzero(key);
    tried.push(`${candidate.where} has key id ${keyId.slice(0, 12)}`);
  }
  throw new ExecgateError(
    'EXECGATE_ERR_VAULT_WRONG_KEY',
    `The vault \`${vaultPath}\` was written under key id ${header.keyId.slice(0, 12)}, but ${tried.join(' and ')}. Provide the key the vault was written with (${ENV_KEY} overrides the stored key).`,
    { path: vaultPath, keyId: header.keyId },
  );
}

/** Choose where a new vault's key goes and return it (reusing a leftover key file). */
export async function createKey(sodium: Sodium, config: KeyConfig, vaultId: string): Promise<LoadedKey> {
  if (hasEnvKey(config.env)) {
    const key = decodeOrThrow(sodium, config.env[ENV_KEY]!, ENV_KEY);
    return { key, keyId: getKeyId(sodium, key), store: 'env', pending: false };
  }
  if (config.keyring !== undefined && (await config.keyring.probe()).available) {
    const key = generateKey(sodium);
    await storeKey(sodium, config, 'keyring', vaultId, key, false);
    return { key, keyId: getKeyId(sodium, key), store: 'keyring', pending: false };
  }
  const existing = await readKeyFile(config.keyPath);
  if (existing !== undefined) {
    const key = decodeOrThrow(sodium, existing, `\`${config.keyPath}\``);
    return { key, keyId: getKeyId(sodium, key), store: 'file', pending: false };
  }
  const key = generateKey(sodium);
  await storeKey(sodium, config, 'file', vaultId, key, false);
  return { key, keyId: getKeyId(sodium, key), store: 'file', pending: false };
}

/** Store `key` as the current key (new vault) or the pending key (rotation). */
export async function storeKey(
  sodium: Sodium,
  config: KeyConfig,
  store: KeyStoreKind,
  vaultId: string,
  key: Uint8Array,
  pending: boolean,
): Promise<void> {
  const text = encodeKey(sodium, key);
  if (store === 'keyring') {
    try {
      await config.keyring!.set(getKeyAccount(vaultId, pending), text);
    } catch (error) {
      if (error instanceof KeyringUnavailableError) throw keyMissing(config, 'keyring', `the keyring is not reachable (${error.message})`);
      throw keyringFailed(error as KeyringFailedError, 'to store the vault key');
    }
    return;
  }
  if (store !== 'file') throw new Error(`cannot store a key in ${store}`);
  const path = pending ? getPendingKeyPath(config.keyPath) : config.keyPath;
  try {
    if (pending) await writeFileAtomic(path, `${text}\n`, 0o600);
    else if (!(await createFileExclusive(path, `${text}\n`, 0o600))) {
      throw new ExecgateError('EXECGATE_ERR_VAULT_IO', `The vault key file \`${path}\` appeared while a new one was being created.`, { path });
    }
  } catch (error) {
    if (error instanceof ExecgateError) throw error;
    throw new ExecgateError('EXECGATE_ERR_VAULT_IO', `Cannot write the vault key file \`${path}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`, { path }, { cause: error });
  }
}

/** Make the pending key current, once the vault written under it is committed. */
export async function promotePendingKey(sodium: Sodium, config: KeyConfig, loaded: LoadedKey, vaultId: string): Promise<void> {
  if (loaded.store === 'file') {
    try {
      await fs.rename(getPendingKeyPath(config.keyPath), config.keyPath);
      await fsyncDir(dirname(config.keyPath));
    } catch (error) {
      throw new ExecgateError('EXECGATE_ERR_VAULT_IO', `Cannot replace the vault key file \`${config.keyPath}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`, { path: config.keyPath }, { cause: error });
    }
  } else if (loaded.store === 'keyring') {
    await storeKey(sodium, config, 'keyring', vaultId, loaded.key, false);
    await discardPendingKey(config, 'keyring', vaultId);
  }
}

/** Remove a pending key that never got used (a rotation that crashed before its commit). */
export async function discardPendingKey(config: KeyConfig, store: KeyStoreKind, vaultId: string): Promise<void> {
  if (store === 'file') {
    await fs.rm(getPendingKeyPath(config.keyPath), { force: true });
  } else if (store === 'keyring' && config.keyring !== undefined) {
    try {
      await config.keyring.delete(getKeyAccount(vaultId, true));
    } catch (error) {
      if (error instanceof KeyringUnavailableError) return;
      throw keyringFailed(error as KeyringFailedError, 'to remove the pending vault key');
    }
  }
}
