/*
 * Leak checks for any surface a test can see: results, errors, logs, files. A value counts as
 * leaked when it, or any spelling the redactor registers for it, appears. Failure messages name
 * the value by position and the spelling by its form name, never the secret itself, so a failing
 * test does not print what it was guarding.
 */
import { getEncodedForms, type EncodedForm } from '../../src/redact';

const MIN_LENGTH = 8;

export interface Leak {
  value: string;
  /** Name of the spelling that appeared, e.g. `value`, `base64-stable@1`, `shell-printf-q`. */
  form: string;
}

/** The value and every spelling the redactor registers for it (with its form name). */
export function namedEncodingsOf(value: string): EncodedForm[] {
  return getEncodedForms(value, { minLength: MIN_LENGTH, encodings: true });
}

/** The value and every encoded form the redactor registers (derived forms shorter than 8 dropped). */
export function encodingsOf(value: string): string[] {
  return namedEncodingsOf(value).map(({ text }) => text);
}

/** Which values appear in `surface`, and in which spelling. */
export function findLeaks(surface: string | Buffer, values: string[]): Leak[] {
  const bytes = typeof surface === 'string' ? Buffer.from(surface, 'utf8') : surface;
  const leaks: Leak[] = [];
  for (const value of values) {
    for (const { form, text } of namedEncodingsOf(value)) {
      if (bytes.includes(Buffer.from(text, 'utf8'))) leaks.push({ value, form });
    }
  }
  return leaks;
}

/**
 * Throws when any value leaks into `surface`: a string, a Buffer, or any object (checked as its
 * JSON text and leaf by leaf, keys and Error messages included, since JSON drops some of those).
 */
export function expectNoLeak(surface: unknown, values: string[]): void {
  const problems: string[] = [];
  for (const { path, content } of collectSurfaces(surface)) {
    for (const leak of findLeaks(content, values)) {
      const index = values.indexOf(leak.value);
      problems.push(`values[${index}] (${leak.value.length} characters) appeared as \`${leak.form}\` at ${path}`);
    }
  }
  if (problems.length > 0) {
    const error = new Error(`Expected no secret value in the surface, but:\n  ${[...new Set(problems)].join('\n  ')}`);
    // Point jest at the caller's line, not at this helper.
    Error.captureStackTrace?.(error, expectNoLeak);
    throw error;
  }
}

interface Surface {
  path: string;
  content: string | Buffer;
}

function collectSurfaces(root: unknown): Surface[] {
  const surfaces: Surface[] = [];
  const seen = new WeakSet<object>();
  const visit = (node: unknown, path: string): void => {
    if (typeof node === 'string') {
      surfaces.push({ path, content: node });
      return;
    }
    if (node === null || typeof node !== 'object') return;
    if (ArrayBuffer.isView(node)) {
      surfaces.push({ path, content: Buffer.from(node.buffer, node.byteOffset, node.byteLength) });
      return;
    }
    if (seen.has(node)) return;
    seen.add(node);
    if (node instanceof Error) {
      visit(node.message, `${path}.message`);
      visit(node.stack, `${path}.stack`);
      if ('cause' in node) visit(node.cause, `${path}.cause`);
    }
    if (node instanceof Map) {
      for (const [key, value] of node) {
        visit(key, `${path}<key>`);
        visit(value, `${path}.get(…)`);
      }
      return;
    }
    if (node instanceof Set) {
      for (const value of node) visit(value, `${path}<item>`);
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      visit(key, `${path}<key>`);
      visit(value, Array.isArray(node) ? `${path}[${key}]` : `${path}.${key}`);
    }
  };
  visit(root, '$');
  if (typeof root === 'object' && root !== null && !ArrayBuffer.isView(root)) {
    try {
      const json = JSON.stringify(root);
      if (json !== undefined) surfaces.push({ path: '$ (as JSON)', content: json });
    } catch {
      // Cycles and BigInts cannot be JSON; the leaves were checked above.
    }
  }
  return surfaces;
}
