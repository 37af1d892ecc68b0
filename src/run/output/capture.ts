/*
 * Bounded output capture. A child may print gigabytes; the gateway keeps at most `limit` bytes
 * per stream in memory: the head, and a ring of the tail. What falls in between is counted, and
 * the result says how many bytes were cut. All bytes reaching a capture are already redacted.
 */

export class BoundedCapture {
  readonly limit: number;
  readonly #headLimit: number;
  readonly #tailLimit: number;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  // The tail is a ring buffer of `tailLimit` bytes, allocated only once the head is full.
  #tail: Buffer | undefined;
  #tailStart = 0;
  #tailBytes = 0;
  #total = 0;

  constructor(limit: number, tailFraction = 0.5) {
    this.limit = limit;
    this.#tailLimit = Math.floor(limit * tailFraction);
    this.#headLimit = limit - this.#tailLimit;
  }

  get totalBytes(): number {
    return this.#total;
  }

  get truncated(): boolean {
    return this.#total > this.limit;
  }

  get cutBytes(): number {
    return Math.max(0, this.#total - this.#headBytes - this.#tailBytes);
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#total += chunk.length;
    let rest = chunk;
    if (this.#headBytes < this.#headLimit) {
      const take = Math.min(this.#headLimit - this.#headBytes, rest.length);
      // Copy: the caller may reuse its buffer.
      this.#head.push(Buffer.from(rest.subarray(0, take)));
      this.#headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length > 0 && this.#tailLimit > 0) this.#pushTail(rest);
  }

  #pushTail(chunk: Buffer): void {
    const size = this.#tailLimit;
    this.#tail ??= Buffer.allocUnsafe(size);
    const ring = this.#tail;
    if (chunk.length >= size) {
      chunk.copy(ring, 0, chunk.length - size);
      this.#tailStart = 0;
      this.#tailBytes = size;
      return;
    }
    let writeAt = (this.#tailStart + this.#tailBytes) % size;
    let offset = 0;
    while (offset < chunk.length) {
      const n = Math.min(chunk.length - offset, size - writeAt);
      chunk.copy(ring, writeAt, offset, offset + n);
      offset += n;
      writeAt = (writeAt + n) % size;
    }
    const overflow = this.#tailBytes + chunk.length - size;
    if (overflow > 0) {
      this.#tailStart = (this.#tailStart + overflow) % size;
      this.#tailBytes = size;
    } else {
      this.#tailBytes += chunk.length;
    }
  }

  head(): Buffer {
    return Buffer.concat(this.#head, this.#headBytes);
  }

  tail(): Buffer {
    if (!this.#tail || this.#tailBytes === 0) return Buffer.alloc(0);
    const end = this.#tailStart + this.#tailBytes;
    if (end <= this.#tailLimit) return Buffer.from(this.#tail.subarray(this.#tailStart, end));
    return Buffer.concat([this.#tail.subarray(this.#tailStart), this.#tail.subarray(0, end - this.#tailLimit)]);
  }

  /** Head and tail joined by `notice(cutBytes)` when something was cut. */
  toText(notice: (cutBytes: number) => string): string {
    const cut = this.cutBytes;
    if (cut === 0) return Buffer.concat([this.head(), this.tail()]).toString('utf8');
    return this.head().toString('utf8') + notice(cut) + this.tail().toString('utf8');
  }
}
