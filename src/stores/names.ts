/*
 * Names and ids of stored secrets follow the reference grammar, so that anything stored can
 * be written as a token: 1 to 128 characters of A-Z a-z 0-9 . _ - /, first a letter or digit.
 * Names beginning with `_` are therefore free for execgate's own keyring accounts.
 */
import { ExecgateError, describeValue } from '../errors';
/** The kinds of entry a store holds; the same names as reference kinds (`<<secret:…>>`, `<<decrypt:…>>`). */
export type RefKind = 'secret' | 'decrypt';

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._\-/]{0,127}$/;

export function isValidSecretName(name: unknown): name is string {
  return typeof name === 'string' && NAME_PATTERN.test(name);
}

export function validateSecretName(name: unknown, what = 'secret name'): asserts name is string {
  if (!isValidSecretName(name)) {
    throw new ExecgateError(
      'EXECGATE_ERR_SECRET_NAME_INVALID',
      `Expected the ${what} to be 1 to 128 characters of A-Z a-z 0-9 . _ - / starting with a letter or digit, got ${describeValue(name)}.`,
    );
  }
}

export function validateKind(kind: unknown): asserts kind is RefKind {
  if (kind !== 'secret' && kind !== 'decrypt') {
    throw new ExecgateError(
      'EXECGATE_ERR_SECRET_NAME_INVALID',
      `Expected the entry kind to be \`secret\` or \`decrypt\`, got ${describeValue(kind)}.`,
    );
  }
}

/** `<<kind:name>>`: how errors and listings name an entry. */
export function formatEntryRef(kind: RefKind, name: string): string {
  return `<<${kind}:${name}>>`;
}

/** Largest value accepted, in UTF-8 bytes. A value has to fit in a child's environment. */
export const MAX_VALUE_BYTES = 1024 * 1024;

/** Values end up in a child's environment: non-empty, no NUL, bounded. */
export function validateSecretValue(value: unknown, ref: string): asserts value is string {
  let problem: string | undefined;
  if (typeof value !== 'string') problem = `got a value of type ${typeof value}`;
  else if (value === '') problem = 'got an empty value';
  else if (value.includes('\0')) problem = 'it contains a NUL byte, which no environment variable can hold';
  else if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) problem = `it is longer than ${MAX_VALUE_BYTES} bytes`;
  if (problem !== undefined) {
    throw new ExecgateError(
      'EXECGATE_ERR_SECRET_VALUE_INVALID',
      `Expected the value for ${ref} to be a non-empty string; ${problem}.`,
      { reference: ref },
    );
  }
}

const MAX_LABEL_LENGTH = 200;

/** Labels are shown in listings: one line of printable text. */
export function validateLabel(label: unknown): asserts label is string | undefined {
  if (label === undefined) return;
  if (typeof label !== 'string' || label.length > MAX_LABEL_LENGTH || /[\u0000-\u001f\u007f]/.test(label)) {
    throw new ExecgateError(
      'EXECGATE_ERR_SECRET_NAME_INVALID',
      `Expected the label to be at most ${MAX_LABEL_LENGTH} characters of printable text, got ${describeValue(label)}.`,
    );
  }
}
