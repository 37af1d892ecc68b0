/*
 * The audit log: one sealed JSON line per event (pino's JSON-lines format, canonical member
 * order), each linked into a keyed hash chain (chain.ts), so edits, deletions, reorderings and
 * insertions are detected by `execgate audit verify`. Records carry unresolved commands,
 * reference names, value fingerprints and environment variable names, never values.
 *
 * Durability. `write` returns only after the whole line was handed to the kernel with a
 * synchronous write(2) (file) or to the destination stream: a record is acknowledged once the
 * call returns, and a crash of the process after that loses nothing (the page cache survives
 * the process). The `fsync` option decides what also survives a power loss: `before-spawn`
 * (default) fdatasyncs the record that precedes each spawn (`exec.started`), so a run can never
 * have happened without its record on disk; `always` fdatasyncs every record; `never` leaves it
 * to the kernel. A record may also be held (`hold`, a run's request) and go out with the next
 * record, in the same turn of the lock: a run's request and its start (or refusal) cost one lock,
 * and its start's fdatasync covers both. A held record is in memory only until then, so a process
 * killed while it prepares a run loses that run's request record, and nothing of that run ran.
 *
 * The chain continues from wherever it left off, read back under a lock file so that several
 * processes can share one log (chain-store.ts: the file, its rotation, or a state file beside a
 * stream); the first record of each file names the key id.
 */
import { dirname, join } from 'node:path';
import { maskStrings } from '../redact/deep';
import { ExecgateError, invalidOption, isExecgateError } from '../errors';
import { ensureDir, getHome } from '../home';
import { RESERVED_KEYS } from './canonical';
import { GENESIS_HASH, RECORD_VERSION, sealRecord, type ChainState, type SealedRecord } from './chain';
import { FileStore, ioError, StateStore, type ChainStore } from './chain-store';
import { closeAuditStream, isAuditStream, isAuditTransport, openAuditStream, type AuditDestination, type AuditStream } from './destination';
import { fingerprintValue, getAuditKeyPath, loadAuditKeys, type AuditKeys } from './key';
import { getAuditLeaseMs, releaseLease, withLockSync } from './lock';

export type AuditFields = Record<string, unknown>;

export interface AuditSink {
  write(event: string, fields: AuditFields): void;
  /**
   * Write now, or, when the log cannot be written (a full disk), keep the record and write it
   * ahead of the next record that can be written, or at close. Returns the error it met. For
   * records of something that already happened (a run's end), never for one that permits
   * something (a run's start).
   */
  writeOrDefer?(event: string, fields: AuditFields): Error | undefined;
  /**
   * Write now, like `write` (the record is in the file when it returns; throws when it cannot
   * be written), but run the fdatasync the durability policy asks for off the event loop: the
   * promise resolves once the record is durable, rejects with EXECGATE_ERR_AUDIT_IO when it
   * cannot be made so. For a run's start, whose
   * program is released only once its record is durable.
   */
  writeAndSync?(event: string, fields: AuditFields): Promise<void>;
  /**
   * Keep a record (sealed with the time of this call) to be written ahead of the next record
   * written, in the same turn of the lock, or at close. For a run's request, which its start
   * or its refusal follows within milliseconds: one lock and one fdatasync for both.
   */
  hold?(event: string, fields: AuditFields): void;
  close(): void;
  /** Keyed fingerprint of a resolved value, proving which version was used without revealing it. */
  fingerprint?(value: string): string;
}

export type FsyncPolicy = 'always' | 'before-spawn' | 'never';

