/*
 * The vault file as every operation of a Vault meets it: read afresh, opened (the key loaded and
 * the whole file verified before anything in it is trusted), and committed by atomic rename under
 * the writers' lock. Apart from vault.ts, which holds the operations and decides what changes,
 * because this is the one way any change is read and written: nothing here knows what an entry
 * means.
 */
import { ExecgateError, isExecgateError } from '../errors';
import { removeStaleTemps, writeFileAtomic } from '../fs/atomic';
import { readRegularFile } from '../fs/special';
import { canOpen, computeMac, deriveKeys, generateId, verifyMac, wipeKeys, type DerivedKeys } from './crypto';
import { getMacInput, parseVault, serializeVault, sortEntries, type VaultDocument, type VaultEntry, type VaultHeader } from './format';
import { createKey, loadKey, type KeyConfig, type LoadedKey } from './keys';
import { withLock } from './lock';
import { formatEntryRef } from './names';
import { loadSodium, type Sodium } from './sodium';

export interface OpenVault {
  readonly sodium: Sodium;
  readonly document: VaultDocument;
  readonly loaded: LoadedKey;
  readonly keys: DerivedKeys;
}

export class VaultFile {
  readonly path: string;
  readonly keyPath: string;
  readonly keyConfig: KeyConfig;
  readonly #lockPath: string;
  readonly #lockTimeoutMs: number | undefined;

  constructor(path: string, keyPath: string, keyConfig: KeyConfig, lockTimeoutMs: number | undefined) {
    this.path = path;
    this.keyPath = keyPath;
    this.keyConfig = keyConfig;
    this.#lockPath = `${path}.lock`;
    this.#lockTimeoutMs = lockTimeoutMs;
  }

  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    // Loaded before the lock, not under it: compiling libsodium takes a loaded machine seconds,
    // and every other writer would wait them out.
    await loadSodium();
    return withLock(
      this.#lockPath,
      async () => {
        await removeStaleTemps(this.path);
        await removeStaleTemps(this.keyPath);
        return fn();
      },
      this.#lockTimeoutMs === undefined ? {} : { timeoutMs: this.#lockTimeoutMs },
    );
  }

  async commit(sodium: Sodium, keys: DerivedKeys, header: VaultHeader, entries: readonly VaultEntry[]): Promise<void> {
    const sorted = sortEntries(entries);
    const mac = computeMac(sodium, keys, getMacInput(header, sorted));
    try {
      await writeFileAtomic(this.path, serializeVault({ ...header, entries: sorted, mac }), 0o600);
    } catch (error) {
      throw new ExecgateError(
        'EXECGATE_ERR_VAULT_IO',
        `Cannot write the vault \`${this.path}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}. The previous vault is unchanged.`,
        { path: this.path },
        { cause: error },
      );
    }
  }

  /** A new, empty vault with a new id and key (nothing written yet). */
  async create(): Promise<OpenVault> {
    const sodium = await loadSodium();
    const vaultId = generateId(sodium);
    const loaded = await createKey(sodium, this.keyConfig, vaultId);
    const keys = deriveKeys(sodium, loaded.key);
    const document: VaultDocument = { vaultId, keyId: keys.keyId, keyStore: loaded.store, generation: 0, entries: [], mac: '' };
    return { sodium, document, loaded, keys };
  }

  async readDocument(): Promise<VaultDocument | undefined> {
    let text: string;
    try {
      text = await readRegularFile(this.path, 'vault');
    } catch (error) {
      if (isExecgateError(error)) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      throw new ExecgateError('EXECGATE_ERR_VAULT_IO', `Cannot read the vault \`${this.path}\`: ${code ?? String(error)}.`, { path: this.path }, { cause: error });
    }
    return parseVault(text, this.path);
  }

  /**
   * Read and verify the vault for a reader. Optimistically without the lock: a rotation
   * committing between our read of the file and our read of the key shows up as a wrong key
   * while the file on disk now has another key id. Rotations can follow one another faster than
   * a slow reader (a loaded machine), so after the first such miss the reader reads once more
   * holding the writers' lock, where no rotation can be half done: a rotation that completed
   * while it read never surfaces as VAULT_WRONG_KEY. A wrong key with an unchanged file is a
   * real wrong key.
   */
  async readAndOpen(): Promise<OpenVault | undefined> {
    const document = await this.readDocument();
    if (document === undefined) return undefined;
    try {
      return await this.open(document);
    } catch (error) {
      if (!(error instanceof ExecgateError && error.code === 'EXECGATE_ERR_VAULT_WRONG_KEY')) throw error;
      const current = await this.readDocument();
      if (current === undefined || current.keyId === document.keyId) throw error;
    }
    return this.withLock(async () => {
      const locked = await this.readDocument();
      return locked === undefined ? undefined : this.open(locked);
    });
  }

  /** Load the key and verify the whole file; on a MAC failure, name the entries that fail. */
  async open(document: VaultDocument): Promise<OpenVault> {
    const sodium = await loadSodium();
    const loaded = await loadKey(sodium, this.keyConfig, document, this.path);
    const keys = deriveKeys(sodium, loaded.key);
    const open = { sodium, document, loaded, keys };
    if (!verifyMac(sodium, keys, getMacInput(document, document.entries), document.mac)) {
      const bad = document.entries
        .filter((entry) => !canOpen(sodium, keys, { vaultId: document.vaultId, ...entry }, entry))
        .map((entry) => formatEntryRef(entry.kind, entry.name));
      this.close(open);
      throw this.tampered(bad);
    }
    return open;
  }

  close(open: OpenVault): void {
    wipeKeys(open.sodium, open.keys);
    open.sodium.memzero(open.loaded.key);
  }

  tampered(refs: readonly string[]): ExecgateError {
    const what =
      refs.length > 0
        ? `${refs.length === 1 ? 'entry' : 'entries'} ${refs.join(', ')} failed authentication (changed, or moved from another name)`
        : 'its header or list of entries was changed (an entry removed, reordered or reverted)';
    return new ExecgateError(
      'EXECGATE_ERR_VAULT_TAMPERED',
      `The vault \`${this.path}\` was modified outside execgate: ${what}. Nothing was decrypted. Restore the vault from a backup.`,
      { path: this.path, entries: [...refs] },
    );
  }
}
