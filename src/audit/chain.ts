/*
 * The hash chain. Record n carries `seq` = n, `prev` = the `hash` of record n-1 (64 zeros for
 * the first record of a chain) and `hash` = HMAC-SHA256(chain key, canonical body), where the
 * canonical body is the record without `hash` (canonical.ts), which is also exactly the line's
 * text up to the `hash` member. Because the MAC is keyed, nobody without the audit key can
 * recompute hashes after an edit; because each record names its predecessor's hash and its own
 * position, deleting, reordering or inserting records breaks a link.
 */
import * as crypto from 'node:crypto';
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

/*
 * HMAC-SHA256 as two one-shot hashes over preallocated buffers: the same function as
 * crypto.createHmac (RFC 2104), without allocating an Hmac object per record, which is most of
 * the cost of verifying a million records. Falls back to createHmac where crypto.hash is missing.
 */
class ChainMac {
  readonly #key: KeyObject;
  readonly #outer = Buffer.alloc(64 + 32);
  #inner = Buffer.alloc(64 + 4096);

  constructor(key: KeyObject) {
    this.#key = key;
    const raw = key.export();
    for (let index = 0; index < 64; index++) {
      const byte = index < raw.length ? raw[index] : 0;
      this.#inner[index] = byte ^ 0x36;
      this.#outer[index] = byte ^ 0x5c;
    }
    raw.fill(0);
  }

  #room(bytes: number): Buffer {
    if (this.#inner.length < 64 + bytes) {
      const grown = Buffer.alloc(64 + Math.max(bytes, this.#inner.length * 2));
      this.#inner.copy(grown, 0, 0, 64);
      this.#inner = grown;
    }
    return this.#inner;
  }

  /** HMAC of `body`, or of `body` followed by `}` when `close` (a line cut before its hash member). */
  digest(body: string | Buffer, close = false): Buffer {
    if (typeof hashOnce !== 'function') {
      const hmac = createHmac('sha256', this.#key).update(body);
      if (close) hmac.update('}');
      return hmac.digest();
    }
    let length: number;
    if (typeof body === 'string') {
      const inner = this.#room(Buffer.byteLength(body) + 1);
      length = 64 + inner.write(body, 64, 'utf8');
    } else {
      const inner = this.#room(body.length + 1);
      body.copy(inner, 64);
      length = 64 + body.length;
    }
    if (close) this.#inner[length++] = 0x7d;
    hashOnce('sha256', this.#inner.subarray(0, length), 'buffer').copy(this.#outer, 64);
    return hashOnce('sha256', this.#outer, 'buffer');
  }
}

const hashOnce = (crypto as unknown as { hash?: (algorithm: string, data: Buffer, encoding: 'buffer') => Buffer }).hash;
const macs = new WeakMap<KeyObject, ChainMac>();

function getMac(key: KeyObject): ChainMac {
  let mac = macs.get(key);
  if (mac === undefined) {
    mac = new ChainMac(key);
    macs.set(key, mac);
  }
  return mac;
}

export function computeHash(key: KeyObject, body: string | Buffer): string {
  return getMac(key).digest(body).toString('hex');
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
    if (!isHexByte(bytes[index])) return { ok: false, why: 'its `hash` is not 64 lower-case hex digits' };
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
  return { ok: true, record, macOk: checkMac(key, bytes) };
}

/** Whether the hash at the end of a sealed line is the MAC of the bytes before it. */
function checkMac(key: KeyObject, bytes: Buffer): boolean {
  const tailStart = bytes.length - HASH_TAIL_LENGTH;
  const hexStart = tailStart + HASH_TAIL_PREFIX.length;
  const mac = getMac(key).digest(bytes.subarray(0, tailStart), true);
  const stated = Buffer.from(bytes.subarray(hexStart, hexStart + 64).toString('latin1'), 'hex');
  return stated.length === 32 && timingSafeEqual(mac, stated);
}

const SEQ_HEAD = Buffer.from('{"v":1,"seq":');
const PREV_MARK = Buffer.from(',"prev":"');
const HASH_MARK = Buffer.from('","hash":"');
const CHAIN_EVENT = Buffer.from('"event":"chain.');
/** `,"prev":"` + 64 hex + `","hash":"` + 64 hex + `"}` */
const LINK_TAIL_LENGTH = 9 + 64 + 10 + 64 + 2;

export interface FastLink {
  readonly seq: number;
  readonly prev: string;
  readonly hash: string;
}

/**
 * The chain link of a line whose MAC verifies, read from the fixed places the canonical form
 * puts them (seq second, prev and hash last) without parsing the JSON: safe because only the
 * key holder's writer produces bytes that pass the MAC, and it writes the canonical form.
 * Undefined when the line needs the full parse: a MAC failure, another shape, or a `chain.*`
 * record, whose fields the verifier reads.
 */
export function readVerifiedLink(key: KeyObject, bytes: Buffer): FastLink | undefined {
  const length = bytes.length;
  if (length < SEQ_HEAD.length + LINK_TAIL_LENGTH + 2 || bytes.compare(SEQ_HEAD, 0, SEQ_HEAD.length, 0, SEQ_HEAD.length) !== 0) return undefined;
  const prevStart = length - LINK_TAIL_LENGTH;
  if (bytes.compare(PREV_MARK, 0, PREV_MARK.length, prevStart, prevStart + PREV_MARK.length) !== 0) return undefined;
  const hashMark = prevStart + PREV_MARK.length + 64;
  if (bytes.compare(HASH_MARK, 0, HASH_MARK.length, hashMark, hashMark + HASH_MARK.length) !== 0) return undefined;
  if (bytes[length - 1] !== 0x7d || bytes[length - 2] !== 0x22) return undefined;
  let seq = 0;
  let index = SEQ_HEAD.length;
  for (; index < SEQ_HEAD.length + 16; index++) {
    const byte = bytes[index];
    if (byte < 0x30 || byte > 0x39) break;
    seq = seq * 10 + (byte - 0x30);
  }
  if (index === SEQ_HEAD.length || bytes[index] !== 0x2c || seq < 1 || !Number.isSafeInteger(seq)) return undefined;
  // `event` comes right after `time`, within the first bytes of the line.
  if (bytes.subarray(0, 128).indexOf(CHAIN_EVENT) >= 0) return undefined;
  if (!checkMac(key, bytes)) return undefined;
  const prev = bytes.toString('latin1', prevStart + PREV_MARK.length, hashMark);
  const hash = bytes.toString('latin1', hashMark + HASH_MARK.length, length - 2);
  return { seq, prev, hash };
}
