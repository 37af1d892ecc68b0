/*
 * Bounded output capture. A child may print gigabytes; the gateway keeps at most `limit` bytes
 * per stream in memory: the head, and a ring of the tail. What falls in between is counted, and
 * the result says how many bytes were cut. All bytes reaching a capture are already redacted.
 */

/** A chunk at least this long is kept by reference in the tail; shorter ones are copied into blocks. */
const REFERENCE_BYTES = 8 * 1024;
/** The blocks short chunks are copied into. */
const BLOCK_BYTES = 16 * 1024;

/*
 * The last `limit` bytes pushed, kept without copying the chunks that make up most of a large
 * output: a stream chunk is never reused once handed on (RedactStream.push returns either a
 * fresh buffer or a view of the chunk it got), so the tail holds views of the last chunks and
 * drops them as newer ones cover the limit. Short chunks are copied into blocks of their own, so
 * a stream of tiny writes does not keep one object per write. What it holds stays within the
 * limit plus one chunk, and each view at most about twice its own length of buffer (a view of a
 * much larger buffer is copied).
 *
 * Measured (bench/throughput.js, figure 3): the ring buffer it replaced copied every byte of
 * the output once per capture, twice in all with the combined capture.
 */
class Tail {
  readonly #limit: number;
  #parts: Buffer[] = [];
  #first = 0;
  #bytes = 0;
  /** The block short chunks go to, and how much of it is used (its last part is a view of that much). */
  #block: Buffer | undefined;
  #blockUsed = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get bytes(): number {
    return Math.min(this.#bytes, this.#limit);
  }

  push(chunk: Buffer): void {
    const limit = this.#limit;
    if (chunk.length >= limit) {
      const last = chunk.subarray(chunk.length - limit);
      this.#parts = [chunk.buffer.byteLength > 2 * limit ? Buffer.from(last) : last];
      this.#first = 0;
      this.#bytes = limit;
      this.#block = undefined;
      return;
    }
    if (chunk.length >= REFERENCE_BYTES) {
      // A view of a much larger buffer would keep all of it: copied then.
      this.#parts.push(chunk.buffer.byteLength > 2 * chunk.length + BLOCK_BYTES ? Buffer.from(chunk) : chunk);
      this.#block = undefined;
    } else if (this.#block !== undefined && this.#blockUsed + chunk.length <= this.#block.length) {
      chunk.copy(this.#block, this.#blockUsed);
      this.#blockUsed += chunk.length;
      this.#parts[this.#parts.length - 1] = this.#block.subarray(0, this.#blockUsed);
    } else {
      this.#block = Buffer.allocUnsafe(BLOCK_BYTES);
      chunk.copy(this.#block, 0);
      this.#blockUsed = chunk.length;
      this.#parts.push(this.#block.subarray(0, this.#blockUsed));
    }
    this.#bytes += chunk.length;
    // Drop the oldest parts while the newer ones alone cover the limit.
    while (this.#bytes - this.#parts[this.#first].length >= limit) {
      this.#bytes -= this.#parts[this.#first].length;
      this.#first += 1;
    }
    if (this.#first > 64 && this.#first * 2 > this.#parts.length) {
      this.#parts = this.#parts.slice(this.#first);
      this.#first = 0;
    }
  }

  toBuffer(): Buffer {
    const parts = this.#parts.slice(this.#first);
    if (parts.length === 0) return Buffer.alloc(0);
    const excess = this.#bytes - this.#limit;
    if (excess > 0) parts[0] = parts[0].subarray(excess);
    return Buffer.concat(parts, this.bytes);
  }
}

export class BoundedCapture {
  readonly limit: number;
  readonly #headLimit: number;
  readonly #tailLimit: number;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  readonly #tail: Tail | undefined;
  #total = 0;

  constructor(limit: number, tailFraction = 0.5) {
    this.limit = limit;
    this.#tailLimit = Math.floor(limit * tailFraction);
    this.#headLimit = limit - this.#tailLimit;
    this.#tail = this.#tailLimit > 0 ? new Tail(this.#tailLimit) : undefined;
  }

  get totalBytes(): number {
    return this.#total;
  }

  get truncated(): boolean {
    return this.#total > this.limit;
  }

  get cutBytes(): number {
    return Math.max(0, this.#total - this.#headBytes - (this.#tail?.bytes ?? 0));
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#total += chunk.length;
    let rest = chunk;
    if (this.#headBytes < this.#headLimit) {
      const take = Math.min(this.#headLimit - this.#headBytes, rest.length);
      // Copy: the head is kept for the whole run, and must not pin a large chunk.
      this.#head.push(Buffer.from(rest.subarray(0, take)));
      this.#headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length > 0) this.#tail?.push(rest);
  }

  head(): Buffer {
    return Buffer.concat(this.#head, this.#headBytes);
  }

  tail(): Buffer {
    return this.#tail?.toBuffer() ?? Buffer.alloc(0);
  }

  /** Head and tail joined by `notice(cutBytes)` when something was cut. */
  toText(notice: (cutBytes: number) => string): string {
    const cut = this.cutBytes;
    if (cut === 0) return Buffer.concat([this.head(), this.tail()]).toString('utf8');
    return this.head().toString('utf8') + notice(cut) + this.tail().toString('utf8');
  }
}
