/*
 * The matcher's lookup tables, kept in typed arrays (open addressing, linear probing) once built.
 * One secret's spellings make a few thousand window words (the base64 ones with their wrapped
 * forms), and a run with an injected secret holds three maskers (the value, its sentinel, the
 * wrap gate's). As Maps and Sets of small arrays and numbers they were 0.2-0.3 MB of heap objects
 * per masker, marked by every full garbage collection of the process; in the egress proxy's
 * process that was enough heap to tip V8 into a mark-compact every few MiB of proxied body, which
 * made every data path, plain forwarding included, cost up to twice the CPU (bench/egress.js,
 * CPU rows). Typed arrays hold no pointers, so nothing in them is marked.
 */

const HASH_MULTIPLIER = 0x9e3779b1;

function slotBits(entries: number): number {
  // At most half full, so that a probe meets an empty slot soon.
  return Math.max(4, Math.ceil(Math.log2(entries * 2 + 1)));
}

/** Window words and the (pattern, offset) pairs each one stands for, in one flat array. */
export class WordTable {
  /** Number of words. */
  readonly size: number;
  /** Every word's pairs, one after the other: the pairs of a slot are `pairs[start(slot) .. end(slot))`. */
  readonly pairs: Int32Array;
  readonly #words: Int32Array;
  readonly #starts: Int32Array;
  // Where a slot's pairs end; 0 marks an empty slot (a word has at least one pair, so its end is past 0).
  readonly #ends: Int32Array;
  readonly #mask: number;
  readonly #shift: number;

  /** `lists`: word -> its flat (pattern, offset) pairs, in the order they are to be tried. */
  constructor(lists: ReadonlyMap<number, readonly number[]>) {
    this.size = lists.size;
    let total = 0;
    for (const list of lists.values()) total += list.length;
    this.pairs = new Int32Array(total);
    const bits = slotBits(lists.size);
    this.#words = new Int32Array(1 << bits);
    this.#starts = new Int32Array(1 << bits);
    this.#ends = new Int32Array(1 << bits);
    this.#mask = (1 << bits) - 1;
    this.#shift = 32 - bits;
    let at = 0;
    for (const [word, list] of lists) {
      let slot = Math.imul(word, HASH_MULTIPLIER) >>> this.#shift;
      while (this.#ends[slot] !== 0) slot = (slot + 1) & this.#mask;
      this.#words[slot] = word;
      this.#starts[slot] = at;
      this.pairs.set(list, at);
      at += list.length;
      this.#ends[slot] = at;
    }
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

/**
 * A set of int32 keys with a bitmap in front: most lookups (a buffer's suffixes that begin no
 * pattern) end at one bit test instead of a probe. Keys are added, then the set is sealed.
 */
export class KeySet {
  #pending: Set<number> | undefined = new Set<number>();
  #size = 0;
  #bitmap = new Int32Array(1);
  #shift = 32;
  #keys = new Int32Array(0);
  #filled = new Uint8Array(0);
  #mask = 0;
  #slotShift = 32;

  get size(): number {
    return this.#pending ? this.#pending.size : this.#size;
  }

  add(key: number): void {
    this.#pending?.add(key);
  }

  /** Size the bitmap (about 16 bits a key) and the table once every key is in; no key can be added after. */
  seal(): void {
    const keys = this.#pending ?? new Set<number>();
    this.#pending = undefined;
    this.#size = keys.size;
    const bits = Math.min(24, Math.max(10, Math.ceil(Math.log2(keys.size * 16 + 1))));
    this.#shift = 32 - bits;
    this.#bitmap = new Int32Array(1 << (bits - 5));
    const slots = slotBits(keys.size);
    this.#keys = new Int32Array(1 << slots);
    this.#filled = new Uint8Array(1 << slots);
    this.#mask = (1 << slots) - 1;
    this.#slotShift = 32 - slots;
    for (const key of keys) {
      const hash = Math.imul(key, HASH_MULTIPLIER) >>> this.#shift;
      this.#bitmap[hash >>> 5] |= 1 << (hash & 31);
      let slot = Math.imul(key, HASH_MULTIPLIER) >>> this.#slotShift;
      while (this.#filled[slot] === 1) slot = (slot + 1) & this.#mask;
      this.#keys[slot] = key;
      this.#filled[slot] = 1;
    }
  }

  mayHave(key: number): boolean {
    const hash = Math.imul(key, HASH_MULTIPLIER) >>> this.#shift;
    return (this.#bitmap[hash >>> 5] & (1 << (hash & 31))) !== 0;
  }

  has(key: number): boolean {
    let slot = Math.imul(key, HASH_MULTIPLIER) >>> this.#slotShift;
    while (this.#filled[slot] === 1) {
      if (this.#keys[slot] === key) return true;
      slot = (slot + 1) & this.#mask;
    }
    return false;
  }
}
