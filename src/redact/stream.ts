/*
 * Streaming redaction with no timing window: bytes that could still begin an occurrence (a suffix
 * that is a proper prefix of some pattern; at most maxLength - 1 bytes) are held until enough
 * bytes arrive to decide them, or until flush().
 * Every byte is decided by the same `redactRange` step a whole buffer goes through, so the output
 * does not depend on how the input was chunked.
 */
import { createRegionState, endRegion, redactRange, type CompiledPatterns, type RegionState } from './regions';

export interface RedactStream {
  /** Feed bytes; returns the bytes that are now safe to emit (possibly empty). */
  push(chunk: Buffer): Buffer;
  /**
   * Feed bytes; hands the bytes that are now safe to emit to `sink`, in order, in pieces (never
   * empty ones: views of the chunk and replacements) rather than joined: what push() returns,
   * without copying the chunk.
   */
  pushTo(chunk: Buffer, sink: (bytes: Buffer) => void): void;
  /** End of stream: returns the remaining held bytes, redacted. The stream can then be reused. */
  flush(): Buffer;
  /** Matches (merged regions) replaced so far. */
  readonly count: number;
}

const EMPTY = Buffer.alloc(0);

export class RedactionStream implements RedactStream {
  readonly #getCompiled: () => CompiledPatterns;
  #held: Buffer = EMPTY;
  readonly #state: RegionState = createRegionState();

  /** `getCompiled` is asked on every call so values added later apply to bytes not yet emitted. */
  constructor(getCompiled: () => CompiledPatterns) {
    this.#getCompiled = getCompiled;
  }

  get count(): number {
    return this.#state.count;
  }

  push(chunk: Buffer): Buffer {
    return this.#push(toBytes(chunk));
  }

  /** push(); with `sink`, what is decided goes to it in pieces (redactRange) and the result is empty. */
  #push(bytes: Buffer, sink?: (bytes: Buffer) => void): Buffer {
    if (bytes.length === 0) return EMPTY;
    const compiled = this.#getCompiled();
    // Join only when bytes are held: copying every chunk cost ~10% of pipe throughput. What is
    // returned may then alias the caller's chunk (stream chunks are never reused); what is held
    // is always copied.
    const buffer = this.#held.length === 0 ? bytes : Buffer.concat([this.#held, bytes]);
    const lastStart = compiled.matcher.holdStart(buffer) - 1;
    if (lastStart < 0) {
      this.#held = buffer === bytes ? Buffer.from(bytes) : buffer;
      return EMPTY;
    }
    const output = redactRange(compiled, buffer, lastStart, this.#state, sink);
    this.#held = lastStart + 1 === buffer.length ? EMPTY : Buffer.from(buffer.subarray(lastStart + 1));
    return output;
  }

  /*
   * A chunk usually arrives with a few bytes held from the one before (with many patterns the last
   * byte of nearly every chunk may begin one: 62 of 64 chunks of log text with 1,000 secrets), and
   * push() joins them to the chunk, copying all of it (64 KiB, and the garbage of a buffer as large)
   * to decide a few bytes. Here the held bytes are decided first, with a copy of the chunk's first
   * bytes only: an occurrence that starts in them ends within SEAM of its start (a line-tolerant
   * spelling of L bytes with a line break, two bytes at most, every 4 characters or more spans less
   * than 1.5 L + 4 bytes; endAcrossBreaks in matcher.ts). That is the step redactRange makes at
   * any chunk boundary (what it decides does not depend on where a buffer was cut): decided bytes,
   * and an open region carried over to the chunk, which is then pushed with nothing held. A chunk
   * with an occurrence in it goes on as its pieces (the bytes around each replacement), not joined.
   */
  pushTo(chunk: Buffer, sink: (bytes: Buffer) => void): void {
    const bytes = toBytes(chunk);
    if (this.#held.length > 0) {
      const compiled = this.#getCompiled();
      const seam = 2 * compiled.matcher.maxLength + 8;
      // A short chunk is joined as push() does: the copy is as short.
      if (bytes.length > 2 * seam) {
        const held = this.#held;
        redactRange(compiled, Buffer.concat([held, bytes.subarray(0, seam)]), held.length - 1, this.#state, sink);
        this.#held = EMPTY;
      }
    }
    // A chunk with an occurrence goes on as its pieces too, not copied to join them.
    this.#push(bytes, sink);
  }

  flush(): Buffer {
    const buffer = this.#held;
    this.#held = EMPTY;
    const output = buffer.length === 0 ? EMPTY : redactRange(this.#getCompiled(), buffer, buffer.length - 1, this.#state);
    // A region ending exactly at the end must not merge with the first bytes of a reused stream.
    endRegion(this.#state);
    return output;
  }
}

/** Accepts what a stream may hand over (Buffer, other byte views, strings); anything else is no bytes. */
export function toBytes(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  if (ArrayBuffer.isView(chunk)) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (chunk instanceof ArrayBuffer) return Buffer.from(chunk);
  return EMPTY;
}
