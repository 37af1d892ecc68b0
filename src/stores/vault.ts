/*
 * The vault: named secrets and encrypted blobs in `$EXECGATE_HOME/vault.json`.
 *
 * A Vault object holds no state between calls: every operation reads the file afresh, so many
 * processes can share one vault. Reads need no lock (writers replace the file by atomic
 * rename). Every write takes the lock file, re-reads and re-verifies the vault inside it, applies
 * its change, bumps the generation, and commits by atomic rename: concurrent writers are
 * serialized and never lose each other's entries, and a writer killed at any instant leaves the
 * previous or the new vault, never a mix.
 *
 * Nothing is trusted before the file MAC verifies under the right key: a lookup of a name the
 * vault does not hold still fails closed when the vault cannot be verified.
 *
 * This file holds the operations; how the file is read, verified and written is vault-file.ts.
 */
import { join } from 'node:path';
import { ExecgateError } from '../errors';
import { ensureDir } from '../home';
import type { RefKind } from './names';
import { canOpen, deriveKeys, generateId, generateKey, openValue, sealValue, wipeKeys } from './crypto';
import type { KeyStoreKind, VaultEntry, VaultHeader } from './format';
import { ENV_KEY, discardPendingKey, hasEnvKey, promotePendingKey, storeKey, type KeyConfig } from './keys';
import { formatEntryRef, validateKind, validateLabel, validateSecretName, validateSecretValue } from './names';
import { createKeyringClient } from './os-keyring';
import { loadSodium } from './sodium';
import { VaultFile } from './vault-file';

export const VAULT_FILE = 'vault.json';
export const KEY_FILE = 'vault.key';

export interface VaultOptions {
  /** `$EXECGATE_HOME`: the directory holding vault.json (created 0700 on first write). */
  home: string;
  /** Where `EXECGATE_VAULT_KEY` is read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Keep the vault key in the OS keyring when reachable (default), or never (`false`). */
  keyring?: false | { service?: string; timeoutMs?: number };
  /** How long another writer may hold the lock without using the CPU before this one gives up, in milliseconds (default 30 s). */
  lockTimeoutMs?: number;
}

export interface VaultEntryInfo {
  readonly kind: RefKind;
  /** The secret's name, or the blob's id. */
  readonly name: string;
  readonly label?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface VaultStatus {
  readonly exists: boolean;
  readonly path: string;
  readonly entries: number;
  readonly keyId?: string;
  readonly keyStore?: KeyStoreKind;
}

export interface RotateResult {
  readonly entries: number;
  readonly oldKeyId: string;
  readonly newKeyId: string;
  readonly keyStore: KeyStoreKind;
}

/** Returns whether there is anything to write. */
type EntryChange = (entries: Map<string, VaultEntry>, seal: (kind: RefKind, name: string, value: string, label?: string) => VaultEntry) => boolean;

export interface ChangeOptions<T> {
  /** Called under the lock with what is about to be written; a throw leaves the vault unchanged. */
  readonly beforeCommit?: (change: T) => void;
}

function getEntryKey(kind: RefKind, name: string): string {
  return `${kind}:${name}`;
}

export class Vault {
  readonly home: string;
  readonly path: string;
  readonly keyPath: string;
  readonly #env: NodeJS.ProcessEnv;
  readonly #keyConfig: KeyConfig;
  readonly #file: VaultFile;

  constructor(options: VaultOptions) {
    if (options === null || typeof options !== 'object' || typeof options.home !== 'string' || options.home === '') {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'Expected the vault `home` option to be a non-empty directory path.');
    }
    this.home = options.home;
    this.path = join(options.home, VAULT_FILE);
    this.keyPath = join(options.home, KEY_FILE);
    this.#env = options.env ?? process.env;
    const keyring = options.keyring === false ? undefined : createKeyringClient(options.keyring ?? {});
    this.#keyConfig = Object.freeze({ env: this.#env, keyPath: this.keyPath, keyring });
    this.#file = new VaultFile(this.path, this.keyPath, this.#keyConfig, options.lockTimeoutMs);
  }

