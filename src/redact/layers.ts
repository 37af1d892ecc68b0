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

interface Layer {
  readonly matcher: Matcher;
  /** Index of the layer's first pattern among all patterns. */
  readonly offset: number;
}

/** A matcher over patterns `0..count` kept as a base and a top layer (see the header). */
export class LayeredMatcher {
  readonly maxLength: number;
  readonly #layers: readonly Layer[];
  /** Number of patterns covered. */
  readonly count: number;
  /** Number of patterns in the base layer. */
  readonly baseCount: number;

  private constructor(layers: readonly Layer[], count: number, baseCount: number) {
    this.#layers = layers;
    this.count = count;
    this.baseCount = baseCount;
    this.maxLength = layers.reduce((max, layer) => Math.max(max, layer.matcher.maxLength), 0);
  }

  /** One layer of every pattern. */
  static build(patterns: readonly Buffer[], tolerant: ReadonlySet<number>): LayeredMatcher {
    return new LayeredMatcher([{ matcher: new Matcher(patterns.slice(), tolerant), offset: 0 }], patterns.length, patterns.length);
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
    const topTolerant: number[] = [];
    for (const index of tolerant) if (index >= baseCount) topTolerant.push(index - baseCount);
    const top = new Matcher(patterns.slice(baseCount), topTolerant);
    return new LayeredMatcher([previous.#layers[0], { matcher: top, offset: baseCount }], patterns.length, baseCount);
  }

  /** Number of layers (1 or 2). */
  get layers(): number {
    return this.#layers.length;
  }

  /** The leftmost position where an occurrence of any layer's pattern may be under way (Matcher#holdStart). */
  holdStart(buffer: Buffer): number {
    let hold = buffer.length;
    for (const { matcher } of this.#layers) hold = Math.min(hold, matcher.holdStart(buffer));
    return hold;
  }

  /** The runs of every layer, pattern indexes counted among all patterns, sorted as Matcher#findCover sorts. */
  findCover(buffer: Buffer, lastStart: number): Match[] {
    const layers = this.#layers;
    if (layers.length === 1) return layers[0].matcher.findCover(buffer, lastStart);
    const matches: Match[] = [];
    for (const { matcher, offset } of layers) {
      for (const match of matcher.findCover(buffer, lastStart)) {
        match.pattern += offset;
        matches.push(match);
      }
    }
    if (matches.length > 1) matches.sort((a, b) => a.start - b.start || b.patternEnd - a.patternEnd || a.pattern - b.pattern);
    return matches;
  }
}
