/*
 * Streaming, chunk-safe, multi-pattern redaction of secret values (and their encoded forms) from
 * bytes and text.
 */
export { Redactor, type AddOptions, type RedactorOptions } from './redactor';
export { MaskMemory } from './memory';
export type { RedactStream } from './stream';
export { getEncodedForms, quoteLikePrintf, type EncodedForm, type EncodedFormsOptions } from './encoders';
export { maskStrings } from './deep';
