/*
 * The matcher's lookup tables, kept in typed arrays (open addressing, linear probing) once built.
 * One secret's spellings make a few thousand window words (the base64 ones with their wrapped
 * forms), and a run with an injected secret holds three maskers (the value, its sentinel, the
 * wrap gate's). As Maps and Sets of small arrays and numbers they were 0.2-0.3 MB of heap objects
 * per masker, marked by every full garbage collection of the process; in the egress proxy's
 * process that was enough heap to tip V8 into a mark-compact every few MiB of proxied body, which
 * made every data path, plain forwarding included, cost up to twice the CPU (bench/egress.js,
 * CPU rows). Typed arrays hold no pointers, so nothing in them is marked. They are also gathered
 * in typed arrays: a Map of small arrays per word was most of a build with 1,000 secrets or more.
 */

const HASH_MULTIPLIER = 0x9e3779b1;

function slotBits(entries: number): number {
  // At most half full, so that a probe meets an empty slot soon.
  return Math.max(4, Math.ceil(Math.log2(entries * 2 + 1)));
}

/** Windows as they are gathered: a word and the (pattern, offset) pair it stands for, in growable typed arrays. */
export class WindowList {
  words = new Int32Array(64);
  pairs = new Int32Array(128);
  length = 0;

  add(word: number, pattern: number, offset: number): void {
    if (this.length === this.words.length) {
      const words = new Int32Array(this.words.length * 2);
      words.set(this.words);
      this.words = words;
      const pairs = new Int32Array(this.pairs.length * 2);
      pairs.set(this.pairs);
      this.pairs = pairs;
    }
    this.words[this.length] = word;
    this.pairs[2 * this.length] = pattern;
    this.pairs[2 * this.length + 1] = offset;
    this.length++;
  }
}

/** Orders two (pattern, offset) pairs: negative when the first is to be tried first. */
export type PairOrder = (pattern: number, offset: number, otherPattern: number, otherOffset: number) => number;

/** Window words and the (pattern, offset) pairs each one stands for, in one flat array. */
export class WordTable {
  /** Number of distinct words. */
  readonly size: number;
  /** Every word's pairs, one after the other: the pairs of a slot are `pairs[start(slot) .. end(slot))`. */
  readonly pairs: Int32Array;
  readonly #words: Int32Array;
  readonly #starts: Int32Array;
  // Where a slot's pairs end; 0 marks an empty slot (a word has at least one pair, so its end is past 0).
  readonly #ends: Int32Array;
  readonly #mask: number;
  readonly #shift: number;

  /** `windows`: the gathered windows; each word's pairs are kept in `order`, each pair once. */
  constructor(windows: WindowList, order: PairOrder) {
    const count = windows.length;
    const bits = slotBits(count);
    this.#words = new Int32Array(1 << bits);
    this.#starts = new Int32Array(1 << bits);
    this.#ends = new Int32Array(1 << bits);
    this.#mask = (1 << bits) - 1;
    this.#shift = 32 - bits;
    // Counted per word first, then placed: two passes over typed arrays, no object per word.
    const slots = new Int32Array(count);
    const counts = new Int32Array(1 << bits);
    let size = 0;
    for (let index = 0; index < count; index++) {
      const word = windows.words[index];
      let slot = Math.imul(word, HASH_MULTIPLIER) >>> this.#shift;
      while (counts[slot] !== 0 && this.#words[slot] !== word) slot = (slot + 1) & this.#mask;
      if (counts[slot] === 0) {
        this.#words[slot] = word;
        size++;
      }
      counts[slot]++;
      slots[index] = slot;
    }
    this.size = size;
    let at = 0;
    for (let slot = 0; slot < counts.length; slot++) {
      if (counts[slot] === 0) continue;
      this.#starts[slot] = at;
      this.#ends[slot] = at;
      at += 2 * counts[slot];
    }
    const pairs = new Int32Array(at);
    const source = windows.pairs;
    for (let index = 0; index < count; index++) {
      const slot = slots[index];
      const end = this.#ends[slot];
      pairs[end] = source[2 * index];
      pairs[end + 1] = source[2 * index + 1];
      this.#ends[slot] = end + 2;
    }
    // Each word's pairs in order and free of repeats (most words stand for one pair; a line many
    // values share, such as a PEM header, for thousands).
    for (let slot = 0; slot < counts.length; slot++) {
      if (counts[slot] < 2) continue;
      const first = this.#starts[slot];
      const list: Array<[number, number]> = [];
      for (let index = first; index < this.#ends[slot]; index += 2) list.push([pairs[index], pairs[index + 1]]);
      list.sort((a, b) => order(a[0], a[1], b[0], b[1]));
      let end = first;
      for (const [pattern, offset] of list) {
        if (end > first && pairs[end - 2] === pattern && pairs[end - 1] === offset) continue;
        pairs[end] = pattern;
        pairs[end + 1] = offset;
        end += 2;
      }
      this.#ends[slot] = end;
    }
    this.pairs = pairs;
  }

  /** Each distinct word once. */
  *words(): IterableIterator<number> {
    for (let slot = 0; slot < this.#ends.length; slot++) if (this.#ends[slot] !== 0) yield this.#words[slot];
  }

  /** The slot of `word`, or -1 when it is not in the table. */
  find(word: number): number {
    let slot = Math.imul(word, HASH_MULTIPLIER) >>> this.#shift;
    while (this.#ends[slot] !== 0) {
      if (this.#words[slot] === word) return slot;
      slot = (slot + 1) & this.#mask;
    }
    return -1;
  }

  start(slot: number): number {
    return this.#starts[slot];
  }

  end(slot: number): number {
    return this.#ends[slot];
  }
}

/** A set of int32 words (open addressing, linear probing) that grows as words are added. */
export class WordSet {
  #words = new Int32Array(16);
  #filled = new Uint8Array(16);
  #size = 0;
  #shift = 28;

  get size(): number {
    return this.#size;
  }

  add(word: number): void {
    if ((this.#size + 1) * 2 > this.#words.length) this.#grow();
    const mask = this.#words.length - 1;
    let slot = Math.imul(word, HASH_MULTIPLIER) >>> this.#shift;
    while (this.#filled[slot] === 1) {
      if (this.#words[slot] === word) return;
      slot = (slot + 1) & mask;
    }
    this.#words[slot] = word;
    this.#filled[slot] = 1;
    this.#size++;
  }

  has(word: number): boolean {
    const mask = this.#words.length - 1;
    let slot = Math.imul(word, HASH_MULTIPLIER) >>> this.#shift;
    while (this.#filled[slot] === 1) {
      if (this.#words[slot] === word) return true;
      slot = (slot + 1) & mask;
    }
    return false;
  }

  #grow(): void {
    const words = this.#words;
    const filled = this.#filled;
    this.#words = new Int32Array(words.length * 2);
    this.#filled = new Uint8Array(words.length * 2);
    this.#shift--;
    this.#size = 0;
    for (let slot = 0; slot < words.length; slot++) if (filled[slot] === 1) this.add(words[slot]);
  }
}
