/*
 * Swapping sentinels for values on the way out: in a URL, header values (a `Basic` credential is
 * decoded, swapped and re-encoded, which is how git and curl send `https://user:TOKEN@host`), and
 * streamed bodies. Sentinel and value have the same byte length, so a body's Content-Length stays
 * right; the stream holds back at most (longest sentinel - 1) bytes, so an occurrence split over
 * any number of chunks is still found.
 */
import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
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

/** Replace every sentinel in `text`; adds the refs it used to `used`. */
export function swapText(text: string, swaps: readonly Swap[], used: Set<string>): string {
  let out = text;
  for (const swap of swaps) {
    const from = swap.from.toString('utf8');
    if (out.includes(from)) {
      out = out.split(from).join(swap.to.toString('utf8'));
      used.add(swap.ref);
    }
  }
  return out;
}

export function swapHeaderValue(name: string, value: string, swaps: readonly Swap[], used: Set<string>): string {
  const lower = name.toLowerCase();
  if (lower === 'authorization') {
    const basic = /^(\s*basic\s+)([A-Za-z0-9+/=]+)\s*$/i.exec(value);
    if (basic) {
      const decoded = Buffer.from(basic[2]!, 'base64').toString('utf8');
      const swapped = swapText(decoded, swaps, used);
      if (swapped !== decoded) return `${basic[1]}${Buffer.from(swapped, 'utf8').toString('base64')}`;
    }
  }
  return swapText(value, swaps, used);
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