/** What a host may set (the gateway's `audit` option). */
export interface AuditConfig {
  /** The audit file; default `<home>/audit.log` (JSON lines, created 0600). */
  path?: string;
  /** `file` (default), `stdout`, a pino transport config, or a stream. The chain is computed either way. */
  destination?: AuditDestination;
  /** A copy of every sealed line, besides the file: `stdout`, a pino transport or a stream (best effort, asynchronous). */
  forward?: Exclude<AuditDestination, 'file'>;
  /** The audit key (32 bytes or base64); default `EXECGATE_AUDIT_KEY`, else `<home>/audit.key`. */
  key?: Uint8Array | string;
  /** The audit key file; default `<home>/audit.key`. */
  keyPath?: string;
  /** Chain state for non-file destinations; default `<home>/audit.chain`. */
  statePath?: string;
  /** Rotate the file before it would exceed this many bytes; 0 turns rotation off. Default 64 MiB. */
  maxBytes?: number;
  /** Rotated files kept (oldest removed first); 0 keeps all. Default 0. */
  maxFiles?: number;
  /** Default `before-spawn`. */
  fsync?: FsyncPolicy;
  /**
   * Take the cross-process lock for each record (default true). Turn it off only when nothing
   * else writes this log (bulk generators); two unlocked writers fork the chain.
   */
  lock?: boolean;
}

export interface AuditOptions extends AuditConfig {
  /** State directory holding the key (and default paths); default the directory of `path`, else `$EXECGATE_HOME`. */
  home?: string;
  /** Environment consulted for EXECGATE_AUDIT_KEY; default process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface WrittenRecord {
  readonly seq: number;
  readonly hash: string;
}

/** Records whose loss would hide a spawn: fdatasynced under the `before-spawn` policy. */
const SPAWN_EVENTS: ReadonlySet<string> = new Set(['exec.started']);
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** A record longer than this has its long strings shortened, so every line stays readable back. */
const MAX_LINE_BYTES = 512 * 1024;
const LONG_STRING = 16 * 1024;

function invalidAuditOption(name: string, expected: string, value: unknown): ExecgateError {
  return invalidOption(name, value, expected, { of: 'audit' });
}

function shortenStrings(value: unknown): unknown {
  if (typeof value === 'string') return value.length > LONG_STRING ? `${value.slice(0, LONG_STRING)}…[${value.length - LONG_STRING} characters cut]` : value;
  if (Array.isArray(value)) return value.map(shortenStrings);
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = shortenStrings(item);
    return out;
  }
  return value;
}

export class AuditLog implements AuditSink {
  /** The audit file (with a non-file destination: where it would be). */
  readonly path: string;
  /** The key id records are sealed under. */
  readonly keyId: string;
  readonly #keys: AuditKeys;
  readonly #store: ChainStore;
  readonly #lockPath: string | undefined;
  readonly #fsync: FsyncPolicy;
  readonly #forward: { stream: AuditStream; owned: boolean } | undefined;
  /** Writes the `forward` copy refused (the local file has those records; `audit verify --against` shows the gap). */
  forwardErrors = 0;
  #closed = false;
  /**
   * Records waiting for the next write, oldest first: held ones (`hold`, with their time) and
   * ones that could not be written when they happened (writeOrDefer, marked `deferred`).
   */
  readonly #pending: Array<{ event: string; fields: AuditFields; time?: string; deferred?: true }> = [];

