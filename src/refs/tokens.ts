/*
 * Reference tokens: `<<secret:NAME>>` / `<<decrypt:ID>>`, and the `{{kind:id}}` alias.
 *
 * A token is exactly a match of `<<(secret|decrypt):ID>>` (or the braced alias); anything else is
 * plain text and passes through unchanged. Matching is left to right and non-overlapping, so in
 * `<<<<secret:x>>` the token is the last `<<secret:x>>`: the extra `<<` in front is plain text (in a
 * shell it is heredoc or here-string syntax, which substitution then deals with).
 */

import { ExecgateError, describeValue } from '../errors';
import type { RefKind, RefToken } from './types';

const ID_SOURCE = '[A-Za-z0-9][A-Za-z0-9._/-]{0,127}';

/** A reference name or id: 1 to 128 characters from `A-Z a-z 0-9 . _ - /`, starting with a letter or digit. */
export const REF_ID_PATTERN = new RegExp(`^${ID_SOURCE}$`);

// One pass finds both spellings, so overlapping candidates resolve by position, never by spelling.
const TOKEN_SOURCE = `<<(secret|decrypt):(${ID_SOURCE})>>|\\{\\{(secret|decrypt):(${ID_SOURCE})\\}\\}`;
const CANONICAL_ONLY_SOURCE = `<<(secret|decrypt):(${ID_SOURCE})>>`;

/** True when `raw` is one whole token in either spelling (used to check tokens handed back by callers). */
export function isTokenText(raw: string): boolean {
  return new RegExp(`^(?:${TOKEN_SOURCE})$`).test(raw);
}

/**
 * Whether `id` is a valid reference name.
 */
export function isValidRefId(id: string): boolean {
  return typeof id === 'string' && REF_ID_PATTERN.test(id);
}

export interface ScanOptions {
  /** Also accept the `{{kind:id}}` spelling. Default: true. */
  readonly alias?: boolean;
}

/**
 * Finds the reference tokens (`<<secret:NAME>>`, `<<decrypt:ID>>`, and the `{{...}}` spelling
 * unless told not to) in a command, with their positions.
 */
export function scanTokens(command: string, options: ScanOptions = {}): RefToken[] {
  if (typeof command !== 'string') {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_COMMAND',
      `Expected the command to scan for references to be a string, got ${describeValue(command)}.`,
    );
  }
  const alias = normalizeAliasOption(options);
  // A fresh RegExp per call: a shared global regex carries lastIndex between callers.
  const pattern = new RegExp(alias ? TOKEN_SOURCE : CANONICAL_ONLY_SOURCE, 'g');
  const tokens: RefToken[] = [];
  for (const match of command.matchAll(pattern)) {
    const isAlias = match[1] === undefined;
    const kind = (isAlias ? match[3] : match[1]) as RefKind;
    const id = (isAlias ? match[4] : match[2]);
    const start = match.index;
    tokens.push(
      Object.freeze({ kind, id, raw: match[0], start, end: start + match[0].length, alias: isAlias }),
    );
  }
  return tokens;
}

function normalizeAliasOption(options: ScanOptions): boolean {
  if (options === null || typeof options !== 'object') {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_OPTION',
      `Expected the scan options to be an object, got ${describeValue(options)}.`,
    );
  }
  const { alias } = options;
  if (alias === undefined) return true;
  if (typeof alias !== 'boolean') {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_OPTION',
      `Expected the \`alias\` option to be a boolean, got ${describeValue(alias)}.`,
    );
  }
  return alias;
}
