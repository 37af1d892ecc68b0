import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ExecgateError } from '../../src/errors';
import { createVaultSource } from '../../src/refs/sources';
import { Vault, type VaultOptions } from '../../src/stores';
import { computeMac, deriveKeys, decodeKey } from '../../src/stores/crypto';
import { getMacInput, type VaultEntry } from '../../src/stores/format';
import { loadSodium } from '../../src/stores/sodium';
import { makeTempDir } from '../helpers/tmp';

const VALUE_A = 'alpha-value-4f9c2e';
const VALUE_B = 'bravo-value-81d3aa';

let temp: { dir: string; cleanup: () => void };
let home: string;

beforeEach(() => {
  temp = makeTempDir('execgate-vault-');
  home = join(temp.dir, 'home');
});
afterEach(() => temp.cleanup());

function vault(options: Partial<VaultOptions> = {}): Vault {
  return new Vault({ home, env: {}, keyring: false, ...options });
}

async function caught(promise: Promise<unknown>): Promise<ExecgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ExecgateError);
    const coded = error as ExecgateError;
    for (const secret of [VALUE_A, VALUE_B]) {
      expect(coded.message).not.toContain(secret);
      expect(JSON.stringify(coded.details)).not.toContain(secret);
    }
    return coded;
  }
  throw new Error('expected a rejection');
}

function readDocument(): Record<string, unknown> & { entries: VaultEntry[] } {
  return JSON.parse(readFileSync(join(home, 'vault.json'), 'utf8'));
}

function writeDocument(document: unknown): void {
  writeFileSync(join(home, 'vault.json'), JSON.stringify(document));
}

async function twoEntries(): Promise<Vault> {
  const v = vault();
  await v.set('alpha', VALUE_A);
  await v.set('bravo', VALUE_B);
  return v;
}

/** Re-sign the document with the real key: what an attacker who stole the key could do. */
async function resign(document: Record<string, unknown> & { entries: VaultEntry[] }): Promise<void> {
  const sodium = await loadSodium();
  const keys = deriveKeys(sodium, decodeKey(sodium, readFileSync(join(home, 'vault.key'), 'utf8'))!);
  document.mac = computeMac(sodium, keys, getMacInput(document as never, document.entries));
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('vault: basic operations', () => {
  test('no vault file: nothing found, nothing created', async () => {
    const v = vault();
    expect(await v.exists()).toBe(false);
    expect(await v.get('secret', 'alpha')).toBeUndefined();
    expect(await v.list()).toEqual([]);
    expect(await v.remove('secret', 'alpha')).toBe(false);
    expect(existsSync(home)).toBe(false);
  });

  test('set, get, list, replace, remove', async () => {
    const v = await twoEntries();
    expect(await v.get('secret', 'alpha')).toBe(VALUE_A);
    expect(await v.get('secret', 'bravo')).toBe(VALUE_B);
    expect(await v.get('secret', 'charlie')).toBeUndefined();
    expect(await v.get('decrypt', 'alpha')).toBeUndefined();
    expect(await v.has('secret', 'alpha')).toBe(true);
    expect((await v.list()).map((entry) => `${entry.kind}:${entry.name}`)).toEqual(['secret:alpha', 'secret:bravo']);

    const before = (await v.list())[0]!;
    expect(await v.set('alpha', 'alpha-replaced-77')).toBe(false);
    expect(await v.get('secret', 'alpha')).toBe('alpha-replaced-77');
    expect((await v.list())[0]!.createdAt).toBe(before.createdAt);

    expect(await v.remove('secret', 'alpha')).toBe(true);
    expect(await v.remove('secret', 'alpha')).toBe(false);
    expect(await v.get('secret', 'alpha')).toBeUndefined();
    expect(await v.get('secret', 'bravo')).toBe(VALUE_B);
  });

  test('files are private and hold no plaintext', async () => {
    await twoEntries();
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, 'vault.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'vault.key')).mode & 0o777).toBe(0o600);
    const document = readDocument();
    expect(document).toMatchObject({ format: 'execgate-vault', version: 1, keyStore: 'file', generation: 2 });
    for (const file of ['vault.json', 'vault.key']) {
      const text = readFileSync(join(home, file), 'utf8');
      expect(text).not.toContain(VALUE_A);
      expect(text).not.toContain(Buffer.from(VALUE_A).toString('base64'));
    }
    expect(existsSync(join(home, 'vault.json.lock'))).toBe(false);
  });

  test('encrypted blobs by random id, with a label', async () => {
    const v = vault();
    const id = await v.encrypt(VALUE_A, { label: 'deploy key' });
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    const other = await v.encrypt(VALUE_A);
    expect(other).not.toBe(id);
    expect(await v.get('decrypt', id)).toBe(VALUE_A);
    expect(await v.get('secret', id)).toBeUndefined();
    expect(await v.list()).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'decrypt', name: id, label: 'deploy key' })]));
    // Equal plaintexts do not give equal ciphertexts (random nonces).
    const [first, second] = readDocument().entries;
    expect(first!.ciphertext).not.toBe(second!.ciphertext);
  });

  test('invalid names, labels and values are refused', async () => {
    const v = vault();
    for (const name of ['', '-x', '.x', 'a b', 'a'.repeat(129), 'x\n', '_hidden']) {
      expect((await caught(v.set(name, VALUE_A))).code).toBe('EXECGATE_ERR_SECRET_NAME_INVALID');
    }
    expect(await v.set('a'.repeat(128), VALUE_A)).toBe(true);
    expect(await v.set('team/db.password_2-x', VALUE_A)).toBe(true);
    for (const value of ['', 'a\0b']) {
      expect((await caught(v.set('ok', value))).code).toBe('EXECGATE_ERR_SECRET_VALUE_INVALID');
    }
    expect((await caught(v.encrypt(VALUE_A, { label: 'two\nlines' }))).code).toBe('EXECGATE_ERR_SECRET_NAME_INVALID');
  });
});

