/*
 * A deliberately naive model of the redactor, for property tests: brute-force search for every
 * spelling of every value, union of all occurrences (touching ones merged), each region named
 * after the longest occurrence at its start. A spelling marked `wraps` (base64) also occurs with
 * line breaks (CR, LF) anywhere between its characters. It shares only the list of spellings with
 * the real implementation.
 */
import { getEncodedForms } from '../../src/redact';

export interface Registration {
  value: string;
  label: string;
  encodings?: boolean;
}

export function referencePatterns(registrations: readonly Registration[], minLength = 8): Array<{ bytes: Buffer; label: string; wraps: boolean }> {
  const seen = new Map<string, { bytes: Buffer; label: string; wraps: boolean }>();
  const patterns: Array<{ bytes: Buffer; label: string; wraps: boolean }> = [];
  for (const { value, label, encodings } of registrations) {
    for (const { text, wraps } of getEncodedForms(value, { minLength, encodings: encodings !== false })) {
      const bytes = Buffer.from(text, 'utf8');
      const known = seen.get(bytes.toString('hex'));
      if (known) {
        known.wraps ||= wraps === true;
        continue;
      }
      const pattern = { bytes, label, wraps: wraps === true };
      seen.set(bytes.toString('hex'), pattern);
      patterns.push(pattern);
    }
  }
  return patterns;
}

/**
 * Where `bytes` ends when it occurs at `start` as wrapped lines, or -1: an LF or CRLF may stand
 * between two of its characters, and two breaks have 4 characters or more between them.
 */
function endAcrossBreaks(input: Buffer, start: number, bytes: Buffer): number {
  let at = start;
  let line = -1;
  for (let index = 0; index < bytes.length; index++) {
    if (index > 0 && (input[at] === 10 || input[at] === 13)) {
      const eol = input[at] === 13 ? 2 : 1;
      if (input[at + eol - 1] !== 10 || (line >= 0 && line < 4)) return -1;
      at += eol;
      line = 0;
    }
    if (input[at] !== bytes[index]) return -1;
    at++;
    if (line >= 0) line++;
  }
  return at;
}

export function referenceRedact(input: Buffer, registrations: readonly Registration[], minLength = 8): { buffer: Buffer; count: number } {
  const patterns = referencePatterns(registrations, minLength);
  const occurrences: Array<{ start: number; end: number; label: string; order: number }> = [];
  patterns.forEach(({ bytes, label, wraps }, order) => {
    if (!wraps) {
      for (let start = input.indexOf(bytes); start !== -1; start = input.indexOf(bytes, start + 1)) {
        occurrences.push({ start, end: start + bytes.length, label, order });
      }
      return;
    }
    for (let start = 0; start < input.length; start++) {
      const end = endAcrossBreaks(input, start, bytes);
      if (end >= 0) occurrences.push({ start, end, label, order });
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
