/*
 * A request body on its way out: the sentinels of bindings that allow the body swapped for their
 * values (SwapStream), then every byte looked at for a sentinel in any spelling the masker knows
 * (BodyScan), before it is forwarded. Sentinel and value have the same byte length, so a body's
 * Content-Length stays right; each stream holds back only what could still begin an occurrence,
 * so one split over any number of chunks is still found. A compressed body is read through its
 * decoder (ScanEncoded) while the bytes as sent are forwarded.
 */
import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, type BrotliDecompress, type Gunzip, type Inflate } from 'node:zlib';
import type { Redactor, RedactStream } from '../redact';
import type { Injection } from './plan';

export interface Swap {
  readonly ref: string;
  readonly from: Buffer;
  readonly to: Buffer;
}

const EMPTY = Buffer.alloc(0);

export function getSwaps(injections: readonly Injection[]): Swap[] {
  return injections.map((i) => ({ ref: i.ref, from: Buffer.from(i.sentinel, 'utf8'), to: Buffer.from(i.value, 'utf8') }));
}

export class SwapStream extends Transform {
  readonly used = new Set<string>();
  readonly #swaps: readonly Swap[];
  readonly #keep: number;
  #held: Buffer = EMPTY;

  constructor(swaps: readonly Swap[], options: TransformOptions = {}) {
    super(options);
    this.#swaps = swaps;
    this.#keep = Math.max(0, ...swaps.map((s) => s.from.length - 1));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const held = this.#held;
    if (held.length + chunk.length <= 2 * this.#keep) {
      // Small input: joining costs nothing worth avoiding.
      const data = held.length > 0 ? Buffer.concat([held, chunk]) : Buffer.from(chunk);
      this.#replaceAll(data, 0);
      const cut = Math.max(0, data.length - this.#keep);
      this.#held = data.subarray(cut);
      callback(null, cut > 0 ? data.subarray(0, cut) : undefined);
      return;
    }
    // Only an occurrence that starts in the held tail and ends in this chunk needs the two joined:
    // that window is at most 2 * keep bytes, so a large chunk is never copied just to be scanned.
    // (Occurrences wholly inside `held` were replaced when it was the end of the last chunk.)
    if (held.length > 0) {
      const window = Buffer.concat([held, chunk.subarray(0, this.#keep)]);
      this.#replaceAll(window, 0, held.length);
      window.copy(chunk, 0, held.length);
      this.push(window.subarray(0, held.length));
    }
    this.#replaceAll(chunk, 0);
    const cut = chunk.length - this.#keep;
    // The held tail is copied: the caller's chunk is not kept past this call.
    this.#held = Buffer.from(chunk.subarray(cut));
    callback(null, chunk.subarray(0, cut));
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.#held.length > 0 ? this.#held : undefined);
  }

  /** Swap every occurrence starting at `from`, or (with `before`) only those starting before it. */
  #replaceAll(data: Buffer, from: number, before = data.length): void {
    for (const swap of this.#swaps) {
      let at = data.indexOf(swap.from, from);
      while (at !== -1 && at < before) {
        swap.to.copy(data, at);
        this.used.add(swap.ref);
        at = data.indexOf(swap.from, at + swap.from.length);
      }
    }
  }
}

/** Raised by a body scan: the body holds the sentinel of `ref` where no binding put it. */
export class SentinelInBody extends Error {
  readonly ref: string;
  constructor(ref: string) {
    super(`the request body holds the sentinel of ${ref}`);
    this.ref = ref;
  }
}

/*
 * Passes bytes on only once the masker has decided them: the masker's stream holds back what
 * could still begin an occurrence, and gives back the bytes unchanged when it found none (its
 * output is then forwarded). A match fails the stream before any of its bytes leave.
 */
export class BodyScan extends Transform {
  readonly #stream: RedactStream;

  constructor(detector: Redactor, options: TransformOptions = {}) {
    super(options);
    this.#stream = detector.createStream();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const out = this.#stream.push(chunk);
    if (this.#stream.count > 0) return callback(this.#found(out));
    callback(null, out.length > 0 ? out : undefined);
  }

  override _flush(callback: TransformCallback): void {
    const out = this.#stream.flush();
    if (this.#stream.count > 0) return callback(this.#found(out));
    callback(null, out.length > 0 ? out : undefined);
  }

  #found(redacted: Buffer): SentinelInBody {
    return new SentinelInBody(labelIn(redacted));
  }
}

/** The reference a masker's replacement names (`[REDACTED:secret:NAME]`). */
function labelIn(redacted: Buffer): string {
  return /\[REDACTED:([^\]]+)\]/.exec(redacted.toString('latin1'))?.[1] ?? 'a bound secret';
}

const DECODERS: Record<string, () => Gunzip | Inflate | BrotliDecompress> = {
  gzip: createGunzip, 'x-gzip': createGunzip, deflate: createInflate, br: createBrotliDecompress,
};

/** Can a request body with this Content-Encoding be read for sentinels? */
export function canScanEncoding(encoding: string): boolean {
  return encoding === '' || encoding === 'identity' || encoding in DECODERS;
}

/*
 * A compressed body: forwarded as sent, each chunk only after its decoded bytes were scanned (the
 * decoder is flushed per chunk, so what a chunk holds is decided before the chunk leaves).
 */
export class ScanEncoded extends Transform {
  readonly #decoder: Gunzip | Inflate | BrotliDecompress;
  readonly #scan: RedactStream;
  #failed: SentinelInBody | Error | undefined;

  constructor(encoding: string, detector: Redactor, options: TransformOptions = {}) {
    super(options);
    this.#scan = detector.createStream();
    this.#decoder = DECODERS[encoding]();
    this.#decoder.on('data', (decoded: Buffer) => {
      const out = this.#scan.push(decoded);
      if (this.#scan.count > 0) this.#failed ??= new SentinelInBody(labelIn(out));
    });
    this.#decoder.on('error', (error) => { this.#failed ??= error; });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#decoder.write(chunk);
    this.#decoder.flush(() => callback(this.#failed ?? null, this.#failed ? undefined : chunk));
  }

  override _flush(callback: TransformCallback): void {
    this.#decoder.end(() => {
      const out = this.#scan.flush();
      if (this.#scan.count > 0) this.#failed ??= new SentinelInBody(labelIn(out));
      callback(this.#failed ?? null);
    });
  }
}
