/*
 * Every spelling under which a value is registered. The value itself is always kept, whatever
 * its length; derived spellings (encodings, single lines of a multi-line value) shorter than
 * `minLength` are dropped, because masking short strings destroys output and reveals which
 * strings are secret. Spellings equal to the value or to an earlier spelling are dropped.
 */
import { getBase64Forms, getHexForms } from './binary';
import { getJsonForms, getMarkupForms, getQuoteForms, getTerminalForms, getUriForms } from './escapes';
import { getShellForms } from './shell';
import { stripAnsi } from '../ansi';
import type { EncodedForm } from './types';

export type { EncodedForm } from './types';
export { quoteLikePrintf } from './shell';

export interface EncodedFormsOptions {
  readonly minLength: number;
  readonly encodings: boolean;
}

export function getEncodedForms(value: string, options: EncodedFormsOptions): EncodedForm[] {
  if (value.length === 0) return [];
  const candidates: EncodedForm[] = [{ form: 'value', text: value }, ...getLineForms(value)];
  // What a program gets: a lone surrogate reaches its environment as U+FFFD (the UTF-8 text), so
  // the forms it writes are of that text.
  const received = Buffer.from(value, 'utf8').toString('utf8');
  if (received !== value) candidates.push({ form: 'value-utf8', text: received });
  if (options.encodings) {
    candidates.push(...getTransformedForms(received));
    // A PTY turns each "\n" into "\r\n" (onlcr; a "\r\n" becomes "\r\r\n"), so every form
    // holding a line break (the value, and escapers that leave it as is: HTML, shell quoting)
    // arrives spelled that way there too.
    for (const candidate of [...candidates]) {
      if (candidate.text.includes('\n')) candidates.push({ ...candidate, form: `${candidate.form === 'value' ? 'pty' : candidate.form}-crlf`, text: candidate.text.replace(/\n/g, '\r\n') });
    }
    // With `ansi: 'strip'` a PTY's output is masked as the stripper leaves it (escape sequences
    // gone, "\r\n" made "\n"): every form that holds an ESC or a CR, as that.
    for (const candidate of [...candidates]) {
      if (/[\x1b\r]/.test(candidate.text)) candidates.push({ ...candidate, form: `${candidate.form}-ansi-stripped`, text: stripAnsi(candidate.text) });
    }
  }
  // One form per spelling; it wraps when any form with that spelling does.
  const kept = new Map<string, EncodedForm>();
  for (const candidate of candidates) {
    // Measured in bytes, as output is (`ééééééé` is 14).
    if (candidate.form !== 'value' && Buffer.byteLength(candidate.text) < options.minLength) continue;
    const first = kept.get(candidate.text);
    if (first === undefined) kept.set(candidate.text, candidate);
    else if (candidate.wraps && !first.wraps) kept.set(candidate.text, { ...first, wraps: true });
  }
  return [...kept.values()];
}

function getLineForms(value: string): EncodedForm[] {
  if (!value.includes('\n')) return [];
  return value.split('\n').map((line, index) => ({ form: `line[${index}]`, text: line.replace(/^\r+|\r+$/g, '') }));
}

function getTransformedForms(value: string): EncodedForm[] {
  const bytes = Buffer.from(value, 'utf8');
  return [
    ...getBase64Forms(bytes),
    ...getHexForms(bytes),
    ...getUriForms(value),
    ...getJsonForms(value),
    ...getShellForms(value),
    ...getQuoteForms(value),
    ...getMarkupForms(value),
    ...getTerminalForms(value),
  ];
}
