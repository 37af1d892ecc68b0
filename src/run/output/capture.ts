/*
 * Bounded output capture. A child may print gigabytes; the gateway keeps at most `limit` bytes
 * per stream in memory: the head, and a ring of the tail. What falls in between is counted, and
 * the result says how many bytes were cut. All bytes reaching a capture are already redacted.
 * What is pushed is copied (head and tail alike): a chunk may be a view of a buffer used again.
 */

/** The blocks the tail's ring is made of, allocated as the output reaches them. */
const BLOCK_BYTES = 16 * 1024;

/*
 * The last `limit` bytes pushed, copied into a ring of blocks. The chunks a run's reader hands
 * on may be views of a read buffer that the next read overwrites (spawner/output-reader.ts: a
 * buffer used again for every read, so that reading allocates nothing), so the tail cannot keep
 * them; copying each byte once costs far less than a Buffer per read did (docs/performance.md,
 * "Output capture"). The blocks are allocated as the output reaches them: a run printing a
 * little holds one block, a large one at most the limit (rounded up to a block).
 */
class Tail {
  readonly #limit: number;
  readonly #blocks: Buffer[] = [];
  /** Where the next byte goes, 0 to limit - 1. */
  #at = 0;
  #total = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get bytes(): number {
    return Math.min(this.#total, this.#limit);
  }

  push(chunk: Buffer): void {
    const limit = this.#limit;
    this.#total += chunk.length;
    // Of a chunk longer than the ring, only its last `limit` bytes stay.
    let rest = chunk.length > limit ? chunk.subarray(chunk.length - limit) : chunk;
    if (rest.length < chunk.length) this.#at = (this.#at + chunk.length - rest.length) % limit;
    while (rest.length > 0) {
      const index = Math.floor(this.#at / BLOCK_BYTES);
      const offset = this.#at - index * BLOCK_BYTES;
      const block = this.#blocks[index] ?? (this.#blocks[index] = Buffer.allocUnsafe(Math.min(BLOCK_BYTES, limit - index * BLOCK_BYTES)));
      const n = rest.copy(block, offset);
      rest = rest.subarray(n);
      this.#at = (this.#at + n) % limit;
    }
  }

  toBuffer(): Buffer {
    const size = this.bytes;
    const out = Buffer.allocUnsafe(size);
    // The oldest byte kept is at #at once the ring has wrapped, at 0 before.
    let from = this.#total > this.#limit ? this.#at : 0;
    for (let n = 0; n < size;) {
      const index = Math.floor(from / BLOCK_BYTES);
      const offset = from - index * BLOCK_BYTES;
      const block = this.#blocks[index];
      const take = Math.min(size - n, block.length - offset);
      block.copy(out, n, offset, offset + take);
      n += take;
      from = (from + take) % this.#limit;
    }
    return out;
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
