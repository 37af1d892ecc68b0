/*
 * The hash chain. Record n carries `seq` = n, `prev` = the `hash` of record n-1 (64 zeros for
 * the first record of a chain) and `hash` = HMAC-SHA256(chain key, canonical body), where the
 * canonical body is the record without `hash` (canonical.ts), which is also exactly the line's
 * text up to the `hash` member. Because the MAC is keyed, nobody without the audit key can
 * recompute hashes after an edit; because each record names its predecessor's hash and its own
 * position, deleting, reordering or inserting records breaks a link.
 */
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { sealLine, serializeBody } from './canonical';

export const RECORD_VERSION = 1;
export const GENESIS_HASH = '0'.repeat(64);

/** `,"hash":"` + 64 hex + `"}`: the fixed tail of every sealed line (newline excluded). */
const HASH_TAIL_LENGTH = 9 + 64 + 2;
const HASH_TAIL_PREFIX = Buffer.from(',"hash":"');
const HEX64 = /^[0-9a-f]{64}$/;

export interface ChainState {
  readonly seq: number;
  readonly hash: string;
}

export const EMPTY_CHAIN: ChainState = Object.freeze({ seq: 0, hash: GENESIS_HASH });

export interface SealedRecord {
  readonly seq: number;
  readonly hash: string;
  /** The line to write, newline included. */
  readonly line: string;
}

export function computeHash(key: KeyObject, body: string | Buffer): string {
  return createHmac('sha256', key).update(body).digest('hex');
}

/** Seal `record` (which already has v, seq, time, event, prev) into its line. */
export function sealRecord(key: KeyObject, record: Readonly<Record<string, unknown>>): SealedRecord {
  const body = serializeBody(record);
  const hash = computeHash(key, body);
  return { seq: record.seq as number, hash, line: sealLine(body, hash) };
}

/** A chain record as read back: the fields the chain needs, and the whole record. */
export interface ChainRecord {
  readonly v: number;
  readonly seq: number;
  readonly prev: string;
  readonly hash: string;
  readonly time: string;
  readonly event: string;
  readonly [field: string]: unknown;
}

export type ParsedLine =
  | { readonly ok: true; readonly record: ChainRecord; readonly macOk: boolean }
  | { readonly ok: false; readonly why: string };

function isHexByte(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66);
}

/**
 * Parse one line (without its newline) and check its MAC over the exact bytes before the hash
 * member. `ok: false` means the line is not an audit record at all; `macOk: false` means it is
 * shaped like one but was edited, forged, or sealed under another key.
 */
export function parseChainLine(key: KeyObject | undefined, bytes: Buffer): ParsedLine {
  const length = bytes.length;
  if (length === 0) return { ok: false, why: 'an empty line' };
  if (length < HASH_TAIL_LENGTH + 2 || bytes[0] !== 0x7b || bytes[length - 1] !== 0x7d || bytes[length - 2] !== 0x22) {
    return { ok: false, why: 'not a sealed audit record (no `hash` member at its end)' };
  }
  const tailStart = length - HASH_TAIL_LENGTH;
  if (bytes.compare(HASH_TAIL_PREFIX, 0, HASH_TAIL_PREFIX.length, tailStart, tailStart + HASH_TAIL_PREFIX.length) !== 0) {
    return { ok: false, why: 'not a sealed audit record (no `hash` member at its end)' };
  }
  const hexStart = tailStart + HASH_TAIL_PREFIX.length;
  for (let index = hexStart; index < hexStart + 64; index++) {
    if (!isHexByte(bytes[index]!)) return { ok: false, why: 'its `hash` is not 64 lower-case hex digits' };
  }
  let record: ChainRecord;
  try {
    record = JSON.parse(bytes.toString('utf8')) as ChainRecord;
  } catch {
    return { ok: false, why: 'not valid JSON' };
  }
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return { ok: false, why: 'not a JSON object' };
  if (record.v !== RECORD_VERSION) return { ok: false, why: `its format version is ${JSON.stringify(record.v)}, not ${RECORD_VERSION}` };
  if (!Number.isSafeInteger(record.seq) || record.seq < 1) return { ok: false, why: 'its `seq` is not a positive integer' };
  if (typeof record.prev !== 'string' || !HEX64.test(record.prev)) return { ok: false, why: 'its `prev` is not 64 hex digits' };
  if (typeof record.event !== 'string' || typeof record.time !== 'string') return { ok: false, why: 'it lacks `event` or `time`' };
  if (key === undefined) return { ok: true, record, macOk: false };
  const mac = createHmac('sha256', key).update(bytes.subarray(0, tailStart)).update('}').digest();
  const stated = Buffer.from(bytes.subarray(hexStart, hexStart + 64).toString('latin1'), 'hex');
  return { ok: true, record, macOk: timingSafeEqual(mac, stated) };
}
