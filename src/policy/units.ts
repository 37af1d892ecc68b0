/*
 * Durations and sizes as a policy file writes them: whole milliseconds / bytes, or a number with
 * a unit (`30s`, `64MiB`). The schema checks the spelling; these turn it into numbers and back.
 */
import type { DurationDocument, SizeDocument } from './schema-def';

const DURATION = /^([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)$/;
const SIZE = /^([0-9]+(?:\.[0-9]+)?)\s*(B|KB|KiB|MB|MiB|GB|GiB)$/;

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE_UNITS: Readonly<Record<string, number>> = {
  B: 1, KB: 1000, KiB: 1024, MB: 1000 ** 2, MiB: 1024 ** 2, GB: 1000 ** 3, GiB: 1024 ** 3,
};

/** The longest delay a Node.js timer accepts (about 24.8 days); longer ones fire at once. */
export const MAX_DURATION_MS = 2_147_483_647;

/** Milliseconds for a duration as the schema lets it be written. */
export function parseDuration(value: DurationDocument): number {
  if (typeof value === 'number') return value;
  const match = spelling(DURATION, value);
  return Math.round(Number(match[1]) * (DURATION_UNITS[match[2]]));
}

/** Bytes for a size as the schema lets it be written. */
export function parseSize(value: SizeDocument): number {
  if (typeof value === 'number') return value;
  const match = spelling(SIZE, value);
  return Math.round(Number(match[1]) * (SIZE_UNITS[match[2]]));
}

/* The schema's pattern read again for its parts; text it let through always matches. */
function spelling(form: RegExp, value: string): RegExpExecArray {
  const match = form.exec(value);
  if (!match) throw new Error(`\`${value}\` has none of the forms the policy schema allows (${form.source}).`);
  return match;
}

/** The shortest exact spelling of a duration (`120000` -> `2m`); 0 stays 0. */
export function formatDuration(ms: number): number | string {
  if (ms === 0) return 0;
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS[unit];
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** The shortest exact binary spelling of a size (`1048576` -> `1MiB`). */
export function formatSize(bytes: number): number | string {
  if (bytes === 0) return 0;
  for (const unit of ['GiB', 'MiB', 'KiB'] as const) {
    const size = SIZE_UNITS[unit];
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return bytes;
}
