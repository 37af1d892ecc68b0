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
 * Patterns marked line-tolerant (the base64 spellings) also match with line breaks (`\n`, `\r\n`,
 * and `\r\r\n`, which a terminal makes of a `\r\n`) anywhere between their characters, as encoders that wrap their output write them (`base64`,
 * PEM, MIME, Python's encodebytes: any width, any offset). An occurrence of such a pattern,
 * breaks included, still spans 4*S + 3 bytes or more, so a sampled word starts inside it after at
 * most 4*S - 1 of its characters, and the 4 characters from there on (line breaks skipped) are one
 * of its plain windows. So a sampled word that may hold a break (an LF anywhere, found with a
 * SWAR test of a few instructions on every sample, or a CR as its last byte, whose LF is in the
 * next word; a CR elsewhere is a break only with its LF beside it) is also looked up joined: its bytes from the sampled
 * position with breaks left out, read on to 4 characters. A hit is verified by walking back over
 * the characters before it and comparing forward, skipping breaks. No extra windows are
 * registered for large sets: listing every word a wrapped window can look like (LF at four
 * places, CRLF at three, a cut CRLF, CR CR LF at three more places; twelve words per window) tripled the windows in the bitmap
 * every sample tests and cost figure 4 up to 19 % with 1,000 secrets (see bench/redact.js). For a
 * few secrets it is the other way round: the bitmap stays small whatever is in it, and the joined
 * reading of every sample that holds a break (most log lines put one in a sampled word every few
 * samples) cost up to 40 % of the scan with one secret. So while the wrapped words of the
 * line-tolerant windows fit in VARIANT_BUDGET they are registered as windows of their own, and no
 * sample is read joined; past it, the joined reading above.
 *
 * Redaction only needs the union of all occurrences and, where a region of that union starts, the
 * longest pattern starting there. Output that repeats a secret's own bytes (a run of `a` against
 * values like `aaaaaaaa`, `aaaaaaaaa`, ...) holds an occurrence at every position; keeping each
 * one would cost memory and a sort per byte. So an occurrence that starts inside (or right after)
 * the last recorded one is folded into it, and a candidate it already covers is not even verified.
 *
 * What is built once per pattern set (the stride, the windows) is in windows.ts; where a stream
 * holds bytes back, in prefixes.ts. The scan and its constants stay here, in one module, so that
 * its loops read nothing through another module's exports.
 */
import { PrefixIndex } from './prefixes';
import { byReach, chooseStride, MIN_WINDOWED_LENGTH, readWord, VARIANT_BUDGET, wrappedWord, WRAPPED_SHAPES } from './windows';
import { WindowList, WordTable } from './tables';

/** A run of overlapping or touching occurrences: `pattern` is the longest one starting at `start`. */
export interface Match {
  start: number;
  /** End of the run (at least the end of `pattern`). */
  end: number;
  pattern: number;
  /** End of `pattern` itself. */
  patternEnd: number;
}

const HASH_MULTIPLIER = 0x9e3779b1;
const HASH_MULTIPLIER_2 = 0x85ebca77;
// Bits of the first bitmap per window: 16 (about 6 % of samples pass it, the second bitmap turns
// nearly all of those away) keeps it small enough to stay in the cache on a loaded machine. With
// 1,000 secrets, 256 bits a window asked for the 512 KiB cap in each part and a sample cost tens of
// nanoseconds in cache misses; 16 bits was 1.4x as fast on mixed text (bench/redact.js, interleaved).
const BITS_PER_WINDOW = 16;
const MAX_BITMAP_BITS = 22;
// 32 KiB: an L1 data cache, the least a bitmap takes.
const L1_BITMAP_BITS = 18;
// SWAR: a word w holds a zero byte exactly when ((w - ONES) & ~w & HIGHS) !== 0; w ^ LFS has
// one where w has an LF.
const ONES = 0x01010101;
const HIGHS = 0x80808080 | 0;
const LFS = 0x0a0a0a0a;
const CRS = 0x0d0d0d0d;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
// The shift that brings a word's last byte in memory down to the low 8 bits.
const LAST_BYTE = LITTLE_ENDIAN ? 24 : 0;

