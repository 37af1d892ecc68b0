/*
 * Multi-pattern byte matcher: finds every occurrence (overlapping ones included) of a fixed set
 * of byte strings.
 *
 * Why not Aho-Corasick or one RegExp: both look at every byte through a state machine, which in
 * JavaScript runs at a few hundred MB/s at best. Here the buffer is read as 32-bit words at
 * 4-byte-aligned positions only, and of those only every `stride`-th one (a stride of S words
 * samples the word at every 4*S bytes). An occurrence of a pattern of at least 4*S + 3 bytes spans
 * at least 4*S word starts, so it fully contains a sampled word, the first one at offset
 * 0..4*S-1 of the pattern; so the 4*S windows at those offsets of each pattern are hashed into a
 * bitmap, and the scan touches one word per 4*S bytes with a multiply, a shift and a bit test.
 * Only words that hit the bitmap are looked up exactly and verified. The stride is the largest
 * the shortest pattern allows (secrets and their encodings are mostly 20+ bytes: a 35-byte token
 * is scanned one word in 32 bytes, eight times fewer than one in 4), capped so that the windows
 * stay few enough for a sparse bitmap. Shorter patterns than 7 bytes (values the caller chose to
 * register below the usual minimum) use the native Buffer#indexOf, one pass each.
 *
 * Patterns marked line-tolerant (the base64 spellings) also match with line breaks (`\n`, `\r\n`)
 * anywhere between their characters, as encoders that wrap their output write them (`base64`,
 * PEM, MIME, Python's encodebytes: any width, any offset). An occurrence of such a pattern,
 * breaks included, still spans 4*S + 3 bytes or more, so a sampled word lies wholly inside it,
 * after at most 4*S - 1 of its characters; at most one break fits in a word when lines are 4
 * characters or longer. So besides its plain windows, each line-tolerant pattern registers the
 * words with one break (LF at any of the four places, CRLF at any of three, or the CR or LF of a
 * CRLF cut by the word's edge) at each of those offsets. A word that hits is verified by walking
 * back over the characters before it and comparing forward, skipping breaks. The scan loop is
 * the same; the extra windows fill its bitmap more, and a second bitmap with another hash turns
 * the extra false hits away before any map lookup.
 *
 * Redaction only needs the union of all occurrences and, where a region of that union starts, the
 * longest pattern starting there. Output that repeats a secret's own bytes (a run of `a` against
 * values like `aaaaaaaa`, `aaaaaaaaa`, ...) holds an occurrence at every position; keeping each
 * one would cost memory and a sort per byte. So an occurrence that starts inside (or right after)
 * the last recorded one is folded into it, and a candidate it already covers is not even verified.
 */

/** A run of overlapping or touching occurrences: `pattern` is the longest one starting at `start`. */
export interface Match {
  start: number;
  /** End of the run (at least the end of `pattern`). */
  end: number;
  pattern: number;
  /** End of `pattern` itself. */
  patternEnd: number;
}

// A pattern of this length contains a whole aligned word wherever it starts.
const MIN_WINDOWED_LENGTH = 7;
// At most 32 bytes between sampled words: past that the windows per pattern (4 * stride) grow
// faster than the scan shrinks.
const MAX_STRIDE = 8;
// Windows (pattern x offset) the stride may grow to; beyond this a longer stride would fill the
// bitmap (capped at 2^22 bits) and make false hits common.
const WINDOW_BUDGET = 1 << 15;
const HASH_MULTIPLIER = 0x9e3779b1;
const CONFIRM_MULTIPLIER = 0x85ebca6b;
// About 64 bits per window in the bitmap every sample touches, 32 in the one that confirms a hit:
// together under 1 false hit in 1,000 samples reaches a map lookup (measured: bench/redact.js).
const BITS_PER_WINDOW = 64;
const CONFIRM_BITS_PER_WINDOW = 32;
const MAX_BITMAP_BITS = 22;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

export class Matcher {
  readonly maxLength: number;
  readonly #patterns: readonly Buffer[];
  readonly #tolerant: Uint8Array;
  readonly #short: number[] = [];
  // window word -> flat list of (pattern index, offset of the window in the pattern) pairs
  readonly #windows = new Map<number, number[]>();
  // window word holding a line break -> (line-tolerant pattern, characters of it before the word) pairs
  readonly #brokenWindows = new Map<number, number[]>();
  readonly #bitmap: Int32Array;
  readonly #hashShift: number;
  readonly #confirm: Int32Array;
  readonly #confirmShift: number;
  /** Words (of 4 bytes) between two sampled words. */
  readonly #stride: number;
  // Hashes of every proper prefix of every pattern, keyed with the prefix length (see holdStart);
  // the same for the line-tolerant patterns alone (see holdJoined).
  readonly #prefixes = new KeySet();
  readonly #tolerantPrefixes = new KeySet();
  #maxTolerantLength = 0;