  constructor(options: AuditOptions = {}) {
    const env = options.env ?? process.env;
    const home = options.home ?? (options.path !== undefined ? dirname(options.path) : getHome(env));
    this.path = options.path ?? join(home, 'audit.log');
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw invalidAuditOption('maxBytes', 'a non-negative integer', maxBytes);
    const maxFiles = options.maxFiles ?? 0;
    if (!Number.isSafeInteger(maxFiles) || maxFiles < 0) throw invalidAuditOption('maxFiles', 'a non-negative integer', maxFiles);
    this.#fsync = options.fsync ?? 'before-spawn';
    if (!['always', 'before-spawn', 'never'].includes(this.#fsync)) throw invalidAuditOption('fsync', '`always`, `before-spawn` or `never`', options.fsync);
    const destination = options.destination ?? 'file';
    if (destination !== 'file' && destination !== 'stdout' && !isAuditStream(destination) && !isAuditTransport(destination)) {
      throw invalidAuditOption('destination', '`file`, `stdout`, a pino transport ({target}, {targets} or {pipeline}) or a stream', destination);
    }
    ensureDir(home);
    this.#keys = loadAuditKeys({ key: options.key, env, keyPath: options.keyPath ?? getAuditKeyPath(home), create: true });
    this.keyId = this.#keys.keyId;
    if (destination === 'file') {
      this.#store = new FileStore(this.path, this.#keys, maxBytes, maxFiles);
      this.#lockPath = `${this.path}.lock`;
    } else {
      const statePath = options.statePath ?? join(home, 'audit.chain');
      const owned = !isAuditStream(destination);
      this.#store = new StateStore(statePath, this.#keys, openAuditStream(destination), owned && destination !== 'stdout');
      this.#lockPath = `${statePath}.lock`;
    }
    if (options.lock === false) this.#lockPath = undefined;
    if (options.forward !== undefined) {
      const forward = options.forward;
      if (forward !== 'stdout' && !isAuditStream(forward) && !isAuditTransport(forward)) {
        throw invalidAuditOption('forward', '`stdout`, a pino transport or a stream', forward);
      }
      this.#forward = { stream: openAuditStream(forward), owned: !isAuditStream(forward) && forward !== 'stdout' };
      // The copy is best effort: a collector that is down or a transport that died must never
      // fail a write whose record is already in the file (an unhandled 'error' would end the process).
      (this.#forward.stream as { on?: (event: string, listener: () => void) => void }).on?.('error', () => {
        this.forwardErrors++;
      });
    }
  }

  /**
   * Applied to every string of a record before it is sealed: the gateway masks the values it
   * knows, so a path a run named after a resolved value is recorded masked.
   */
  mask: ((text: string) => string) | undefined;

  /** Whether a run's start record is fdatasynced before its command may act (`fsync` other than `never`). */
  get syncsBeforeSpawn(): boolean {
    return this.#fsync !== 'never' && this.#store instanceof FileStore;
  }

  /** Seal and write one record; returns its place in the chain once it is written. */
  write(event: string, fields: AuditFields = {}): WrittenRecord {
    if (this.#closed) throw new ExecgateError('EXECGATE_ERR_AUDIT_IO', `The audit log \`${this.path}\` is closed.`, { path: this.path });
    try {
      return this.#write(event, this.mask ? maskStrings(fields, this.mask) : fields, false).written;
    } catch (error) {
      throw isExecgateError(error) ? error : ioError(this.path, 'write', error);
    }
  }

  writeAndSync(event: string, fields: AuditFields = {}): Promise<void> {
    if (this.#closed) throw new ExecgateError('EXECGATE_ERR_AUDIT_IO', `The audit log \`${this.path}\` is closed.`, { path: this.path });
    try {
      return this.#write(event, this.mask ? maskStrings(fields, this.mask) : fields, true).synced ?? Promise.resolve();
    } catch (error) {
      throw isExecgateError(error) ? error : ioError(this.path, 'write', error);
    }
  }

  writeOrDefer(event: string, fields: AuditFields = {}): Error | undefined {
    try {
      this.write(event, fields);
      return undefined;
    } catch (error) {
      if (this.#closed) return error as Error;
      this.#pending.push({ event, fields: { ...fields, deferred: { at: new Date().toISOString(), code: (error as ExecgateError).code, errno: ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code } }, deferred: true });
      return error as Error;
    }
  }

  hold(event: string, fields: AuditFields = {}): void {
    if (this.#closed) throw new ExecgateError('EXECGATE_ERR_AUDIT_IO', `The audit log \`${this.path}\` is closed.`, { path: this.path });
    this.#pending.push({ event, fields: this.mask ? maskStrings(fields, this.mask) : fields, time: new Date().toISOString() });
  }

  /** Records kept by writeOrDefer that are not written yet. */
  get deferredCount(): number {
    return this.#pending.filter((record) => record.deferred).length;
  }

  /** Records kept by hold that are not written yet. */
  get heldCount(): number {
    return this.#pending.filter((record) => !record.deferred).length;
  }

  /**
   * Seal and append `event` (after any pending records) under the lock. With `syncLater`, a
   * record the policy wants durable is not fdatasynced here: `synced` settles once it is.
   */
  #write(event: string | undefined, fields: AuditFields, syncLater: boolean): { written: WrittenRecord; synced?: Promise<void> } {
    const lines: string[] = [];
    let synced: Promise<void> | undefined;
    const run = (): WrittenRecord => {
      const { state, firstInFile, leftover } = this.#store.refresh();
      let previous = state;
      let first = firstInFile;
      if (leftover !== undefined) {
        // Set aside what a crash left (see tail.ts) and say exactly which bytes.
        const prefix = leftover.terminated ? '' : '\n';
        const resumed = this.#seal(previous, 'chain.resumed', {
          recovered: { offset: leftover.offset, bytes: leftover.bytes + prefix.length },
          reason: 'the end of the file was not an intact record (a write cut short by a crash or a full disk)',
        }, first);
        this.#store.append(prefix + resumed.line, resumed, true);
        lines.push(resumed.line);
        previous = resumed;
        first = false;
      }
      // Held records and those that could not be written when they happened go first, in order.
      const pending = this.#pending.length;
      const records: Array<{ event: string; fields: AuditFields; time?: string }> = event === undefined ? [...this.#pending] : [...this.#pending, { event, fields }];
      let written: WrittenRecord = { seq: previous.seq, hash: previous.hash };
      let late = 0;
      let needSync = false;
      try {
        for (const record of records) {
          let sealed = this.#seal(previous, record.event, record.fields, first, record.time);
          if (this.#store.wantsRotation(Buffer.byteLength(sealed.line))) {
            this.#store.rotate();
            sealed = this.#seal(previous, record.event, record.fields, true, record.time);
          }
          const durable = this.#fsync === 'always' || (this.#fsync === 'before-spawn' && SPAWN_EVENTS.has(record.event));
          this.#store.append(sealed.line, sealed, durable && !syncLater);
          if (durable && syncLater) needSync = true;
          if (late < pending) late += 1;
          lines.push(sealed.line);
          previous = sealed;
          first = false;
          written = { seq: sealed.seq, hash: sealed.hash };
        }
      } finally {
        this.#pending.splice(0, late);
      }
      // Started under the lock, on the descriptor just written: it covers these records.
      if (needSync) synced = this.#store.syncLater();
      return written;
    };
    const written = this.#lockPath === undefined ? run() : withLockSync(this.#lockPath, run, { leaseMs: getAuditLeaseMs() });
    // The caller learns of a failed sync from the promise; none goes unhandled meanwhile.
    synced?.catch(() => undefined);
    if (this.#forward !== undefined) {
      for (const line of lines) {
        try {
          this.#forward.stream.write(line);
        } catch {
          this.forwardErrors++;
        }
      }
    }
    return { written, ...(synced ? { synced } : {}) };
  }

  #seal(previous: ChainState, event: string, fields: AuditFields, firstInFile: boolean, time = new Date().toISOString()): SealedRecord {
    const record: Record<string, unknown> = { v: RECORD_VERSION, seq: previous.seq + 1, time, event };
    for (const key of Object.keys(fields)) if (!RESERVED_KEYS.has(key) && key !== 'keyId') record[key] = fields[key];
    if (firstInFile) record.keyId = this.#keys.keyId;
    record.prev = previous.seq === 0 ? GENESIS_HASH : previous.hash;
    let sealed = sealRecord(this.#keys.chain, record);
    if (sealed.line.length > MAX_LINE_BYTES) {
      for (const key of Object.keys(record)) if (!RESERVED_KEYS.has(key)) record[key] = shortenStrings(record[key]);
      record.shortened = true;
      sealed = sealRecord(this.#keys.chain, record);
    }
    return sealed;
  }

  /** `hmac-sha256:` + 32 hex: a keyed fingerprint of a resolved value (the same value always gives the same fingerprint under one key). */
  fingerprint(value: string): string {
    return fingerprintValue(this.#keys, value);
  }

  close(): void {
    if (this.#closed) return;
    if (this.#pending.length > 0) {
      try {
        this.#write(undefined, {}, false);
      } catch {
        // Still not writable: those records are lost with this process, as the results that
        // carried their notices said.
      }
    }
    this.#closed = true;
    if (this.#lockPath !== undefined) releaseLease(this.#lockPath);
    this.#store.close();
    if (this.#forward !== undefined) closeAuditStream(this.#forward.stream, this.#forward.owned, { bestEffort: true });
  }
}

/** A sink that records nothing (audit turned off). */
export const NULL_AUDIT: AuditSink = Object.freeze({ write() { /* off */ }, close() { /* off */ } });