describe('vault: keys', () => {
  test('EXECGATE_VAULT_KEY is used and no key file is written', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const v = vault({ env: { EXECGATE_VAULT_KEY: key } });
    await v.set('alpha', VALUE_A);
    expect(existsSync(join(home, 'vault.key'))).toBe(false);
    expect(readDocument().keyStore).toBe('env');
    expect(await vault({ env: { EXECGATE_VAULT_KEY: key } }).get('secret', 'alpha')).toBe(VALUE_A);

    const missing = await caught(vault().get('secret', 'alpha'));
    expect(missing.code).toBe('EXECGATE_ERR_VAULT_KEY_MISSING');
    expect(missing.message).toContain('EXECGATE_VAULT_KEY');

    const wrong = await caught(vault({ env: { EXECGATE_VAULT_KEY: Buffer.alloc(32, 8).toString('base64') } }).get('secret', 'alpha'));
    expect(wrong.code).toBe('EXECGATE_ERR_VAULT_WRONG_KEY');

    const invalid = await caught(vault({ env: { EXECGATE_VAULT_KEY: 'not-a-key' } }).get('secret', 'alpha'));
    expect(invalid.code).toBe('EXECGATE_ERR_VAULT_KEY_INVALID');
  });

  test('EXECGATE_VAULT_KEY overrides a key file', async () => {
    await twoEntries();
    const key = readFileSync(join(home, 'vault.key'), 'utf8').trim();
    unlinkSync(join(home, 'vault.key'));
    expect((await caught(vault().get('secret', 'alpha'))).code).toBe('EXECGATE_ERR_VAULT_KEY_MISSING');
    expect(await vault({ env: { EXECGATE_VAULT_KEY: key } }).get('secret', 'alpha')).toBe(VALUE_A);
  });

  test('a wrong key file: EXECGATE_ERR_VAULT_WRONG_KEY, nothing decrypted', async () => {
    await twoEntries();
    writeFileSync(join(home, 'vault.key'), `${Buffer.alloc(32, 1).toString('base64')}\n`, { mode: 0o600 });
    const error = await caught(vault().get('secret', 'alpha'));
    expect(error.code).toBe('EXECGATE_ERR_VAULT_WRONG_KEY');
    expect(error.message).toMatch(/written under key id [0-9a-f]{12}/);
    // Writes fail the same way and leave the vault alone.
    const before = readFileSync(join(home, 'vault.json'), 'utf8');
    expect((await caught(vault().set('charlie', VALUE_A))).code).toBe('EXECGATE_ERR_VAULT_WRONG_KEY');
    expect(readFileSync(join(home, 'vault.json'), 'utf8')).toBe(before);
  });

  test('a key file readable by group or others is refused (0644, 0640, 0604)', async () => {
    await twoEntries();
    for (const mode of [0o644, 0o640, 0o604]) {
      chmodSync(join(home, 'vault.key'), mode);
      const error = await caught(vault().get('secret', 'alpha'));
      expect(error.code).toBe('EXECGATE_ERR_VAULT_KEY_PERMISSIONS');
      expect(error.message).toContain(`mode 0${mode.toString(8)}`);
      expect(error.message).toContain('chmod 600');
    }
    chmodSync(join(home, 'vault.key'), 0o400);
    expect(await vault().get('secret', 'alpha')).toBe(VALUE_A);
  });

  test('a key file that is a symlink is refused', async () => {
    await twoEntries();
    renameSync(join(home, 'vault.key'), join(temp.dir, 'elsewhere.key'));
    symlinkSync(join(temp.dir, 'elsewhere.key'), join(home, 'vault.key'));
    expect((await caught(vault().get('secret', 'alpha'))).code).toBe('EXECGATE_ERR_VAULT_KEY_PERMISSIONS');
  });

  test('a corrupt key file: EXECGATE_ERR_VAULT_KEY_INVALID', async () => {
    await twoEntries();
    writeFileSync(join(home, 'vault.key'), 'c2hvcnQ=\n', { mode: 0o600 });
    expect((await caught(vault().get('secret', 'alpha'))).code).toBe('EXECGATE_ERR_VAULT_KEY_INVALID');
  });
});

