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
    const bytes = toBytes(chunk);
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
    const output = redactRange(compiled, buffer, lastStart, this.#state);
    this.#held = lastStart + 1 === buffer.length ? EMPTY : Buffer.from(buffer.subarray(lastStart + 1));
    return output;
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
