/*
 * Turns matches into output: every byte covered by any occurrence is replaced, and occurrences
 * that overlap or touch form one region with one replacement, so no fragment of a secret survives
 * between two replacements. A region is named after the longest occurrence at its start (the
 * leftmost-longest rule), which depends only on bytes, never on how they were chunked.
 *
 * `redactRange` is the one step both whole-buffer and streaming redaction run: it decides the
 * bytes 0..lastStart of `buffer` (every occurrence that starts there is visible in `buffer`) and
 * carries the end of an open region over to the caller's next buffer.
 */
import type { Match } from './matcher';

/** What redaction asks of a matcher (Matcher, or LayeredMatcher in layers.ts). */
export interface PatternMatcher {
  readonly maxLength: number;
  holdStart(buffer: Buffer): number;
  findCover(buffer: Buffer, lastStart: number): Match[];
}

export interface CompiledPatterns {
  readonly matcher: PatternMatcher;
  /** `[REDACTED:label]` for each pattern index. */
  readonly replacements: readonly Buffer[];
}

export interface RegionState {
  /** End of the last region, relative to the start of the next buffer; negative when none touches it. */
  regionEnd: number;
  count: number;
}

const NO_REGION = -1;

export function createRegionState(): RegionState {
  return { regionEnd: NO_REGION, count: 0 };
}

export function endRegion(state: RegionState): void {
  state.regionEnd = NO_REGION;
}

const EMPTY = Buffer.alloc(0);

/**
 * Redacted bytes for buffer[0..lastStart]; updates `state` so the next buffer starts at lastStart + 1.
 * With `sink`, the pieces (views of `buffer` and replacements, none empty) go to it in order, not
 * joined, and the result is empty.
 */
export function redactRange(compiled: CompiledPatterns, buffer: Buffer, lastStart: number, state: RegionState, sink?: (bytes: Buffer) => void): Buffer {
  const matches = compiled.matcher.findCover(buffer, lastStart);
  let regionEnd = state.regionEnd;
  if (matches.length === 0 && regionEnd <= 0) {
    state.regionEnd = NO_REGION;
    const whole = lastStart + 1 === buffer.length ? buffer : buffer.subarray(0, lastStart + 1);
    if (sink === undefined) return whole;
    if (whole.length > 0) sink(whole);
    return EMPTY;
  }
  const parts: Buffer[] = [];
  let emitFrom = 0;
  for (const { start, end, pattern } of matches) {
    if (start <= regionEnd) {
      if (end > regionEnd) regionEnd = end;
      continue;
    }
    const from = Math.max(emitFrom, regionEnd);
    if (start > from) parts.push(buffer.subarray(from, start));
    parts.push(compiled.replacements[pattern]);
    state.count++;
    emitFrom = start;
    regionEnd = end;
  }
  const from = Math.max(emitFrom, regionEnd, 0);
  if (from <= lastStart) parts.push(buffer.subarray(from, lastStart + 1));
  const consumed = lastStart + 1;
  state.regionEnd = regionEnd >= consumed ? regionEnd - consumed : NO_REGION;
  if (sink === undefined) return parts.length === 1 ? parts[0] : Buffer.concat(parts);
  for (const part of parts) if (part.length > 0) sink(part);
  return EMPTY;
}