describe('vault: tampering and corruption', () => {
  test('a changed ciphertext is named', async () => {
    await twoEntries();
    const document = readDocument();
    const bytes = Buffer.from(document.entries[1]!.ciphertext, 'base64');
    bytes[0] ^= 1;
    (document.entries[1] as { ciphertext: string }).ciphertext = bytes.toString('base64');
    writeDocument(document);
    const error = await caught(vault().get('secret', 'alpha'));
    expect(error.code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
    expect(error.message).toContain('<<secret:bravo>>');
    expect(error.message).not.toContain('<<secret:alpha>>');
    expect(error.details.entries).toEqual(['<<secret:bravo>>']);
  });

  test('swapped entries are detected, even with a valid file MAC', async () => {
    await twoEntries();
    const document = readDocument();
    const [a, b] = document.entries as { nonce: string; ciphertext: string }[];
    [a!.nonce, b!.nonce] = [b!.nonce, a!.nonce];
    [a!.ciphertext, b!.ciphertext] = [b!.ciphertext, a!.ciphertext];
    writeDocument(document);
    let error = await caught(vault().get('secret', 'alpha'));
    expect(error.code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
    expect(error.details.entries).toEqual(['<<secret:alpha>>', '<<secret:bravo>>']);

    // With the MAC recomputed, the per-entry associated data still binds each name.
    await resign(document);
    writeDocument(document);
    error = await caught(vault().get('secret', 'alpha'));
    expect(error.code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
    expect(error.message).toContain('<<secret:alpha>>');
    expect((await caught(vault().verify())).code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
  });

  test('an entry renamed, or moved to the other kind, is detected', async () => {
    await twoEntries();
    const document = readDocument();
    (document.entries[0] as { name: string }).name = 'alpha2';
    await resign(document);
    writeDocument(document);
    expect((await caught(vault().get('secret', 'alpha2'))).code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
    (document.entries[0] as { name: string; kind: string }).name = 'alpha';
    (document.entries[0] as { kind: string }).kind = 'decrypt';
    await resign(document);
    writeDocument(document);
    expect((await caught(vault().get('decrypt', 'alpha'))).code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
  });

  test('an entry removed, or reverted to an older ciphertext, is detected', async () => {
    const v = await twoEntries();
    const old = readDocument();
    const removed = readDocument();
    removed.entries.splice(0, 1);
    writeDocument(removed);
    let error = await caught(vault().get('secret', 'bravo'));
    expect(error.code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
    expect(error.message).toContain('list of entries was changed');

    writeDocument(old);
    await v.set('alpha', 'alpha-new-value-1');
    const reverted = readDocument();
    reverted.entries[0] = old.entries[0]!;
    writeDocument(reverted);
    error = await caught(vault().get('secret', 'bravo'));
    expect(error.code).toBe('EXECGATE_ERR_VAULT_TAMPERED');
  });

  test('a vault file that is some other file: the error quotes nothing of it', async () => {
    await twoEntries();
    for (const content of ['root:x:0:0:root:/root:/bin/bash\n', '{"password": "hunter2-and-more"', 'AKIAEXAMPLEKEY123 wJalrXUtnFEMI']) {
      writeFileSync(join(home, 'vault.json'), content);
      const error = await caught(vault().get('secret', 'alpha'));
      expect(error.code).toBe('EXECGATE_ERR_VAULT_CORRUPT');
      for (const piece of content.split(/[^A-Za-z0-9]+/).filter((word) => word.length >= 4)) expect(error.message).not.toContain(piece);
    }
  });

  test('truncated, empty, garbage and malformed files are corrupt; a newer format is refused', async () => {
    await twoEntries();
    const text = readFileSync(join(home, 'vault.json'), 'utf8');
    const cases: [string, RegExp][] = [
      [text.slice(0, Math.floor(text.length / 2)), /truncated/],
      [text.slice(0, -3), /truncated/],
      ['', /empty/],
      ['\u0000\u0001garbage', /not valid JSON/],
      ['[]', /not an execgate vault/],
      [JSON.stringify({ ...JSON.parse(text), entries: [...JSON.parse(text).entries, JSON.parse(text).entries[0]] }), /appears twice/],
      [JSON.stringify({ ...JSON.parse(text), entries: [{ kind: 'secret' }] }), /entry 0 is malformed/],
      [JSON.stringify({ ...JSON.parse(text), keyId: 'zz' }), /keyId/],
    ];
    for (const [content, pattern] of cases) {
      writeFileSync(join(home, 'vault.json'), content);
      const error = await caught(vault().get('secret', 'alpha'));
      expect(error.code).toBe('EXECGATE_ERR_VAULT_CORRUPT');
      expect(error.message).toMatch(pattern);
      // A write must not "repair" a corrupt vault by replacing it.
      expect((await caught(vault().set('charlie', VALUE_A))).code).toBe('EXECGATE_ERR_VAULT_CORRUPT');
      expect(readFileSync(join(home, 'vault.json'), 'utf8')).toBe(content);
    }
    writeFileSync(join(home, 'vault.json'), JSON.stringify({ ...JSON.parse(text), version: 2 }));
    expect((await caught(vault().get('secret', 'alpha'))).code).toBe('EXECGATE_ERR_VAULT_VERSION');
  });
});

describe('vault: rotate-key', () => {
  test('every entry stays readable, the old key stops working', async () => {
    const v = await twoEntries();
    const id = await v.encrypt(VALUE_B, { label: 'blob' });
    const oldKey = readFileSync(join(home, 'vault.key'), 'utf8').trim();
    const before = readDocument();

    const result = await v.rotateKey();
    expect(result).toMatchObject({ entries: 3, oldKeyId: before.keyId, keyStore: 'file' });
    expect(result!.newKeyId).not.toBe(before.keyId);

    const after = readDocument();
    expect(after.vaultId).toBe(before.vaultId);
    expect(after.keyId).toBe(result!.newKeyId);
    expect(after.generation).toBe((before.generation as number) + 1);
    for (const [index, entry] of after.entries.entries()) expect(entry.ciphertext).not.toBe(before.entries[index]!.ciphertext);
    expect(readFileSync(join(home, 'vault.key'), 'utf8').trim()).not.toBe(oldKey);
    expect(existsSync(join(home, 'vault.key.next'))).toBe(false);
    expect(statSync(join(home, 'vault.key')).mode & 0o777).toBe(0o600);

    expect(await vault().get('secret', 'alpha')).toBe(VALUE_A);
    expect(await vault().get('secret', 'bravo')).toBe(VALUE_B);
    expect(await vault().get('decrypt', id)).toBe(VALUE_B);
    expect((await vault().list()).find((entry) => entry.name === id)?.label).toBe('blob');
    expect(await vault().verify()).toMatchObject({ entries: 3, keyId: result!.newKeyId });

    const stale = await caught(vault({ env: { EXECGATE_VAULT_KEY: oldKey } }).get('secret', 'alpha'));
    expect(stale.code).toBe('EXECGATE_ERR_VAULT_WRONG_KEY');
  });

  test('no vault: nothing to rotate; a key from the environment cannot be rotated', async () => {
    expect(await vault().rotateKey()).toBeUndefined();
    const key = Buffer.alloc(32, 3).toString('base64');
    await vault({ env: { EXECGATE_VAULT_KEY: key } }).set('alpha', VALUE_A);
    expect((await caught(vault({ env: { EXECGATE_VAULT_KEY: key } }).rotateKey())).code).toBe('EXECGATE_ERR_VAULT_KEY_EXTERNAL');
  });

  test('crash after the new vault is committed, before the key is promoted: recovered', async () => {
    const v = await twoEntries();
    copyFileSync(join(home, 'vault.key'), join(temp.dir, 'old.key'));
    await v.rotateKey();
    // Recreate the crash window: vault under the new key, which is still only "pending".
    renameSync(join(home, 'vault.key'), join(home, 'vault.key.next'));
    copyFileSync(join(temp.dir, 'old.key'), join(home, 'vault.key'));
    chmodSync(join(home, 'vault.key'), 0o600);
    expect(await vault().get('secret', 'alpha')).toBe(VALUE_A);
    // The next write finishes the rotation.
    await vault().set('charlie', VALUE_B);
    expect(existsSync(join(home, 'vault.key.next'))).toBe(false);
    expect(await vault().get('secret', 'charlie')).toBe(VALUE_B);
    expect(await vault().get('secret', 'bravo')).toBe(VALUE_B);
  });

  test('rotating again right after such a crash keeps the vault readable', async () => {
    const v = await twoEntries();
    copyFileSync(join(home, 'vault.key'), join(temp.dir, 'old.key'));
    await v.rotateKey();
    renameSync(join(home, 'vault.key'), join(home, 'vault.key.next'));
    copyFileSync(join(temp.dir, 'old.key'), join(home, 'vault.key'));
    chmodSync(join(home, 'vault.key'), 0o600);
    expect((await vault().rotateKey())!.entries).toBe(2);
    expect(existsSync(join(home, 'vault.key.next'))).toBe(false);
    expect(await vault().get('secret', 'alpha')).toBe(VALUE_A);
  });

  test('crash before the new vault is committed: the old key still opens it', async () => {
    await twoEntries();
    writeFileSync(join(home, 'vault.key.next'), `${Buffer.alloc(32, 9).toString('base64')}\n`, { mode: 0o600 });
    expect(await vault().get('secret', 'alpha')).toBe(VALUE_A);
    expect((await vault().rotateKey())!.entries).toBe(2);
    expect(await vault().get('secret', 'bravo')).toBe(VALUE_B);
  });
});

describe('vault: lock file', () => {
  test('a live holder that does nothing makes writers wait, then fail with EXECGATE_ERR_VAULT_LOCKED', async () => {
    await twoEntries();
    const lock = join(home, 'vault.json.lock');
    // A holder that is alive but uses no CPU: hung, as far as a waiter can tell.
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(lock, JSON.stringify({ pid: sleeper.pid, host: hostname(), token: 'other', time: new Date().toISOString() }));
      const error = await caught(vault({ lockTimeoutMs: 300 }).set('charlie', VALUE_A));
      expect(error.code).toBe('EXECGATE_ERR_VAULT_LOCKED');
      expect(error.message).toContain(`process ${sleeper.pid}`);
      expect(existsSync(lock)).toBe(true);
      // Readers take no lock.
      expect(await vault().get('secret', 'alpha')).toBe(VALUE_A);
      unlinkSync(lock);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  test('a lock left by a dead process is broken; stray temp files are removed', async () => {
    await twoEntries();
    const lock = join(home, 'vault.json.lock');
    writeFileSync(lock, JSON.stringify({ pid: deadPid(), host: hostname(), token: 'dead', time: new Date().toISOString() }));
    writeFileSync(join(home, '.vault.json.tmp-1-abc'), 'half a vault');
    await vault({ lockTimeoutMs: 2000 }).set('charlie', VALUE_A);
    expect(existsSync(lock)).toBe(false);
    expect(existsSync(join(home, '.vault.json.tmp-1-abc'))).toBe(false);
    expect(await vault().get('secret', 'charlie')).toBe(VALUE_A);
  });

  test('a lock held by a process on another host is not broken', async () => {
    await twoEntries();
    writeFileSync(join(home, 'vault.json.lock'), JSON.stringify({ pid: deadPid(), host: 'other-host.example', token: 'x', time: 'then' }));
    expect((await caught(vault({ lockTimeoutMs: 200 }).set('charlie', VALUE_A))).code).toBe('EXECGATE_ERR_VAULT_LOCKED');
  });

  test('writers in one process are serialized without losing entries', async () => {
    const v = vault();
    await Promise.all(Array.from({ length: 12 }, (_, index) => v.set(`name-${index}`, `value-${index}-xyz`)));
    expect((await v.list()).length).toBe(12);
    expect(await v.get('secret', 'name-11')).toBe('value-11-xyz');
  });
});

describe('vault source', () => {
  test('answers secret and decrypt references, not-found for unknown names', async () => {
    const v = await twoEntries();
    const id = await v.encrypt(VALUE_B);
    const source = createVaultSource({ home, env: {}, keyring: false });
    expect(source.name).toBe('vault');
    expect(source.kinds).toEqual(['secret', 'decrypt']);
    expect(await source.lookup('secret', 'alpha')).toEqual({ found: true, value: VALUE_A });
    expect(await source.lookup('decrypt', id)).toEqual({ found: true, value: VALUE_B });
    expect(await source.lookup('secret', 'nope')).toEqual({ found: false });
    expect(await source.lookup('decrypt', 'alpha')).toEqual({ found: false });
  });

  test('without a vault file every lookup is not-found', async () => {
    const source = createVaultSource({ home, env: {}, keyring: false });
    expect(await source.lookup('secret', 'alpha')).toEqual({ found: false });
  });

  test('a vault that cannot be verified fails the reference closed, naming it and the cause', async () => {
    await twoEntries();
    writeFileSync(join(home, 'vault.key'), `${Buffer.alloc(32, 1).toString('base64')}\n`, { mode: 0o600 });
    const source = createVaultSource({ home, env: {}, keyring: false });
    for (const name of ['alpha', 'not-in-the-vault']) {
      const error = await caught(Promise.resolve(source.lookup('secret', name)));
      expect(error.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
      expect(error.message).toContain(`<<secret:${name}>>`);
      expect(error.message).toContain('EXECGATE_ERR_VAULT_WRONG_KEY');
      expect(error.details).toMatchObject({ reference: `<<secret:${name}>>`, source: 'vault', reason: 'EXECGATE_ERR_VAULT_WRONG_KEY' });
    }
    writeFileSync(join(home, 'vault.json'), '{"format":"execgate-vault","vers');
    const corrupt = await caught(Promise.resolve(source.lookup('secret', 'alpha')));
    expect(corrupt.details.reason).toBe('EXECGATE_ERR_VAULT_CORRUPT');
  });
});
