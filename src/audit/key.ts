/*
 * The audit key: 32 random bytes from which two keys are derived (HKDF-SHA256), one that seals
 * the hash chain and one that fingerprints resolved values, so a fingerprint never doubles as a
 * chain MAC. A short key id (also derived) lets `verify` say "written under another key".
 *
 * Where it lives, first hit wins:
 * - the host's `key` option (any store a host prefers: a KMS, the OS keyring, a sealed file);
 * - `EXECGATE_AUDIT_KEY` (base64 of 32 bytes), for containers and CI, as EXECGATE_VAULT_KEY;
 * - the key file `audit.key` in the state directory: created 0600 on first use, and refused when
 *   group or others may read it, when it is a symlink or when another user owns it (the same
 *   rules as the vault key file).
 * The OS keyring is not consulted: every record is sealed synchronously, including the one the
 * gateway writes from its constructor, and a keyring read can block on an unlock prompt with no
 * way to time it out synchronously. A host that wants the key in the keyring reads it there and
 * passes it as `key`.
 */
import { closeSync, fsyncSync, linkSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { dirname, join } from 'node:path';
import { ExecgateError } from '../errors';
import { ensureDir } from '../home';
import { readPrivateFileSync, type PrivateFileRules } from '../fs/private';

export const AUDIT_KEY_ENV = 'EXECGATE_AUDIT_KEY';
export const AUDIT_KEY_FILE = 'audit.key';
export const FINGERPRINT_PREFIX = 'hmac-sha256:';
/** Hex characters of the fingerprint kept (128 bits: collision-free for any realistic number of values). */
const FINGERPRINT_HEX = 32;

export interface AuditKeys {
  /** Seals the hash chain. */
  readonly chain: KeyObject;
  /** Fingerprints resolved values. */
  readonly fingerprint: KeyObject;
  /** 16 hex characters naming the key without revealing it. */
  readonly keyId: string;
  /** Where the key came from: `option`, `env` or the key file path. */
  readonly source: string;
}

export interface AuditKeyOptions {
  /** The key itself (32 bytes, or base64 of them); wins over everything else. */
  key?: Uint8Array | string;
  env?: NodeJS.ProcessEnv;
  /** The key file; default `<home>/audit.key`. */
  keyPath?: string;
  /** Create the key file when no key exists (writers do; readers and verifiers do not). */
  create?: boolean;
}

function derive(master: Uint8Array, info: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `execgate audit ${info} v1`, 32));
}

export function deriveAuditKeys(master: Uint8Array, source: string): AuditKeys {
  const chain = derive(master, 'chain');
  const fingerprint = derive(master, 'fingerprint');
  const keyId = derive(master, 'key id').toString('hex').slice(0, 16);
  const keys = { chain: createSecretKey(chain), fingerprint: createSecretKey(fingerprint), keyId, source };
  chain.fill(0);
  fingerprint.fill(0);
  return Object.freeze(keys);
}

/** `hmac-sha256:` + 32 hex characters of a keyed HMAC of the value: proves which value was used without revealing it. */
export function fingerprintValue(keys: AuditKeys, value: string): string {
  return FINGERPRINT_PREFIX + createHmac('sha256', keys.fingerprint).update(value, 'utf8').digest('hex').slice(0, FINGERPRINT_HEX);
}

function keyInvalid(where: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_AUDIT_KEY_INVALID',
    `The audit key in ${where} is not base64 of exactly 32 bytes. Restore the key the audit log was written with.`,
    { where },
  );
}

function decodeKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : Buffer.alloc(0);
  if (bytes.length !== 32) throw keyInvalid(where);
  return bytes;
}

/** Read the key file, refusing one others could read or that is not plainly ours; undefined when absent. */
function readKeyFile(path: string): string | undefined {
  return readPrivateFileSync(path, KEY_FILE_RULES);
}

const KEY_FILE_RULES: PrivateFileRules = {
  what: 'audit key file',
  permissionsCode: 'EXECGATE_ERR_AUDIT_KEY_PERMISSIONS',
  ioCode: 'EXECGATE_ERR_AUDIT_IO',
  risk: ' and forge audit records',
};

/** Create the key file atomically (a complete file or none): write a private temp file, then hard-link it into place. */
function createKeyFile(path: string): void {
  ensureDir(dirname(path));
  const temp = join(dirname(path), `.${AUDIT_KEY_FILE}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
  const key = randomBytes(32);
  try {
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, `${key.toString('base64')}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(temp, path);
    } catch (error) {
      // Another process created it first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } catch (error) {
    throw new ExecgateError('EXECGATE_ERR_AUDIT_IO', `Cannot create the audit key file \`${path}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`, { path }, { cause: error });
  } finally {
    key.fill(0);
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
  }
}

/** Find the audit key (see the top of this file); create the key file when asked and none exists. */
export function loadAuditKeys(options: AuditKeyOptions & { keyPath: string }): AuditKeys {
  if (options.key !== undefined) {
    const bytes = typeof options.key === 'string' ? decodeKey(options.key, 'the `key` option') : Buffer.from(options.key);
    if (bytes.length !== 32) throw keyInvalid('the `key` option');
    return deriveAndForget(bytes, 'option');
  }
  const fromEnv = options.env?.[AUDIT_KEY_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return deriveAndForget(decodeKey(fromEnv, AUDIT_KEY_ENV), 'env');
  let text = readKeyFile(options.keyPath);
  if (text === undefined && options.create) {
    createKeyFile(options.keyPath);
    text = readKeyFile(options.keyPath);
  }
  if (text === undefined) {
    throw new ExecgateError(
      'EXECGATE_ERR_AUDIT_KEY_MISSING',
      `No audit key: ${AUDIT_KEY_ENV} is not set and \`${options.keyPath}\` does not exist. Set ${AUDIT_KEY_ENV} or pass --key-file with the key the log was written under.`,
      { path: options.keyPath },
    );
  }
  return deriveAndForget(decodeKey(text, `\`${options.keyPath}\``), options.keyPath);
}

function deriveAndForget(master: Buffer, source: string): AuditKeys {
  try {
    return deriveAuditKeys(master, source);
  } finally {
    master.fill(0);
  }
}

export function getAuditKeyPath(home: string): string {
  return join(home, AUDIT_KEY_FILE);
}
