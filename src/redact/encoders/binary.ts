/*
 * Binary-to-text spellings: base64, base64url and hex.
 *
 * base64 works on 3-byte groups, so a value embedded after n other bytes is encoded differently
 * for each n mod 3 (`base64("user:" + v)` is the classic case). Dropping the first 0, 1 or 2 bytes
 * of the value yields the three alignments. The characters of a partial final group depend on the
 * bytes that follow (`echo $V | base64` appends "\n"), so each alignment is also registered cut
 * down to the characters that only depend on the value's own bits: floor(4 * n / 3) for n bytes.
 */
import type { EncodedForm } from './types';

// `base64` (coreutils) and `openssl base64` wrap their output; a long value then never appears
// unbroken, so the lines are registered too. Only alignment 0 wraps at a predictable place.
const WRAP_WIDTHS = [64, 76] as const;

export function getBase64Forms(bytes: Buffer): EncodedForm[] {
  const forms: EncodedForm[] = [];
  for (let shift = 0; shift < 3 && shift < bytes.length; shift++) {
    const part = bytes.subarray(shift);
    const stableLength = Math.floor((part.length * 4) / 3);
    const standard = part.toString('base64');
    const url = part.toString('base64url');
    forms.push(
      { form: `base64@${shift}`, text: standard },
      { form: `base64-stable@${shift}`, text: standard.slice(0, stableLength) },
      { form: `base64url@${shift}`, text: url },
      { form: `base64url-stable@${shift}`, text: url.slice(0, stableLength) },
    );
    if (shift === 0) forms.push(...getWrappedLines(standard.slice(0, stableLength)));
  }
  return forms;
}

function getWrappedLines(stable: string): EncodedForm[] {
  const forms: EncodedForm[] = [];
  for (const width of WRAP_WIDTHS) {
    if (stable.length <= width) continue;
    for (let start = 0, line = 0; start < stable.length; start += width, line++) {
      forms.push({ form: `base64-wrap${width}[${line}]`, text: stable.slice(start, start + width) });
    }
  }
  return forms;
}

export function getHexForms(bytes: Buffer): EncodedForm[] {
  const lower = bytes.toString('hex');
  return [
    { form: 'hex', text: lower },
    { form: 'hex-upper', text: lower.toUpperCase() },
  ];
}