  /** `tolerant`: indexes of the patterns that also match across line breaks (see the header). */
  constructor(patterns: readonly Buffer[], tolerant: Iterable<number> = []) {
    this.#patterns = patterns;
    this.#tolerant = new Uint8Array(patterns.length);
    for (const index of tolerant) if (index >= 0 && index < patterns.length) this.#tolerant[index] = 1;
    this.maxLength = patterns.reduce((max, pattern) => Math.max(max, pattern.length), 0);
    patterns.forEach((pattern, index) => {
      if (this.#tolerant[index] === 1 && pattern.length > this.#maxTolerantLength) this.#maxTolerantLength = pattern.length;
      let hash = 0;
      for (let length = 1; length < pattern.length; length++) {
        hash = prefixStep(hash, pattern[length - 1] as number);
        this.#prefixes.add(prefixKey(hash, length));
        if (this.#tolerant[index] === 1) this.#tolerantPrefixes.add(prefixKey(hash, length));
      }
    });
    this.#prefixes.seal();
    this.#tolerantPrefixes.seal();
    this.#stride = chooseStride(patterns, this.#tolerant);
    const windows = 4 * this.#stride;
    patterns.forEach((pattern, index) => {
      if (pattern.length < MIN_WINDOWED_LENGTH) {
        if (pattern.length > 0) this.#short.push(index);
        return;
      }
      for (let offset = 0; offset < windows; offset++) {
        this.#addWindow(this.#windows, readWord(pattern, offset), index, offset);
        if (this.#tolerant[index] === 1) for (const word of getBrokenWords(pattern, offset)) this.#addWindow(this.#brokenWindows, word, index, offset);
      }
    });
    // The bitmap every sampled word is tested against stays small (it is touched at random on
    // every sample: past a few hundred KiB the misses cost more than the false hits it saves);
    // a second bitmap with another hash turns most of its false hits away before a map lookup.
    const windowCount = this.#windows.size + this.#brokenWindows.size;
    const bits = Math.min(MAX_BITMAP_BITS, Math.max(10, Math.ceil(Math.log2(windowCount * BITS_PER_WINDOW + 1))));
    this.#hashShift = 32 - bits;
    this.#bitmap = new Int32Array(1 << (bits - 5));
    const confirmBits = Math.min(24, Math.max(10, Math.ceil(Math.log2(windowCount * CONFIRM_BITS_PER_WINDOW + 1))));
    this.#confirmShift = 32 - confirmBits;
    this.#confirm = new Int32Array(1 << (confirmBits - 5));
    for (const map of [this.#windows, this.#brokenWindows]) {
      for (const [word, list] of map) {
        const hash = Math.imul(word, HASH_MULTIPLIER) >>> this.#hashShift;
        this.#bitmap[hash >>> 5] |= 1 << (hash & 31);
        const confirm = Math.imul(word, CONFIRM_MULTIPLIER) >>> this.#confirmShift;
        this.#confirm[confirm >>> 5] |= 1 << (confirm & 31);
        if (map === this.#windows) map.set(word, sortByReach(list, patterns));
      }
    }
  }

  /** Words (of 4 bytes) from one sampled word to the next (see the header). */
  get stride(): number {
    return this.#stride;
  }

  /**
   * Where a stream must start holding bytes back: the leftmost position whose suffix of `buffer`
   * is a proper prefix of some pattern (so an occurrence may be under way), or `buffer.length`
   * when no suffix is. Bytes before it can be decided now: every occurrence starting there ends
   * inside `buffer`. Holding only what could still become a secret (instead of a fixed
   * maxLength - 1 bytes) lets a prompt or a last line reach a live reader at once, with no
   * timing window. A hash collision can only make the hold longer, never shorter.
   */
  holdStart(buffer: Buffer): number {
    return Math.min(this.#holdRaw(buffer), this.#holdJoined(buffer));
  }

  #holdRaw(buffer: Buffer): number {
    const length = buffer.length;
    if (this.#prefixes.size === 0) return length;
    const from = Math.max(0, length - this.maxLength + 1);
    const prefixes = this.#prefixes;
    // Polynomial hashes, so each suffix's hash extends the next one's by one byte at the front:
    // H(b[p..n)) = b[p] * B^(n-1-p) + H(b[p+1..n)). One pass from the end; the leftmost hit wins.
    let hash = 0;
    let power = 1;
    let hold = length;
    for (let start = length - 1; start >= from; start--) {
      hash = (hash + Math.imul(buffer[start] as number, power)) | 0;
      power = Math.imul(power, PREFIX_BASE);
      const key = prefixKey(hash, length - start);
      if (prefixes.mayHave(key) && prefixes.has(key)) hold = start;
    }
    return hold;
  }

  /**
   * The same for line-tolerant patterns read with the buffer's line breaks left out: where a
   * suffix of the buffer, breaks skipped, is a proper prefix of one. Only a tail that holds a
   * break can differ from the raw reading, so a buffer without one near its end costs one search.
   */
  #holdJoined(buffer: Buffer): number {
    const length = buffer.length;
    const prefixes = this.#tolerantPrefixes;
    if (prefixes.size === 0) return length;
    const from = Math.max(0, length - this.#maxTolerantLength + 1);
    // Only the tail is searched (lastIndexOf would read a buffer without breaks to its start).
    let broken = false;
    for (let at = length - 1; at >= from && !broken; at--) broken = buffer[at] === LF || buffer[at] === CR;
    if (!broken) return length;
    let hash = 0;
    let power = 1;
    let characters = 0;
    let hold = length;
    for (let start = length - 1; start >= 0 && characters < this.#maxTolerantLength - 1; start--) {
      const byte = buffer[start] as number;
      if (byte === LF || byte === CR) continue;
      hash = (hash + Math.imul(byte, power)) | 0;
      power = Math.imul(power, PREFIX_BASE);
      characters++;
      const key = prefixKey(hash, characters);
      if (prefixes.mayHave(key) && prefixes.has(key)) hold = start;
    }
    return hold;
  }

  /**
   * Runs covering exactly the occurrences that start at or before `lastStart` and end within
   * `buffer`; sorted by start, then by the length of their pattern, longest first.
   */
  findCover(buffer: Buffer, lastStart: number): Match[] {
    const matches: Match[] = [];
    if (lastStart < 0 || buffer.length === 0) return matches;
    if (this.#windows.size > 0) this.#scanWords(buffer, lastStart, matches);
    for (const index of this.#short) this.#scanShort(buffer, lastStart, index, matches);
    if (matches.length > 1) {
      matches.sort((a, b) => a.start - b.start || b.patternEnd - a.patternEnd || a.pattern - b.pattern);
    }
    return matches;
  }

  #scanWords(buffer: Buffer, lastStart: number, matches: Match[]): void {
    const padding = (4 - (buffer.byteOffset & 3)) & 3;
    if (buffer.length - padding < 4) return;
    const words = new Int32Array(buffer.buffer, buffer.byteOffset + padding, (buffer.length - padding) >>> 2);
    const stride = this.#stride;
    // An occurrence starting at s holds the sampled word starting in s..s+4*stride-1.
    const end = Math.min(words.length, Math.floor((lastStart + 4 * stride - 1 - padding) / 4) + 1);
    const bitmap = this.#bitmap;
    const shift = this.#hashShift;
    const confirm = this.#confirm;
    const confirmShift = this.#confirmShift;
    for (let index = 0; index < end; index += stride) {
      const word = words[index];
      const hash = Math.imul(word, HASH_MULTIPLIER) >>> shift;
      if ((bitmap[hash >>> 5] & (1 << (hash & 31))) === 0) continue;
      const second = Math.imul(word, CONFIRM_MULTIPLIER) >>> confirmShift;
      if ((confirm[second >>> 5] & (1 << (second & 31))) === 0) continue;
      this.#verify(buffer, word, padding + index * 4, lastStart, matches);
    }
  }

  #verify(buffer: Buffer, word: number, position: number, lastStart: number, matches: Match[]): void {
    const broken = this.#brokenWindows.get(word);
    if (broken !== undefined) {
      for (let index = 0; index < broken.length; index += 2) this.#verifyAcrossBreaks(buffer, broken[index], position, broken[index + 1], lastStart, matches);
    }
    const candidates = this.#windows.get(word);
    if (candidates === undefined) return;
    // A line-tolerant pattern may have breaks before or after this word, and then reaches farther
    // than its length: verified first, apart from the early end below.
    for (let index = 0; index < candidates.length; index += 2) {
      const pattern = candidates[index];
      if (this.#tolerant[pattern] === 1) this.#verifyAcrossBreaks(buffer, pattern, position, candidates[index + 1], lastStart, matches);
    }
    for (let index = 0; index < candidates.length; index += 2) {
      const pattern = candidates[index];
      if (this.#tolerant[pattern] === 1) continue;
      const start = position - candidates[index + 1];
      const bytes = this.#patterns[pattern];
      const end = start + bytes.length;
      // Candidates reach less and less far, and all start after position - 4 * stride: once the
      // last run starts before them and already reaches this far, it covers the rest.
      const last = matches[matches.length - 1];
      if (last !== undefined && last.start <= position - 4 * this.#stride && end <= last.end) return;
      if (start < 0 || start > lastStart || end > buffer.length) continue;
      if (isCovered(matches, start, end, pattern)) continue;
      if (equalsAt(buffer, start, bytes)) record(matches, start, end, pattern);
    }
  }

  /** `pattern` with `before` of its characters ahead of `position`, line breaks skipped anywhere between characters. */
  #verifyAcrossBreaks(buffer: Buffer, pattern: number, position: number, before: number, lastStart: number, matches: Match[]): void {
    let start = position;
    for (let left = before; left > 0; ) {
      if (--start < 0) return;
      const byte = buffer[start] as number;
      if (byte !== 10 && byte !== 13) left--;
    }
    while (start < buffer.length && (buffer[start] === 10 || buffer[start] === 13)) start++;
    if (start > lastStart) return;
    const at = endAcrossBreaks(buffer, start, this.#patterns[pattern]);
    if (at >= 0 && !isCovered(matches, start, at, pattern)) record(matches, start, at, pattern);
  }

  #scanShort(buffer: Buffer, lastStart: number, pattern: number, matches: Match[]): void {
    const bytes = this.#patterns[pattern];
    for (let start = buffer.indexOf(bytes); start !== -1 && start <= lastStart; start = buffer.indexOf(bytes, start + 1)) {
      record(matches, start, start + bytes.length, pattern);
    }
  }

  #addWindow(map: Map<number, number[]>, word: number, pattern: number, offset: number): void {
    const list = map.get(word);
    if (list === undefined) map.set(word, [pattern, offset]);
    else list.push(pattern, offset);
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Where `bytes` ends when it occurs at `start` as a wrapping encoder writes it, or -1: its
 * characters with an LF or a CRLF between some of them, and 4 characters or more between two
 * breaks (the lines of a width of 4 or more; the first and the last may be shorter). That is
 * what the windows are guaranteed to find wherever the words fall, so the result never depends
 * on how a stream was cut into chunks.
 */
export function endAcrossBreaks(buffer: Buffer, start: number, bytes: Buffer): number {
  let at = start;
  let line = -1;
  for (let index = 0; index < bytes.length; index++, at++) {
    if (index > 0 && (buffer[at] === LF || buffer[at] === CR)) {
      if (buffer[at] === CR) at++;
      if (buffer[at] !== LF || (line >= 0 && line < 4)) return -1;
      at++;
      line = 0;
    }
    if (at >= buffer.length || buffer[at] !== bytes[index]) return -1;
    if (line >= 0) line++;
  }
  return at;
}

/**
 * The words a sampled word can be inside a wrapped occurrence of `pattern`, `offset` characters
 * of it before the word: its characters with one break (LF at any place, CRLF at any place, or
 * a CRLF cut by the word's edge: a CR last, an LF first).
 */
function getBrokenWords(pattern: Buffer, offset: number): number[] {
  const words: number[] = [];
  const take = (count: number): number[] | null => (offset + count <= pattern.length ? [...pattern.subarray(offset, offset + count)] : null);
  const three = take(3);
  const two = take(2);
  const word = (bytes: number[]): number => readWord(Buffer.from(bytes), 0);
  if (three !== null) {
    for (let at = 0; at <= 3; at++) words.push(word([...three.slice(0, at), LF, ...three.slice(at)]));
    words.push(word([...three, CR]));
  }
  if (two !== null) for (let at = 0; at <= 2; at++) words.push(word([...two.slice(0, at), CR, LF, ...two.slice(at)]));
  return words;
}

/**
 * The longest stride every windowed pattern allows (4 * stride + 3 <= its length), within
 * MAX_STRIDE and the window budget.
 */
function chooseStride(patterns: readonly Buffer[], tolerant: Uint8Array): number {
  let shortest = Infinity;
  // Windows per offset: one, and nine for a line-tolerant pattern (its plain window and eight with a break).
  let windowed = 0;
  patterns.forEach((pattern, index) => {
    if (pattern.length < MIN_WINDOWED_LENGTH) return;
    windowed += tolerant[index] === 1 ? 9 : 1;
    if (pattern.length < shortest) shortest = pattern.length;
  });
  if (windowed === 0) return 1;
  let stride = Math.min(MAX_STRIDE, Math.floor((shortest - 3) / 4));
  while (stride > 1 && windowed * 4 * stride > WINDOW_BUDGET) stride--;
  return stride;
}

/**
 * A set of int32 keys with a bitmap in front: most lookups (a buffer's suffixes that begin no
 * pattern) end at one bit test instead of a hash-table probe.
 */
class KeySet {
  readonly #keys = new Set<number>();
  #bitmap = new Int32Array(1);
  #shift = 32;

  get size(): number {
    return this.#keys.size;
  }

  add(key: number): void {
    this.#keys.add(key);
  }

  /** Size the bitmap once every key is in: about 16 bits a key. */
  seal(): void {
    const bits = Math.min(24, Math.max(10, Math.ceil(Math.log2(this.#keys.size * 16 + 1))));
    this.#shift = 32 - bits;
    this.#bitmap = new Int32Array(1 << (bits - 5));
    for (const key of this.#keys) {
      const hash = Math.imul(key, HASH_MULTIPLIER) >>> this.#shift;
      this.#bitmap[hash >>> 5] |= 1 << (hash & 31);
    }
  }

  mayHave(key: number): boolean {
    const hash = Math.imul(key, HASH_MULTIPLIER) >>> this.#shift;
    return (this.#bitmap[hash >>> 5]! & (1 << (hash & 31))) !== 0;
  }

  has(key: number): boolean {
    return this.#keys.has(key);
  }
}

const PREFIX_BASE = 0x01000193;

function prefixStep(hash: number, byte: number): number {
  return (Math.imul(hash, PREFIX_BASE) + byte) | 0;
}

function prefixKey(hash: number, length: number): number {
  return (Math.imul(hash, 0x2545f491) ^ Math.imul(length, 0x9e3779b1)) | 0;
}

/** (pattern, offset) pairs ordered by how far past the window the pattern reaches, farthest first. */
function sortByReach(list: number[], patterns: readonly Buffer[]): number[] {
  const pairs: Array<[number, number]> = [];
  for (let index = 0; index < list.length; index += 2) pairs.push([list[index], list[index + 1]]);
  const reach = ([pattern, offset]: [number, number]) => patterns[pattern].length - offset;
  pairs.sort((a, b) => reach(b) - reach(a) || a[0] - b[0] || a[1] - b[1]);
  return pairs.flat();
}

/** True when recording this occurrence would change nothing: the last run already covers it. */
function isCovered(matches: Match[], start: number, end: number, pattern: number): boolean {
  const last = matches[matches.length - 1];
  if (last === undefined || start < last.start || end > last.end) return false;
  return start > last.start || end < last.patternEnd || (end === last.patternEnd && pattern > last.pattern);
}

function record(matches: Match[], start: number, end: number, pattern: number): void {
  const last = matches[matches.length - 1];
  if (last === undefined || start < last.start || start > last.end) {
    matches.push({ start, end, pattern, patternEnd: end });
    return;
  }
  if (start === last.start && (end > last.patternEnd || (end === last.patternEnd && pattern < last.pattern))) {
    last.pattern = pattern;
    last.patternEnd = end;
  }
  if (end > last.end) last.end = end;
}

/** The 4 bytes at `offset` as the platform's Int32Array would read them. */
function readWord(bytes: Buffer, offset: number): number {
  return LITTLE_ENDIAN ? bytes.readInt32LE(offset) : bytes.readInt32BE(offset);
}

function equalsAt(buffer: Buffer, start: number, bytes: Buffer): boolean {
  if (bytes.length > 64) return buffer.compare(bytes, 0, bytes.length, start, start + bytes.length) === 0;
  for (let index = 0; index < bytes.length; index++) {
    if (buffer[start + index] !== bytes[index]) return false;
  }
  return true;
}
