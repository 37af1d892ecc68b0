/*
 * Where the audit chain is appended, and where it left off. Chain state is read back from the
 * end of the file (tail.ts) whenever the file changed under us (another process wrote, rotated,
 * or this is the first write), under the log's lock file, so several processes can share one
 * log. Rotation moves the active file aside when the next record would make it larger than
 * `maxBytes`; the chain continues in the new file. With a non-file destination there is no file
 * to read back, so the state lives in a small state file beside the key. Apart from log.ts,
 * which seals records and decides when they must be durable, because this is only bytes and
 * files: what either store does cannot change what a record says.
 */
import {
  closeSync,
  constants,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { ExecgateError } from '../errors';
import { ensureDir } from '../home';
import { EMPTY_CHAIN, type ChainState, type SealedRecord } from './chain';
import { closeAuditStream, type AuditStream } from './destination';
import { getRotatedPath, listRotatedFiles } from './files';
import type { AuditKeys } from './key';
import { readTail, type Leftover } from './tail';

export function ioError(path: string, doing: string, error: unknown): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_AUDIT_IO',
    `Cannot ${doing} the audit log \`${path}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}. Nothing is run while the audit log cannot be written.`,
    { path },
    { cause: error },
  );
}

function fsyncDirSync(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // platforms that cannot fsync a directory
  }
}

/** A place the chain is appended to, and where it left off. */
export interface ChainStore {
  /** Bring the state up to date (under the lock); returns leftover to set aside, if any. */
  refresh(): { state: ChainState; firstInFile: boolean; leftover?: Leftover };
  /** Whether a line of `bytes` should go to a fresh file first. */
  wantsRotation(bytes: number): boolean;
  rotate(): void;
  append(text: string, record: SealedRecord, durable: boolean): void;
  /**
   * Make what was appended so far durable off the event loop (fdatasync on the thread pool):
   * settles once it is on disk. Called under the lock, right after the append it covers.
   */
  syncLater(): Promise<void>;
  close(): void;
}

/*
 * The fdatasyncs of one descriptor, run on the thread pool. One in flight at a time: a request
 * that comes while one runs may have been written after that one began, so it waits for the next,
 * which covers every record written meanwhile (a group commit: many runs starting at once share
 * a few syncs). The descriptor is closed only once no sync needs it, so a sync never reaches a
 * descriptor number that was closed and reused for another file.
 */
class DescriptorSyncs {
  readonly #fd: number;
  readonly #path: string;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  #closeWhenIdle = false;

  constructor(fd: number, path: string) {
    this.#fd = fd;
    this.#path = path;
  }

  get busy(): boolean {
    return this.#running !== undefined || this.#next !== undefined;
  }

