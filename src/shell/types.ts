/*
 * The one analysis of a shell text: what the policy decides on and what substitution places
 * reference tokens by. It is made once per request, before any source is asked for a value.
 */

/** Contexts where a token can be rewritten into an expansion. */
export type ExpansionContext = 'unquoted' | 'double-quoted' | 'single-quoted' | 'heredoc' | 'parameter-word';

/** Contexts where no rewrite is possible or safe. */
export type RefusedContext =
  | 'evaluated' | 'shell-script' | 'variable-name' | 'remote-command' | 'arithmetic' | 'quoted-heredoc' | 'heredoc-delimiter' | 'ansi-c-string'
  | 'locale-string' | 'conditional-arithmetic' | 'parameter-name' | 'escaped' | 'after-dollar' | 'value-evaluated' | 'uncertain';

export type Placement =
  | { readonly kind: 'expand'; readonly context: ExpansionContext }
  | { readonly kind: 'literal'; readonly context: 'comment' }
  | { readonly kind: 'refuse'; readonly context: RefusedContext; readonly reason?: string };

export interface Word {
  /** The word after quote removal when it is static; dynamic parts show as `\0`. */
  readonly text: string;
  /** Part of the word is only known when the shell runs it (an expansion, a glob, a token). */
  readonly dynamic: boolean;
  /** Offsets in the command (for nested scripts: of the word that held the script). */
  readonly start: number;
  readonly end: number;
}

export interface SimpleCommand {
  /** The command name and its arguments (assignments and redirections left out). */
  readonly words: readonly Word[];
  /** The wrapper or code-running command this one was found inside (`sudo`, `sh -c`, `eval`). */
  readonly via?: string;
}

export interface Finding {
  readonly reason: string;
  readonly offset: number;
}

/**
 * What the reader needs of a reference token: its text and where it sits. A RefToken
 * (refs/types.ts) has this shape and more; shell/ sits below refs/ and does not import it.
 */
export interface TokenSpan {
  readonly raw: string;
  readonly start: number;
  /** Index one past the token's last character. */
  readonly end: number;
}

export interface TokenReading {
  readonly token: TokenSpan;
  readonly placement: Placement;
}

/** A place where the text sets, exports or unsets a variable. */
export interface VariableSet {
  /** The variable's name; null when it is known only at run time (any variable could be set). */
  readonly name: string | null;
  readonly offset: number;
  /** How: `assignment` (`NAME=value`, alone or before a command), `env`, `export`, `declare`, `read`, `for`, ... */
  readonly how: string;
}

export interface ShellAnalysis {
  readonly command: string;
  /** Every simple command found: nested in substitutions, scripts of `sh -c`/`eval`, and behind wrappers. */
  readonly commands: readonly SimpleCommand[];
  /** One per token given, in the same order. */
  readonly tokens: readonly TokenReading[];
  /** What could not be read with confidence; allow rules and restrictions fail closed on any. */
  readonly uncertain: readonly Finding[];
  /** Places where bash evaluates a variable's value as code; a token anywhere is then refused. */
  readonly sinks: readonly Finding[];
  /** Every variable the text sets, exports or unsets, by any means the reader knows. */
  readonly variables: readonly VariableSet[];
}
