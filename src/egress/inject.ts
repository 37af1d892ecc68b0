/*
 * Swapping sentinels for values on the way out: in a URL, header values (a `Basic` credential is
 * decoded, swapped and re-encoded, which is how git and curl send `https://user:TOKEN@host`), and
 * streamed bodies. Sentinel and value have the same byte length, so a body's Content-Length stays
 * right; the stream holds back at most (longest sentinel - 1) bytes, so an occurrence split over
 * any number of chunks is still found.
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { Injection } from './plan';

export interface Swap {
  readonly ref: string;
  readonly from: Buffer;
  readonly to: Buffer;
}

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
  #held: Buffer = Buffer.alloc(0);

  constructor(swaps: readonly Swap[]) {
    super();
    this.#swaps = swaps;
    this.#keep = Math.max(0, ...swaps.map((s) => s.from.length - 1));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const data = this.#held.length > 0 ? Buffer.concat([this.#held, chunk]) : chunk;
    this.#replaceAll(data);
    const cut = Math.max(0, data.length - this.#keep);
    // The held tail is copied: `data` may be the caller's chunk, which must not be kept.
    this.#held = Buffer.from(data.subarray(cut));
    callback(null, cut > 0 ? data.subarray(0, cut) : undefined);
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.#held.length > 0 ? this.#held : undefined);
  }

  #replaceAll(data: Buffer): void {
    for (const swap of this.#swaps) {
      let at = data.indexOf(swap.from);
      while (at !== -1) {
        swap.to.copy(data, at);
        this.used.add(swap.ref);
        at = data.indexOf(swap.from, at + swap.from.length);
      }
    }
  }
}