  request(): Promise<void> {
    if (this.#running === undefined) return this.#start();
    this.#next ??= this.#running.then(() => undefined, () => undefined).then(() => {
      this.#next = undefined;
      return this.#start();
    });
    return this.#next;
  }

  #start(): Promise<void> {
    const running = new Promise<void>((resolve, reject) => {
      fdatasync(this.#fd, (error) => {
        if (this.#running === running) this.#running = undefined;
        if (error) reject(ioError(this.#path, 'write', error));
        else resolve();
        this.#closeIfIdle();
      });
    });
    this.#running = running;
    return running;
  }

  /** Close the descriptor now, or once the syncs that need it are done. */
  close(): void {
    this.#closeWhenIdle = true;
    this.#closeIfIdle();
  }

  #closeIfIdle(): void {
    if (!this.#closeWhenIdle || this.busy) return;
    this.#closeWhenIdle = false;
    try {
      closeSync(this.#fd);
    } catch {
      // closed already
    }
  }
}

export class FileStore implements ChainStore {
  readonly #path: string;
  readonly #keys: AuditKeys;
  readonly #maxBytes: number;
  readonly #maxFiles: number;
  #fd = -1;
  #ino = -1;
  #dev = -1;
  #size = 0;
  #state: ChainState = EMPTY_CHAIN;
  #firstInFile = true;
  #syncs: DescriptorSyncs | undefined;

  constructor(path: string, keys: AuditKeys, maxBytes: number, maxFiles: number) {
    this.#path = path;
    this.#keys = keys;
    this.#maxBytes = maxBytes;
    this.#maxFiles = maxFiles;
  }

  #open(): void {
    ensureDir(dirname(this.#path));
    const created = !existsSync(this.#path);
    try {
      this.#fd = openSync(this.#path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0), 0o600);
    } catch (error) {
      throw ioError(this.#path, 'open', error);
    }
    const stat = fstatSync(this.#fd);
    this.#ino = stat.ino;
    this.#dev = stat.dev;
    if (created) fsyncDirSync(dirname(this.#path));
  }

  #closeFd(): void {
    if (this.#syncs !== undefined) this.#syncs.close();
    else if (this.#fd >= 0) closeSync(this.#fd);
    this.#syncs = undefined;
    this.#fd = -1;
  }

  syncLater(): Promise<void> {
    if (this.#fd < 0) return Promise.resolve();
    this.#syncs ??= new DescriptorSyncs(this.#fd, this.#path);
    return this.#syncs.request();
  }

  refresh(): { state: ChainState; firstInFile: boolean; leftover?: Leftover } {
    let current: { ino: number; dev: number; size: number } | undefined;
    try {
      current = statSync(this.#path);
    } catch {
      current = undefined;
    }
    if (this.#fd >= 0 && current !== undefined && current.ino === this.#ino && current.dev === this.#dev && current.size === this.#size) {
      return { state: this.#state, firstInFile: this.#firstInFile };
    }
    // First write, or another process wrote or rotated: read where the chain is now.
    if (this.#fd >= 0 && (current === undefined || current.ino !== this.#ino || current.dev !== this.#dev)) this.#closeFd();
    if (this.#fd < 0) this.#open();
    this.#size = fstatSync(this.#fd).size;
    const tail = readTail(this.#path, this.#fd, this.#size, this.#keys.chain);
    if (tail.kind === 'record') {
      this.#state = tail.state;
      this.#firstInFile = false;
      return { state: this.#state, firstInFile: false, ...(tail.leftover ? { leftover: tail.leftover } : {}) };
    }
    // Nothing intact in this file: the chain continues from the newest rotated file, if any.
    this.#state = this.#previousFileState();
    this.#firstInFile = true;
    return { state: this.#state, firstInFile: true, ...(tail.kind === 'no-record' ? { leftover: tail.leftover } : {}) };
  }

  #previousFileState(): ChainState {
    const rotated = listRotatedFiles(this.#path);
    for (let index = rotated.length - 1; index >= 0; index--) {
      const path = rotated[index];
      let fd: number;
      try {
        fd = openSync(path, 'r');
      } catch {
        continue;
      }
      try {
        const tail = readTail(path, fd, fstatSync(fd).size, this.#keys.chain);
        if (tail.kind === 'record') return tail.state;
      } finally {
        closeSync(fd);
      }
    }
    return EMPTY_CHAIN;
  }

  wantsRotation(bytes: number): boolean {
    return this.#maxBytes > 0 && this.#size > 0 && this.#size + bytes > this.#maxBytes;
  }

  rotate(): void {
    const target = getRotatedPath(this.#path, new Date(), existsSync);
    try {
      renameSync(this.#path, target);
    } catch (error) {
      throw ioError(this.#path, 'rotate', error);
    }
    this.#closeFd();
    this.#open();
    this.#size = 0;
    this.#firstInFile = true;
    if (this.#maxFiles > 0) {
      const rotated = listRotatedFiles(this.#path);
      for (const old of rotated.slice(0, Math.max(0, rotated.length - this.#maxFiles))) {
        try {
          unlinkSync(old);
        } catch {
          // already gone
        }
      }
    }
  }

  append(text: string, record: SealedRecord, durable: boolean): void {
    const buffer = Buffer.from(text, 'utf8');
    let done = 0;
    try {
      while (done < buffer.length) done += writeSync(this.#fd, buffer, done, buffer.length - done);
      if (durable) fdatasyncSync(this.#fd);
    } catch (error) {
      // Part of the line may be in the file (a full disk takes what fits). Cut it off again, so
      // the log stays a whole chain that verifies (this writer holds the lock: the bytes past
      // `#size` are its own); if even that fails, the next write reads the tail and sets the
      // leftover aside.
      try {
        if (done > 0) ftruncateSync(this.#fd, this.#size);
      } catch {
        this.#size = -1;
      }
      throw ioError(this.#path, 'write', error);
    }
    this.#size += buffer.length;
    this.#state = { seq: record.seq, hash: record.hash };
    this.#firstInFile = false;
  }

  close(): void {
    this.#closeFd();
  }
}

/** Chain state for destinations that cannot be read back: one small file, replaced atomically. */
export class StateStore implements ChainStore {
  readonly #statePath: string;
  readonly #keys: AuditKeys;
  readonly #stream: AuditStream;
  readonly #owned: boolean;
  #state: ChainState = EMPTY_CHAIN;

  constructor(statePath: string, keys: AuditKeys, stream: AuditStream, owned: boolean) {
    this.#statePath = statePath;
    this.#keys = keys;
    this.#stream = stream;
    this.#owned = owned;
  }

  refresh(): { state: ChainState; firstInFile: boolean } {
    let text: string | undefined;
    try {
      text = readFileSync(this.#statePath, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(this.#statePath, 'read the chain state of', error);
    }
    if (text === undefined) {
      this.#state = EMPTY_CHAIN;
      return { state: this.#state, firstInFile: true };
    }
    let saved: { seq?: unknown; hash?: unknown; keyId?: unknown } = {};
    try {
      saved = JSON.parse(text) as typeof saved;
    } catch {
      // damaged: refused below
    }
    if (saved === null || saved.keyId !== this.#keys.keyId || !Number.isSafeInteger(saved.seq) || typeof saved.hash !== 'string') {
      throw new ExecgateError(
        'EXECGATE_ERR_AUDIT_TAIL_INVALID',
        `The audit chain state \`${this.#statePath}\` was written under another audit key or is damaged; move it aside to start a new chain.`,
        { path: this.#statePath },
      );
    }
    this.#state = { seq: saved.seq as number, hash: saved.hash };
    return { state: this.#state, firstInFile: false };
  }

  wantsRotation(): boolean {
    return false;
  }

  rotate(): void {
    // streams do not rotate
  }

  syncLater(): Promise<void> {
    // A stream's durability is its destination's; the state file is replaced atomically.
    return Promise.resolve();
  }

  append(text: string, record: SealedRecord): void {
    this.#stream.write(text);
    const temp = `${this.#statePath}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      writeFileSync(temp, JSON.stringify({ seq: record.seq, hash: record.hash, keyId: this.#keys.keyId }), { mode: 0o600 });
      renameSync(temp, this.#statePath);
    } catch (error) {
      throw ioError(this.#statePath, 'save the chain state of', error);
    }
    this.#state = { seq: record.seq, hash: record.hash };
  }

  close(): void {
    closeAuditStream(this.#stream, this.#owned);
  }
}
