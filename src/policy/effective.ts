/*
 * The effective settings the one exec path reads. A policy file (or the embedded default) is
 * validated and merged into this shape once, then frozen: nothing on the hot path re-reads or
 * re-validates configuration.
 */

export type ExecMode = 'sync' | 'pty' | 'background';

export const EXEC_MODES: readonly ExecMode[] = Object.freeze(['sync', 'pty', 'background']);

export interface ModeLimits {
  readonly allowed: boolean;
  /** Milliseconds applied when a request gives no timeout; 0 = none. */
  readonly defaultTimeout: number;
  /** Upper bound in milliseconds for any requested timeout; 0 = none. */
  readonly maxTimeout: number;
}

export interface EffectivePolicy {
  readonly source: string;
  readonly modes: Readonly<Record<ExecMode, ModeLimits>>;
  /** Milliseconds between SIGTERM and SIGKILL when a run is stopped. */
  readonly grace: number;
  /** After the main process exits, how long to wait for its pipes to close. */
  readonly drainTimeout: number;
  readonly output: {
    /** Bytes of each stream kept in memory (head + tail) before cutting the middle. */
    readonly maxBytes: number;
    /** Bytes of the full-output file kept on disk before it is cut with a notice. */
    readonly maxFileBytes: number;
  };
  readonly env: {
    readonly mode: 'inherit' | 'allowlist';
    readonly allowlist: readonly string[];
    readonly allowSecrets: readonly string[];
    readonly strip: readonly string[];
    readonly secretNamePatterns: readonly RegExp[];
    readonly secretValuePatterns: readonly RegExp[];
    readonly set: Readonly<Record<string, string>>;
    readonly path?: string;
  };
  readonly secrets: {
    /** Accept the `{{kind:id}}` alias spelling. */
    readonly alias: boolean;
    /** Shortest resolved value that may be used; shorter ones fail closed. */
    readonly minLength: number;
  };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !(value instanceof RegExp) && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** The embedded default: what the gateway uses when no policy file is given. */
export const DEFAULT_POLICY: EffectivePolicy = deepFreeze({
  source: '<embedded default>',
  modes: {
    sync: { allowed: true, defaultTimeout: 120_000, maxTimeout: 3_600_000 },
    pty: { allowed: true, defaultTimeout: 120_000, maxTimeout: 3_600_000 },
    background: { allowed: true, defaultTimeout: 0, maxTimeout: 0 },
  },
  grace: 5_000,
  drainTimeout: 2_000,
  output: { maxBytes: 1024 * 1024, maxFileBytes: 64 * 1024 * 1024 },
  env: {
    mode: 'inherit',
    allowlist: [],
    allowSecrets: [],
    strip: [],
    secretNamePatterns: [],
    secretValuePatterns: [],
    set: {},
  },
  secrets: { alias: true, minLength: 8 },
});

export { deepFreeze };
