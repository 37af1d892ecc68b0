/*
 * vault.json: a small JSON document, readable by people, holding only ciphertext.
 *
 *   { "format": "execgate-vault", "version": 1,
 *     "vaultId": 32 hex, "keyId": 32 hex, "keyStore": "keyring" | "file" | "env",
 *     "generation": n (bumped by every commit),
 *     "entries": [ { "kind", "name", "label"?, "nonce", "ciphertext", "createdAt", "updatedAt" } ],
 *     "mac": base64 }
 *
 * Parsing is strict: anything unexpected is reported as a corrupt vault rather than guessed at.
 */
import { ExecgateError } from '../errors';
import type { RefKind } from './names';
import { isValidSecretName } from './names';

export const VAULT_FORMAT = 'execgate-vault';
export const VAULT_VERSION = 1;

export type KeyStoreKind = 'keyring' | 'file' | 'env';

export interface VaultEntry {
  readonly kind: RefKind;
  readonly name: string;
  readonly label?: string;
  readonly nonce: string;
  readonly ciphertext: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface VaultHeader {
  readonly vaultId: string;
  readonly keyId: string;
  readonly keyStore: KeyStoreKind;
  readonly generation: number;
}

export interface VaultDocument extends VaultHeader {
  readonly entries: readonly VaultEntry[];
  readonly mac: string;
}

const HEX_ID = /^[0-9a-f]{32}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ENTRY_KEYS = new Set(['kind', 'name', 'label', 'nonce', 'ciphertext', 'createdAt', 'updatedAt']);
const DOCUMENT_KEYS = new Set(['format', 'version', 'vaultId', 'keyId', 'keyStore', 'generation', 'entries', 'mac']);

function corrupt(path: string, problem: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_VAULT_CORRUPT',
    `The vault file \`${path}\` is corrupt: ${problem}. Restore it from a backup, or move it aside to start an empty vault.`,
    { path },
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseVault(text: string, path: string): VaultDocument {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    // The parser's message quotes the text it choked on: never put a file's content in an error.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    const detail = text.trim() === '' ? 'the file is empty' : `it is not valid JSON (${position === undefined ? 'it ends early' : `at byte ${position}`}); it may be truncated`;
    throw corrupt(path, detail);
  }
  if (!isRecord(data) || data.format !== VAULT_FORMAT) throw corrupt(path, 'it is not an execgate vault document');
  if (typeof data.version !== 'number' || !Number.isInteger(data.version)) throw corrupt(path, 'the `version` field is missing');
  if (data.version !== VAULT_VERSION) {
    throw new ExecgateError(
      'EXECGATE_ERR_VAULT_VERSION',
      `The vault file \`${path}\` has format version ${data.version}; this execgate reads version ${VAULT_VERSION}. Use the execgate release that wrote it.`,
      { path, version: data.version },
    );
  }
  for (const key of Object.keys(data)) if (!DOCUMENT_KEYS.has(key)) throw corrupt(path, `unexpected field \`${key}\``);
  if (typeof data.vaultId !== 'string' || !HEX_ID.test(data.vaultId)) throw corrupt(path, 'the `vaultId` field is invalid');
  if (typeof data.keyId !== 'string' || !HEX_ID.test(data.keyId)) throw corrupt(path, 'the `keyId` field is invalid');
  if (data.keyStore !== 'keyring' && data.keyStore !== 'file' && data.keyStore !== 'env') throw corrupt(path, 'the `keyStore` field is invalid');
  if (typeof data.generation !== 'number' || !Number.isSafeInteger(data.generation) || data.generation < 0) {
    throw corrupt(path, 'the `generation` field is invalid');
  }
  if (typeof data.mac !== 'string' || !BASE64.test(data.mac)) throw corrupt(path, 'the `mac` field is invalid');
  if (!Array.isArray(data.entries)) throw corrupt(path, 'the `entries` field is not a list');
  const seen = new Set<string>();
  const entries = data.entries.map((raw: unknown, index: number) => {
    const entry = parseEntry(raw);
    if (entry === undefined) throw corrupt(path, `entry ${index} is malformed`);
    const key = `${entry.kind}:${entry.name}`;
    if (seen.has(key)) throw corrupt(path, `<<${key}>> appears twice`);
    seen.add(key);
    return entry;
  });
  return {
    vaultId: data.vaultId,
    keyId: data.keyId,
    keyStore: data.keyStore,
    generation: data.generation,
    entries,
    mac: data.mac,
  };
}

function parseEntry(raw: unknown): VaultEntry | undefined {
  if (!isRecord(raw)) return undefined;
  for (const key of Object.keys(raw)) if (!ENTRY_KEYS.has(key)) return undefined;
  const { kind, name, label, nonce, ciphertext, createdAt, updatedAt } = raw;
  if (kind !== 'secret' && kind !== 'decrypt') return undefined;
  if (!isValidSecretName(name)) return undefined;
  if (label !== undefined && typeof label !== 'string') return undefined;
  if (typeof nonce !== 'string' || !BASE64.test(nonce)) return undefined;
  if (typeof ciphertext !== 'string' || !BASE64.test(ciphertext)) return undefined;
  if (typeof createdAt !== 'string' || typeof updatedAt !== 'string') return undefined;
  return label === undefined
    ? { kind, name, nonce, ciphertext, createdAt, updatedAt }
    : { kind, name, label, nonce, ciphertext, createdAt, updatedAt };
}

/** The exact bytes the file MAC covers: every field but the MAC itself, in a fixed order. */
export function getMacInput(header: VaultHeader, entries: readonly VaultEntry[]): string {
  return JSON.stringify([
    VAULT_FORMAT,
    VAULT_VERSION,
    header.vaultId,
    header.keyId,
    header.keyStore,
    header.generation,
    entries.map((entry) => [entry.kind, entry.name, entry.label ?? null, entry.nonce, entry.ciphertext, entry.createdAt, entry.updatedAt]),
  ]);
}

export function sortEntries(entries: readonly VaultEntry[]): VaultEntry[] {
  return [...entries].sort((a, b) => (a.kind === b.kind ? compare(a.name, b.name) : compare(a.kind, b.kind)));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function serializeVault(document: VaultDocument): string {
  const { vaultId, keyId, keyStore, generation, entries, mac } = document;
  return `${JSON.stringify({ format: VAULT_FORMAT, version: VAULT_VERSION, vaultId, keyId, keyStore, generation, entries, mac }, null, 2)}\n`;
}
