/*
 * Types shared by the token scanner, the RefStore and every secret source.
 *
 * A source answers one question: "do you hold a value for this reference?". It answers
 * `{found: false}` when it simply does not know the name (resolution goes on to the next
 * source, and an unknown token stays literal in the command). It throws when it cannot answer
 * at all (keyring locked, vault key wrong, vault corrupt): the request then fails closed.
 */

/**
 * The two kinds of reference token: `secret` (`<<secret:NAME>>`, from the keyring, the vault or a
 * source of your own) and `decrypt` (`<<decrypt:ID>>`, a vault ciphertext).
 */
export type RefKind = 'secret' | 'decrypt';

export const REF_KINDS: readonly RefKind[] = Object.freeze(['secret', 'decrypt']);

/** One reference token found in a command. Offsets are UTF-16 indexes into the command. */
export interface RefToken {
  readonly kind: RefKind;
  readonly id: string;
  /** The token exactly as written, e.g. `<<secret:github-token>>` or `{{decrypt:7f3a}}`. */
  readonly raw: string;
  readonly start: number;
  /** Index one past the token's last character. */
  readonly end: number;
  /** True for the `{{kind:id}}` spelling. */
  readonly alias: boolean;
}

/**
 * A source's answer for one reference: not found (resolution goes on to the next source), or the
 * value.
 */
export type SourceAnswer = { readonly found: false } | {
  readonly found: true;
  readonly value: string;
  /** The name to report as the answering source, when it is not the RefSource's own (a policy's `secrets.sources` entry). */
  readonly source?: string;
};

/** What a lookup is for: the run that will use the value, when there is one. */
export interface LookupContext {
  readonly runId?: string;
  /**
   * Whether that run (or any run like it) can write `directory`: a source that starts a program
   * refuses one found there, since an earlier run could have put it there.
   */
  readonly isWritable?: (directory: string) => boolean;
}

/**
 * A secret source of your own (`GatewayOptions.sources`): answers whether it holds a value for a
 * reference; throws when it cannot answer at all, which fails the request closed.
 */
export interface RefSource {
  /** Short stable name used in results and audit records: `memory`, `env`, `keyring`, `vault`, or a host's own. */
  readonly name: string;
  /** The kinds this source can answer; the store asks it about no other kind. */
  readonly kinds: readonly RefKind[];
  /**
   * Look a reference up. Return `{found: false}` for a name this source does not hold. Throw
   * (preferably an ExecgateError with code EXECGATE_ERR_REF_SOURCE_FAILED) when the source
   * cannot answer; the error message must name the reference, never a value.
   */
  lookup(kind: RefKind, id: string, context?: LookupContext): Promise<SourceAnswer> | SourceAnswer;
  /**
   * The names this source holds for `kind`, for "did you mean" after a reference no source knew.
   * Names only, never values; optional. A source that cannot list returns no names (or throws:
   * the listing is a convenience, and its failure is ignored).
   */
  list?(kind: RefKind): Promise<readonly string[]> | readonly string[];
}