  /** Whether vault.json exists (no key or libsodium needed). */
  async exists(): Promise<boolean> {
    return (await this.#file.readDocument()) !== undefined;
  }

  /** The value of one entry, or undefined when the vault does not hold it. */
  async get(kind: RefKind, name: string): Promise<string | undefined> {
    validateKind(kind);
    validateSecretName(name, kind === 'secret' ? 'secret name' : 'blob id');
    const open = await this.#file.readAndOpen();
    if (open === undefined) return undefined;
    const { document } = open;
    try {
      const entry = document.entries.find((candidate) => candidate.kind === kind && candidate.name === name);
      if (entry === undefined) return undefined;
      const value = openValue(open.sodium, open.keys, { vaultId: document.vaultId, ...entry }, entry);
      if (value === undefined) throw this.#file.tampered([formatEntryRef(kind, name)]);
      return value;
    } finally {
      this.#file.close(open);
    }
  }

  /** Whether the vault holds the entry (after verifying the vault; nothing is decrypted). */
  async has(kind: RefKind, name: string): Promise<boolean> {
    validateKind(kind);
    validateSecretName(name, kind === 'secret' ? 'secret name' : 'blob id');
    const open = await this.#file.readAndOpen();
    if (open === undefined) return false;
    this.#file.close(open);
    return open.document.entries.some((entry) => entry.kind === kind && entry.name === name);
  }

  /** Every entry's kind, name, label and dates (never a value), after verifying the vault. */
  async list(): Promise<VaultEntryInfo[]> {
    const open = await this.#file.readAndOpen();
    if (open === undefined) return [];
    this.#file.close(open);
    return open.document.entries.map(({ kind, name, label, createdAt, updatedAt }) =>
      label === undefined ? { kind, name, createdAt, updatedAt } : { kind, name, label, createdAt, updatedAt },
    );
  }

  /** Decrypt every entry (values discarded): proves the key and every entry are intact. */
  async verify(): Promise<VaultStatus> {
    const open = await this.#file.readAndOpen();
    if (open === undefined) return { exists: false, path: this.path, entries: 0 };
    const { document } = open;
    try {
      const bad = document.entries
        .filter((entry) => !canOpen(open.sodium, open.keys, { vaultId: document.vaultId, ...entry }, entry))
        .map((entry) => formatEntryRef(entry.kind, entry.name));
      if (bad.length > 0) throw this.#file.tampered(bad);
      return { exists: true, path: this.path, entries: document.entries.length, keyId: document.keyId, keyStore: document.keyStore };
    } finally {
      this.#file.close(open);
    }
  }

  /**
   * Store (or replace) the named secret. Returns true when it was new. `beforeCommit` runs
   * under the lock once the change is made but not yet written (the audit record goes there:
   * a throw from it leaves the vault as it was).
   */
  async set(name: string, value: string, options: ChangeOptions<{ created: boolean }> = {}): Promise<boolean> {
    validateSecretName(name);
    validateSecretValue(value, formatEntryRef('secret', name));
    let created = false;
    await this.#mutate((entries, seal) => {
      created = !entries.has(getEntryKey('secret', name));
      entries.set(getEntryKey('secret', name), seal('secret', name, value));
      options.beforeCommit?.({ created });
      return true;
    });
    return created;
  }

  /** A new random blob id (for `encrypt`'s `id`, when it must be known before the value is stored). */
  async createBlobId(): Promise<string> {
    return generateId(await loadSodium());
  }

  /** Store `value` as an encrypted blob under a new random id (or `id`); returns the id (for `<<decrypt:ID>>`). */
  async encrypt(value: string, options: { label?: string; id?: string } & ChangeOptions<{ id: string }> = {}): Promise<string> {
    validateLabel(options.label);
    validateSecretValue(value, 'the blob');
    if (options.id !== undefined) validateSecretName(options.id, 'blob id');
    const id = options.id ?? (await this.createBlobId());
    await this.#mutate((entries, seal) => {
      entries.set(getEntryKey('decrypt', id), seal('decrypt', id, value, options.label));
      options.beforeCommit?.({ id });
      return true;
    });
    return id;
  }

  /** Remove an entry. Returns false when the vault did not hold it (`beforeCommit` is then not called). */
  async remove(kind: RefKind, name: string, options: ChangeOptions<{ kind: RefKind; name: string }> = {}): Promise<boolean> {
    validateKind(kind);
    validateSecretName(name, kind === 'secret' ? 'secret name' : 'blob id');
    if ((await this.#file.readDocument()) === undefined) return false;
    let removed = false;
    await this.#mutate((entries) => {
      removed = entries.delete(getEntryKey(kind, name));
      if (removed) options.beforeCommit?.({ kind, name });
      return removed;
    }, { createIfMissing: false });
    return removed;
  }

  /**
   * Re-encrypt every entry under a new random key, atomically. The new key is stored as pending
   * before the vault is replaced and promoted after; see keys.ts for the crash analysis.
   */
  async rotateKey(options: ChangeOptions<RotateResult> = {}): Promise<RotateResult | undefined> {
    if (hasEnvKey(this.#env)) {
      throw new ExecgateError(
        'EXECGATE_ERR_VAULT_KEY_EXTERNAL',
        `The vault key comes from ${ENV_KEY}, which execgate cannot change. If the vault's key is stored by execgate (key file or keyring), unset ${ENV_KEY} and rotate that key; otherwise the key is managed where the variable is set.`,
      );
    }
    ensureDir(this.home);
    return this.#file.withLock(async () => {
      const document = await this.#file.readDocument();
      if (document === undefined) return undefined;
      const open = await this.#file.open(document);
      if (open.loaded.pending) {
        // Finish an interrupted rotation first: the pending slot is about to be reused.
        await promotePendingKey(open.sodium, this.#keyConfig, open.loaded, document.vaultId).catch((error: unknown) => {
          this.#file.close(open);
          throw error;
        });
      }
      const newKey = generateKey(open.sodium);
      const newKeys = deriveKeys(open.sodium, newKey);
      try {
        const store = document.keyStore;
        const entries = document.entries.map((entry) => {
          const value = openValue(open.sodium, open.keys, { vaultId: document.vaultId, ...entry }, entry);
          if (value === undefined) throw this.#file.tampered([formatEntryRef(entry.kind, entry.name)]);
          return { ...entry, ...sealValue(open.sodium, newKeys, { vaultId: document.vaultId, ...entry }, value) };
        });
        const result = { entries: entries.length, oldKeyId: document.keyId, newKeyId: newKeys.keyId, keyStore: store };
        options.beforeCommit?.(result);
        await storeKey(open.sodium, this.#keyConfig, store, document.vaultId, newKey, true);
        const header: VaultHeader = { vaultId: document.vaultId, keyId: newKeys.keyId, keyStore: store, generation: document.generation + 1 };
        try {
          await this.#file.commit(open.sodium, newKeys, header, entries);
        } catch (error) {
          // Not committed: the vault is still under the old key; the staged key is useless.
          await discardPendingKey(this.#keyConfig, store, document.vaultId).catch(() => undefined);
          throw error;
        }
        // Committed: the vault is under the new key from here on. A promotion that fails (a full
        // disk) leaves the key staged, where every opener finds it and finishes the promotion.
        await promotePendingKey(open.sodium, this.#keyConfig, { key: newKey, keyId: newKeys.keyId, store, pending: true }, document.vaultId).catch(() => undefined);
        return result;
      } finally {
        wipeKeys(open.sodium, newKeys);
        open.sodium.memzero(newKey);
        this.#file.close(open);
      }
    });
  }

  async #mutate(change: EntryChange, options: { createIfMissing?: boolean } = {}): Promise<void> {
    ensureDir(this.home);
    await this.#file.withLock(async () => {
      const document = await this.#file.readDocument();
      if (document === undefined && options.createIfMissing === false) return;
      const open = document === undefined ? await this.#file.create() : await this.#file.open(document);
      try {
        if (open.loaded.pending) {
          // A rotation committed the vault but crashed before promoting its key: finish it.
          await promotePendingKey(open.sodium, this.#keyConfig, open.loaded, open.document.vaultId);
        }
        const now = new Date().toISOString();
        const entries = new Map(open.document.entries.map((entry) => [getEntryKey(entry.kind, entry.name), entry]));
        const changed = change(entries, (kind, name, value, label) => {
          const previous = entries.get(getEntryKey(kind, name));
          const sealed = sealValue(open.sodium, open.keys, { vaultId: open.document.vaultId, kind, name, label }, value);
          const entry = { kind, name, ...sealed, createdAt: previous?.createdAt ?? now, updatedAt: now };
          return label === undefined ? entry : { ...entry, label };
        });
        if (!changed) return;
        const header: VaultHeader = {
          vaultId: open.document.vaultId,
          keyId: open.document.keyId,
          keyStore: open.document.keyStore,
          generation: open.document.generation + 1,
        };
        await this.#file.commit(open.sodium, open.keys, header, [...entries.values()]);
      } finally {
        this.#file.close(open);
      }
    });
  }
}
