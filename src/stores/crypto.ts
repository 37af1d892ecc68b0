/*
 * The vault's cryptography, in one place.
 *
 * The 32-byte vault key is never used directly: three subkeys are derived from it
 * (crypto_kdf, context `execgate`): one encrypts entries, one authenticates the whole file,
 * one yields the key id. The key id lets execgate tell "wrong key" from "tampered entry" and
 * find the right key during a rotation; it reveals nothing about the key.
 *
 * Each entry is sealed with XChaCha20-Poly1305 under a fresh random 192-bit nonce. Its
 * associated data binds the format, the vault id, the kind, the name and the label, so an
 * entry's ciphertext moved under another name, kind or vault fails authentication. The file
 * MAC (HMAC-SHA-512/256 over every header field and entry) catches what per-entry AEAD cannot:
 * an entry removed, duplicated or reverted to an older ciphertext.
 *
 * Buffers that held plaintext or key material are wiped with sodium.memzero once used. JS
 * strings cannot be wiped; they are kept only as long as the caller holds them.
 */
import type { RefKind } from './names';
import type { Sodium } from './sodium';

export const KEY_BYTES = 32;
const KDF_CONTEXT = 'execgate';
const SUBKEY_ENCRYPT = 1;
const SUBKEY_MAC = 2;
const SUBKEY_ID = 3;

export interface DerivedKeys {
  readonly keyId: string;
  readonly encryptKey: Uint8Array;
  readonly macKey: Uint8Array;
}

export function deriveKeys(sodium: Sodium, key: Uint8Array): DerivedKeys {
  const idBytes = sodium.crypto_kdf_derive_from_key(16, SUBKEY_ID, KDF_CONTEXT, key);
  const keyId = sodium.to_hex(idBytes);
  sodium.memzero(idBytes);
  return {
    keyId,
    encryptKey: sodium.crypto_kdf_derive_from_key(KEY_BYTES, SUBKEY_ENCRYPT, KDF_CONTEXT, key),
    macKey: sodium.crypto_kdf_derive_from_key(KEY_BYTES, SUBKEY_MAC, KDF_CONTEXT, key),
  };
}

export function getKeyId(sodium: Sodium, key: Uint8Array): string {
  const keys = deriveKeys(sodium, key);
  wipeKeys(sodium, keys);
  return keys.keyId;
}

export function wipeKeys(sodium: Sodium, keys: DerivedKeys): void {
  sodium.memzero(keys.encryptKey);
  sodium.memzero(keys.macKey);
}

export function generateKey(sodium: Sodium): Uint8Array {
  return sodium.randombytes_buf(KEY_BYTES);
}

export interface EntryBinding {
  readonly vaultId: string;
  readonly kind: RefKind;
  readonly name: string;
  readonly label?: string | undefined;
}

function getAssociatedData(binding: EntryBinding): Uint8Array {
  // NUL cannot occur in any field (ids are hex, names follow the ref grammar, labels are printable).
  return Buffer.from(['execgate-vault', 'v1', binding.vaultId, binding.kind, binding.name, binding.label ?? ''].join('\0'), 'utf8');
}

export interface Sealed {
  readonly nonce: string;
  readonly ciphertext: string;
}

const B64 = 1; // sodium.base64_variants.ORIGINAL

export function sealValue(sodium: Sodium, keys: DerivedKeys, binding: EntryBinding, value: string): Sealed {
  const plaintext = Buffer.from(value, 'utf8');
  try {
    const nonce = sodium.randombytes_buf(sodium.crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    const ciphertext = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
      plaintext, getAssociatedData(binding), null, nonce, keys.encryptKey,
    );
    return { nonce: sodium.to_base64(nonce, B64), ciphertext: sodium.to_base64(ciphertext, B64) };
  } finally {
    sodium.memzero(plaintext);
  }
}

/** The plaintext, or undefined when authentication fails (wrong key, tampered or moved entry). */
export function openValue(sodium: Sodium, keys: DerivedKeys, binding: EntryBinding, sealed: Sealed): string | undefined {
  let plaintext: Uint8Array;
  try {
    plaintext = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      sodium.from_base64(sealed.ciphertext, B64),
      getAssociatedData(binding),
      sodium.from_base64(sealed.nonce, B64),
      keys.encryptKey,
    );
  } catch {
    return undefined;
  }
  try {
    return Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength).toString('utf8');
  } finally {
    sodium.memzero(plaintext);
  }
}

/** Whether `sealed` authenticates under `keys` for `binding`, without keeping the plaintext. */
export function canOpen(sodium: Sodium, keys: DerivedKeys, binding: EntryBinding, sealed: Sealed): boolean {
  try {
    const plaintext = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      sodium.from_base64(sealed.ciphertext, B64),
      getAssociatedData(binding),
      sodium.from_base64(sealed.nonce, B64),
      keys.encryptKey,
    );
    sodium.memzero(plaintext);
    return true;
  } catch {
    return false;
  }
}

export function computeMac(sodium: Sodium, keys: DerivedKeys, input: string): string {
  return sodium.to_base64(sodium.crypto_auth(Buffer.from(input, 'utf8'), keys.macKey), B64);
}

export function verifyMac(sodium: Sodium, keys: DerivedKeys, input: string, mac: string): boolean {
  try {
    return sodium.crypto_auth_verify(sodium.from_base64(mac, B64), Buffer.from(input, 'utf8'), keys.macKey);
  } catch {
    return false;
  }
}

export function encodeKey(sodium: Sodium, key: Uint8Array): string {
  return sodium.to_base64(key, B64);
}

/** The 32 key bytes, or undefined when `text` is not base64 of exactly 32 bytes. */
export function decodeKey(sodium: Sodium, text: string): Uint8Array | undefined {
  const trimmed = text.trim();
  for (const variant of [1, 3, 5, 7]) {
    try {
      const bytes = sodium.from_base64(trimmed, variant);
      if (bytes.length === KEY_BYTES) return bytes;
      sodium.memzero(bytes);
      return undefined;
    } catch {
      // try the next variant
    }
  }
  return undefined;
}

export function generateId(sodium: Sodium): string {
  return sodium.to_hex(sodium.randombytes_buf(16));
}
