/*
 * A masker made of layers, so that adding a value costs time in proportion to that value rather
 * than to every value registered: the patterns known when the masker was first compiled make the
 * base layer; patterns added after that go to a small top layer, rebuilt alone when a value is
 * added (its size is bounded by TOP_LAYER_LIMIT patterns, a few dozen values' spellings); when it
 * would grow past that, everything is merged into a new base. Rebuilding the whole matcher for
 * each added value cost 0.2 s with 1,000 values and 1.7 s with 10,000 (bench/redact.js).
 *
 * Layers mask exactly what one matcher of all their patterns masks: each layer reports the runs
 * of its own occurrences (see Match in matcher.ts), and the runs of all layers, sorted the way one
 * matcher sorts them (by start, then longest pattern first, then lowest index), are what
 * redactRange (regions.ts) merges into regions; it merges overlapping and touching runs however
 * many lists they came from, and names a region after the longest pattern at its start.
 */
import { Matcher, type Match } from './matcher';

/** Patterns a top layer may hold before it is merged into the base (see the header). */
export const TOP_LAYER_LIMIT = 1024;

/*
 * Within a layer, the spellings short enough to force a short stride (shorter than
 * LONG_SPELLING: 4 * 8 + 3 bytes, the longest stride's minimum) are scanned apart from the others
 * once a layer holds enough patterns for it to matter (SPLIT_MIN_PATTERNS): one short spelling
 * made the whole set's scan sample a word every 8 bytes instead of every 32, with every window of
 * every long spelling in its bitmap (bench/redact.js: 1,000 secrets include passwords of 12
 * characters). The short ones then get a scan of their own with a small bitmap, and the long ones
 * keep the long stride.
 */
const LONG_SPELLING = 35;
const SPLIT_MIN_PATTERNS = 512;

/**
 * A matcher over some of the patterns: `indexes[local] + offset` is a local pattern's index among
 * all (the offset is 0 but in a stack, see LayeredMatcher.stack).
 */
interface Part {
  readonly matcher: Matcher;
  readonly indexes: Int32Array;
  readonly offset: number;
}

interface Layer {
  readonly parts: readonly Part[];
  readonly maxLength: number;
}

/** A layer of `patterns` (the ones from `offset` on among all), split by length when that pays. */
function buildLayer(patterns: readonly Buffer[], tolerant: ReadonlySet<number>, offset: number): Layer {
  const groups: number[][] = [[], []];
  for (let index = 0; index < patterns.length; index++) groups[patterns[index].length >= LONG_SPELLING ? 0 : 1].push(index);
  const split = patterns.length >= SPLIT_MIN_PATTERNS && groups[0].length > 0 && groups[1].length > 0;
  const parts = (split ? groups : [groups[0].concat(groups[1]).sort((a, b) => a - b)]).map((group) => {
    const local = new Map(group.map((index, at) => [index, at]));
    const localTolerant: number[] = [];
    for (const index of tolerant) {
      const at = local.get(index - offset);
      if (at !== undefined) localTolerant.push(at);
    }
    return { matcher: new Matcher(group.map((index) => patterns[index]), localTolerant), indexes: Int32Array.from(group, (index) => index + offset), offset: 0 };
  });
  return { parts, maxLength: parts.reduce((max, part) => Math.max(max, part.matcher.maxLength), 0) };
}

/** A matcher over patterns `0..count` kept as a base and a top layer (see the header). */
export class LayeredMatcher {
  readonly maxLength: number;
  readonly #layers: readonly Layer[];
  readonly #parts: readonly Part[];
  /** Number of patterns covered. */
  readonly count: number;
  /** Number of patterns in the base layer. */
  readonly baseCount: number;

  private constructor(layers: readonly Layer[], count: number, baseCount: number, parts: readonly Part[] = layers.flatMap((layer) => layer.parts)) {
    this.#layers = layers;
    this.count = count;
    this.baseCount = baseCount;
    this.maxLength = parts.reduce((max, part) => Math.max(max, part.matcher.maxLength), 0);
    this.#parts = parts;
  }

  /** One layer of every pattern. */
  static build(patterns: readonly Buffer[], tolerant: ReadonlySet<number>): LayeredMatcher {
    return new LayeredMatcher([buildLayer(patterns, tolerant, 0)], patterns.length, patterns.length);
  }

  /**
   * A matcher over `patterns` (the first `previous.count` of them unchanged since `previous` was
   * built, with the same line tolerance): the base of `previous` kept and the rest in a new top
   * layer, or everything in one new base once the top would hold more than `limit` patterns.
   */
  static extend(previous: LayeredMatcher, patterns: readonly Buffer[], tolerant: ReadonlySet<number>, limit = TOP_LAYER_LIMIT): LayeredMatcher {
    const baseCount = previous.baseCount;
    if (patterns.length - baseCount > limit || baseCount === 0) return LayeredMatcher.build(patterns, tolerant);
    if (patterns.length === baseCount) return previous;
    const top = buildLayer(patterns.slice(baseCount), tolerant, baseCount);
    return new LayeredMatcher([previous.#layers[0], top], patterns.length, baseCount);
  }

  /**
   * `top`'s patterns (indexes 0..top.count) above `below`'s (indexes top.count on): what both
   * mask, and where both match the same bytes the lower index, `top`'s, names the region. Nothing
   * is built: the parts of both are scanned as they are, so a large `below` compiled once (a
   * gateway's remembered values, memory.ts) serves every run's own small `top`. The result is only
   * scanned, never extended (a stack has no base of its own: extend() builds one anew).
   */
  static stack(top: LayeredMatcher | undefined, below: LayeredMatcher): LayeredMatcher {
    if (top === undefined || top.count === 0) return below;
    const offset = top.count;
    const parts = [...top.#parts, ...below.#parts.map((part) => ({ ...part, offset: part.offset + offset }))];
    return new LayeredMatcher([], top.count + below.count, 0, parts);
  }

  /** Number of matchers scanned (a layer's short and long spellings may be apart). */
  get parts(): number {
    return this.#parts.length;
  }

  /** Number of layers (1 or 2; 0 for a stack). */
  get layers(): number {
    return this.#layers.length;
  }

  /** The leftmost position where an occurrence of any layer's pattern may be under way (Matcher#holdStart). */
  holdStart(buffer: Buffer): number {
    let hold = buffer.length;
    for (const { matcher } of this.#parts) hold = Math.min(hold, matcher.holdStart(buffer));
    return hold;
  }

  /** The runs of every layer (and part), pattern indexes counted among all patterns, sorted as Matcher#findCover sorts. */
  findCover(buffer: Buffer, lastStart: number): Match[] {
    const parts = this.#parts;
    // One part of every pattern in order: its indexes are the patterns' own.
    if (parts.length === 1 && parts[0].offset === 0) return parts[0].matcher.findCover(buffer, lastStart);
    const matches: Match[] = [];
    for (const { matcher, indexes, offset } of parts) {
      for (const match of matcher.findCover(buffer, lastStart)) {
        match.pattern = indexes[match.pattern] + offset;
        matches.push(match);
      }
    }
    if (matches.length > 1) matches.sort((a, b) => a.start - b.start || b.patternEnd - a.patternEnd || a.pattern - b.pattern);
    return matches;
  }
}