export class Matcher {
  readonly maxLength: number;
  readonly #patterns: readonly Buffer[];
  readonly #tolerant: Uint8Array;
  readonly #short: number[] = [];
  // window word -> (pattern index, offset of the window in the pattern) pairs (tables.ts)
  readonly #windows: WordTable;
  // the same for the line-tolerant patterns alone: looked up with a sampled word's breaks left out
  readonly #tolerantWindows: WordTable;
  readonly #bitmap: Int32Array;
  // The same windows under a second hash: a sample that passes the first bitmap is looked up only
  // if it passes this one too (a two-hash Bloom filter: with one secret's 2,100 windows in 2^18
  // bits, 0.8 % of samples pass the first and under 0.01 % both; each lookup that finds nothing
  // costs a hash-table probe, which showed as some 10 % of the scan on base64 text).
  readonly #bitmap2: Int32Array;
  readonly #hashShift: number;
  /** Words (of 4 bytes) between two sampled words. */
  readonly #stride: number;
  readonly #hold: PrefixIndex;

  /**
   * `tolerant`: indexes of the patterns that also match across line breaks (see the header). A
   * pattern holding a CR or LF itself is matched as written: whether such a byte in the text is
   * one of its characters or a break between two is undecidable, and a stream cut between them
   * decided it otherwise than the whole text did (test/redact/layers.property.test.ts found it).
   * The spellings the redactor marks tolerant (base64) never hold one.
   */
  constructor(patterns: readonly Buffer[], tolerant: Iterable<number> = []) {
    this.#patterns = patterns;
    this.#tolerant = new Uint8Array(patterns.length);
    for (const index of tolerant) {
      if (index >= 0 && index < patterns.length && !patterns[index].includes(0x0a) && !patterns[index].includes(0x0d)) this.#tolerant[index] = 1;
    }
    this.maxLength = patterns.reduce((max, pattern) => Math.max(max, pattern.length), 0);
    this.#hold = new PrefixIndex(patterns, this.#tolerant);
    this.#stride = chooseStride(patterns);
    const windows = 4 * this.#stride;
    let tolerantWindows = 0;
    patterns.forEach((pattern, index) => {
      if (pattern.length >= MIN_WINDOWED_LENGTH && this.#tolerant[index] === 1) tolerantWindows += windows;
    });
    const variants = tolerantWindows * WRAPPED_SHAPES.length <= VARIANT_BUDGET;
    // Gathered in growable typed arrays, then kept in hash tables of typed arrays (tables.ts).
    const windowList = new WindowList();
    const tolerantList = new WindowList();
    patterns.forEach((pattern, index) => {
      if (pattern.length < MIN_WINDOWED_LENGTH) {
        if (pattern.length > 0) this.#short.push(index);
        return;
      }
      for (let offset = 0; offset < windows; offset++) {
        windowList.add(readWord(pattern, offset), index, offset);
        if (this.#tolerant[index] !== 1) continue;
        if (!variants) {
          tolerantList.add(readWord(pattern, offset), index, offset);
          continue;
        }
        for (const shape of WRAPPED_SHAPES) windowList.add(wrappedWord(pattern, offset, shape), index, offset);
      }
    });
    const before = byReach(patterns);
    this.#windows = new WordTable(windowList, before);
    this.#tolerantWindows = new WordTable(tolerantList, before);
    // 16 bits a window, at least an L1 cache's worth and at most 512 KiB (see BITS_PER_WINDOW).
    const distinct = this.#windows.size;
    const bits = Math.min(MAX_BITMAP_BITS, Math.max(L1_BITMAP_BITS, Math.ceil(Math.log2(distinct * BITS_PER_WINDOW + 1))));
    this.#hashShift = 32 - bits;
    this.#bitmap = new Int32Array(1 << (bits - 5));
    this.#bitmap2 = new Int32Array(1 << (bits - 5));
    for (const word of this.#windows.words()) {
      const hash = Math.imul(word, HASH_MULTIPLIER) >>> this.#hashShift;
      this.#bitmap[hash >>> 5] |= 1 << (hash & 31);
      const hash2 = Math.imul(word, HASH_MULTIPLIER_2) >>> this.#hashShift;
      this.#bitmap2[hash2 >>> 5] |= 1 << (hash2 & 31);
    }
  }

  /** Words (of 4 bytes) from one sampled word to the next (see the header). */
  get stride(): number {
    return this.#stride;
  }

  /** Whether sampled words with a line break are read joined (many line-tolerant windows) rather than looked up as registered wrapped words (see the header). */
  get readsJoined(): boolean {
    return this.#tolerantWindows.size > 0;
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
    return this.#hold.holdStart(buffer);
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
    const bitmap2 = this.#bitmap2;
    const shift = this.#hashShift;
    if (this.#tolerantWindows.size === 0) {
      // No sample is read joined (see the header): the plain loop, kept apart so that it stays tight.
      for (let index = 0; index < end; index += stride) {
        const word = words[index];
        const hash = Math.imul(word, HASH_MULTIPLIER) >>> shift;
        if ((bitmap[hash >>> 5] & (1 << (hash & 31))) === 0) continue;
        const hash2 = Math.imul(word, HASH_MULTIPLIER_2) >>> shift;
        if ((bitmap2[hash2 >>> 5] & (1 << (hash2 & 31))) === 0) continue;
        this.#verify(buffer, word, padding + index * 4, lastStart, matches);
      }
      return;
    }
    for (let index = 0; index < end; index += stride) {
      const word = words[index];
      const hash = Math.imul(word, HASH_MULTIPLIER) >>> shift;
      // A word that may hold a line break is looked up joined too (see the header).
      const lf = word ^ LFS;
      if (((lf - ONES) & ~lf & HIGHS) !== 0 || ((word >>> LAST_BYTE) & 0xff) === CR) this.#verifyJoined(buffer, padding + index * 4, lastStart, matches);
      if ((bitmap[hash >>> 5] & (1 << (hash & 31))) === 0) continue;
      const hash2 = Math.imul(word, HASH_MULTIPLIER_2) >>> shift;
      if ((bitmap2[hash2 >>> 5] & (1 << (hash2 & 31))) === 0) continue;
      this.#verify(buffer, word, padding + index * 4, lastStart, matches);
    }
  }

  /** The sampled word at `position` read with line breaks left out, looked up among the line-tolerant windows. */
  #verifyJoined(buffer: Buffer, position: number, lastStart: number, matches: Match[]): void {
    const length = buffer.length;
    let word = 0;
    let count = 0;
    let at = position;
    for (; count < 4 && at < length; at++) {
      const byte = buffer[at];
      if (byte === LF || byte === CR) continue;
      word = LITTLE_ENDIAN ? word | (byte << (8 * count)) : (word << 8) | byte;
      count++;
    }
    // Without a break among them these are the word itself, looked up already.
    if (count < 4 || at === position + 4) return;
    const hash = Math.imul(word, HASH_MULTIPLIER) >>> this.#hashShift;
    if ((this.#bitmap[hash >>> 5] & (1 << (hash & 31))) === 0) return;
    const table = this.#tolerantWindows;
    const slot = table.find(word);
    if (slot < 0) return;
    const pairs = table.pairs;
    for (let index = table.start(slot), end = table.end(slot); index < end; index += 2) {
      // As in #verify: the characters after these 4 first.
      if (continuesAt(buffer, at, this.#patterns[pairs[index]], pairs[index + 1] + 4)) this.#verifyAcrossBreaks(buffer, pairs[index], position, pairs[index + 1], lastStart, matches);
    }
  }

  #verify(buffer: Buffer, word: number, position: number, lastStart: number, matches: Match[]): void {
    const table = this.#windows;
    const slot = table.find(word);
    if (slot < 0) return;
    const pairs = table.pairs;
    const first = table.start(slot);
    const last = table.end(slot);
    // A line-tolerant pattern may have breaks before or after this word, and then reaches farther
    // than its length: verified first, apart from the early end below. The bytes after a sampled
    // word without a break in it are the pattern's next characters up to the first break: most
    // candidates (a window of a base64 spelling met in random text) end there, before the walk
    // back over the characters ahead of the word (half the time of a 1,000-secret scan's long
    // spellings went to those walks; bench/redact.js).
    const plain = !mayBreak(word);
    for (let index = first; index < last; index += 2) {
      const pattern = pairs[index];
      if (this.#tolerant[pattern] !== 1) continue;
      if (plain && !continuesAt(buffer, position + 4, this.#patterns[pattern], pairs[index + 1] + 4)) continue;
      this.#verifyAcrossBreaks(buffer, pattern, position, pairs[index + 1], lastStart, matches);
    }
    for (let index = first; index < last; index += 2) {
      const pattern = pairs[index];
      if (this.#tolerant[pattern] === 1) continue;
      const start = position - pairs[index + 1];
      const bytes = this.#patterns[pattern];
      const end = start + bytes.length;
      // Candidates reach less and less far, and all start after position - 4 * stride: once the
      // last run starts before them and already reaches this far, it covers the rest.
      const run = matches[matches.length - 1];
      if (run !== undefined && run.start <= position - 4 * this.#stride && end <= run.end) return;
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
      const byte = buffer[start];
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
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Where `bytes` ends when it occurs at `start` as a wrapping encoder writes it, or -1: its
 * characters with an LF, a CRLF or a CR CR LF between some of them, and 4 characters or more between two
 * breaks (the lines of a width of 4 or more; the first and the last may be shorter). That is
 * what the windows are guaranteed to find wherever the words fall, so the result never depends
 * on how a stream was cut into chunks.
 */
export function endAcrossBreaks(buffer: Buffer, start: number, bytes: Buffer): number {
  let at = start;
  let line = -1;
  for (let index = 0; index < bytes.length; index++, at++) {
    if (index > 0 && (buffer[at] === LF || buffer[at] === CR)) {
      // LF, CRLF, or CR CR LF (a CRLF on a terminal: onlcr)
      if (buffer[at] === CR) at++;
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

/** True when the word (4 bytes) holds an LF or a CR. */
function mayBreak(word: number): boolean {
  const lf = word ^ LFS;
  const cr = word ^ CRS;
  return ((lf - ONES) & ~lf & HIGHS) !== 0 || ((cr - ONES) & ~cr & HIGHS) !== 0;
}

/**
 * False when `buffer` from `at` cannot go on as the line-tolerant `bytes` from `from` does: its
 * next characters (line breaks left out; up to 4, within 8 bytes) must be the pattern's next ones.
 */
function continuesAt(buffer: Buffer, at: number, bytes: Buffer, from: number): boolean {
  const stop = Math.min(buffer.length, at + 8);
  let next = from;
  for (let position = at; position < stop && next < bytes.length && next < from + 4; position++) {
    const byte = buffer[position];
    if (byte === LF || byte === CR) continue;
    if (byte !== bytes[next]) return false;
    next++;
  }
  return true;
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

function equalsAt(buffer: Buffer, start: number, bytes: Buffer): boolean {
  if (bytes.length > 64) return buffer.compare(bytes, 0, bytes.length, start, start + bytes.length) === 0;
  for (let index = 0; index < bytes.length; index++) {
    if (buffer[start + index] !== bytes[index]) return false;
  }
  return true;
}
