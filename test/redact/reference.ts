/*
 * A deliberately naive model of the redactor, for property tests: brute-force search for every
 * spelling of every value, union of all occurrences (touching ones merged), each region named
 * after the longest occurrence at its start. It shares only the list of spellings with the
 * real implementation.
 */
import { getEncodedForms } from '../../src/redact';

export interface Registration {
  value: string;
  label: string;
  encodings?: boolean;
}

export function referencePatterns(registrations: readonly Registration[], minLength = 8): Array<{ bytes: Buffer; label: string }> {
  const seen = new Set<string>();
  const patterns: Array<{ bytes: Buffer; label: string }> = [];
  for (const { value, label, encodings } of registrations) {
    for (const { text } of getEncodedForms(value, { minLength, encodings: encodings !== false })) {
      const bytes = Buffer.from(text, 'utf8');
      if (seen.has(bytes.toString('hex'))) continue;
      seen.add(bytes.toString('hex'));
      patterns.push({ bytes, label });
    }
  }
  return patterns;
}

export function referenceRedact(input: Buffer, registrations: readonly Registration[], minLength = 8): { buffer: Buffer; count: number } {
  const patterns = referencePatterns(registrations, minLength);
  const occurrences: Array<{ start: number; end: number; label: string; order: number }> = [];
  patterns.forEach(({ bytes, label }, order) => {
    for (let start = input.indexOf(bytes); start !== -1; start = input.indexOf(bytes, start + 1)) {
      occurrences.push({ start, end: start + bytes.length, label, order });
    }
  });
  occurrences.sort((a, b) => a.start - b.start || b.end - a.end || a.order - b.order);
  const parts: Buffer[] = [];
  let position = 0;
  let count = 0;
  let index = 0;
  while (index < occurrences.length) {
    const first = occurrences[index]!;
    let end = first.end;
    index++;
    while (index < occurrences.length && occurrences[index]!.start <= end) {
      end = Math.max(end, occurrences[index]!.end);
      index++;
    }
    parts.push(input.subarray(position, first.start), Buffer.from(`[REDACTED:${first.label}]`, 'utf8'));
    position = end;
    count++;
  }
  parts.push(input.subarray(position));
  return { buffer: Buffer.concat(parts), count };
}
