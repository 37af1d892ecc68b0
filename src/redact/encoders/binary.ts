/*
 * Binary-to-text spellings: base64, base64url and hex.
 *
 * base64 works on 3-byte groups, so a value embedded after n other bytes is encoded differently
 * for each n mod 3 (`base64("user:" + v)` is the classic case). Dropping the first 0, 1 or 2 bytes
 * of the value yields the three alignments. The characters of a partial final group depend on the
 * bytes that follow (`echo $V | base64` appends "\n"), so each alignment is also registered cut
 * down to the characters that only depend on the value's own bits: floor(4 * n / 3) for n bytes.
 * `base64`, PEM, MIME and most languages wrap their output into lines, at any offset of the
 * value: every base64 spelling is marked to match across line breaks (the matcher's job).
 */
import type { EncodedForm } from './types';

export function getBase64Forms(bytes: Buffer): EncodedForm[] {
  const forms: EncodedForm[] = [];
  for (let shift = 0; shift < 3 && shift < bytes.length; shift++) {
    const part = bytes.subarray(shift);
    const stableLength = Math.floor((part.length * 4) / 3);
    const standard = part.toString('base64');
    const url = part.toString('base64url');
    forms.push(
      { form: `base64@${shift}`, text: standard, wraps: true },
      { form: `base64-stable@${shift}`, text: standard.slice(0, stableLength), wraps: true },
      { form: `base64url@${shift}`, text: url, wraps: true },
      { form: `base64url-stable@${shift}`, text: url.slice(0, stableLength), wraps: true },
    );
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
