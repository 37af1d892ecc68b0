/**
 * `execgate/parts`: the pieces a gateway is built from, for those who assemble their own: the
 * reference store and its token scanner, the secret value wrapper, the streaming redactor, the
 * environment sanitizer and the ANSI stripper the PTY results use.
 *
 * @packageDocumentation
 * @module execgate/parts
 */
export { RefStore } from './refs/store';
export type { ResolvedRef, Resolution } from './refs/store';
export { SecretValue } from './refs/secret-value';
export type { LookupContext, RefKind, RefSource, RefToken, SourceAnswer } from './refs/types';
export { scanTokens, isValidRefId } from './refs/tokens';
export { Redactor } from './redact';
export { sanitizeEnv } from './env';
export { stripAnsi } from './redact/ansi';
