/*
 * The effective settings the one exec path reads. A policy file (or the embedded default) is
 * validated and merged into this shape once, then frozen: nothing on the hot path re-reads or
 * re-validates configuration.
 *
 * Only the shapes that differ from the file's are written here: every default filled in,
 * durations and sizes in numbers, `exec.modes.*.timeout` become `defaultTimeout`, rules' matches
 * and host patterns compiled, rules' ids assigned, `~` expanded. The file as read has its types
 * from the schema's one definition (schema-def.ts: PolicyDocument and its parts), and compile.ts
 * is where the two meet, so a value the schema gains and these do not take fails to compile.
 * These stay plain interfaces because they are public: a consumer's declarations must not need
 * TypeBox.
 */

import { OPEN_NETWORK, type NetworkPolicy, type SecretBinding } from '../egress/rules';
import type { CommandMatch } from './match';
import type { ProcessSourceSpec } from '../refs/sources/process';
import type { AuditSettings } from '../audit/from-policy';

/**
 * How a command runs: `sync` (pipes, wait for the end), `pty` (a terminal) or `background`
 * (detached, output to a file).
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

/** One ordered command rule (`rules.list`). */
export interface CommandRule {
  /** Shown in decisions and audit records: the author's id, or `FILE:rules.list[N]`. */
  readonly id: string;
  readonly action: 'allow' | 'deny';
  readonly match: CommandMatch;
  readonly reason?: string;
}

/** Which commands may use some references (`secrets.restrict`). */
export interface SecretRestriction {
  readonly id: string;
  /** Reference patterns (`secret:github-token`, `secret:ci/*`). */
  readonly refs: readonly string[];
  readonly match: CommandMatch;
  readonly reason?: string;
}

/** The OS sandbox of every run (src/sandbox). */
export interface SandboxSettings {
  /** `required`: refuse a run that cannot be sandboxed. `auto`: sandbox where possible. `off`: never. */
  readonly mode: 'required' | 'auto' | 'off';
  /** The bubblewrap executable; unset = the first `bwrap` in the standard system directories. */
  readonly helper?: string;
  /**
   * The run's network namespace. `none`: private, loopback only, one per gateway; what leaves it
   * goes through the egress proxy when `EffectivePolicy.network` is `open` or `allowlist` (every
   * policy file spelling gives this). `open`: the host's network, for programmatic policies only
   * (no policy file can ask for it): loopback services and abstract sockets are reachable.
   */
  readonly network: 'none' | 'open';
  readonly filesystem: {
    /** Hidden inside (`~/` kept; expanded against the gateway's HOME when a run is planned). */
    readonly hidden: readonly string[];
    /** Writable besides the working directory roots and the private /tmp. */
    readonly writable: readonly string[];
    /** Read-only even inside a writable root. */
    readonly readOnly: readonly string[];
  };
}

/*
 * Credential files and directories of common tools, hidden in every sandbox whatever the policy
 * says (a policy's `sandbox.filesystem.hidden` adds to this list).
 */
export const DEFAULT_HIDDEN_PATHS: readonly string[] = Object.freeze([
  '~/.ssh', '~/.aws', '~/.gnupg', '~/.config/gcloud', '~/.kube', '~/.docker/config.json', '~/.netrc',
  '~/.git-credentials', '~/.config/git/credentials', '~/.npmrc', '~/.yarnrc.yml', '~/.pypirc', '~/.azure',
  '~/.config/gh', '~/.config/hub', '~/.terraform.d/credentials.tfrc.json', '~/.vault-token', '~/.password-store',
  '~/.local/share/keyrings', '~/.pgpass', '~/.my.cnf', '~/.cargo/credentials.toml', '~/.cargo/credentials',
  '~/.gem/credentials', '~/.config/execgate', '~/.execgate',
  // Container engines' control sockets: whoever reaches one runs a container as host root.
  '/run/docker.sock', '/var/run/docker.sock', '/run/containerd/containerd.sock', '/run/podman/podman.sock',
  '/run/crio/crio.sock', '/run/buildkit/buildkitd.sock',
]);

export type UnknownRefPolicy = 'literal' | 'warn' | 'deny';

/**
 * A policy as the gateway applies it: every key filled in, defaults included. {@link
 * DEFAULT_POLICY} is the embedded one; {@link loadPolicyFile} builds one from YAML.
 */
export interface EffectivePolicy {
  /** Where the policy came from: a file path, or `<embedded default>`. */
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
    /** When set, the only variables a request's `env` may set (`*` suffix: a prefix). */
    readonly requestable?: readonly string[];
  };
  /** Background runs (the runtime limit is `modes.background.defaultTimeout` / `maxTimeout`). */
  readonly background: {
    /** Running background processes per gateway; one more is refused. */
    readonly maxConcurrent: number;
    /** Cap of each background output file, in bytes (cut with a notice). */
    readonly maxFileBytes: number;
    /** Recent output kept in memory per process, in bytes. */
    readonly ringBytes: number;
    /** What `gateway.close()` does with running background processes. */
    readonly onClose: 'kill' | 'keep';
  };
  readonly secrets: {
    /** Accept the `{{kind:id}}` alias spelling. */
    readonly alias: boolean;
    /** Shortest resolved value that may be used; shorter ones fail closed. */
    readonly minLength: number;
    /** Reference patterns that may be used at all (`secret:*`, `decrypt:*`, `secret:github-token`). */
    readonly allow: readonly string[];
    /** Per-reference command restrictions; every one that applies to a reference must be met. */
    readonly restrict: readonly SecretRestriction[];
    /** A reference no source knows: pass it on as text, do that and warn, or refuse the run. */
    readonly unknown: UnknownRefPolicy;
    /** Secrets bound to the hosts they are for (`secrets.bind`), validated. */
    readonly bind: readonly SecretBinding[];
    /** Secret managers asked through a program (`secrets.sources`), in the order they are tried. */
    readonly sources: readonly ProcessSourceSpec[];
  };
  /** `sandbox.network`: what a sandboxed run may reach through the egress proxy. */
  readonly network: NetworkPolicy;
  /** Working directories: a request's cwd (symlinks resolved) must be inside a root; empty = anywhere. */
  readonly cwd: {
    readonly roots: readonly string[];
  };
  /** Command rules, first match wins; `default` decides when none matches. */
  readonly rules: {
    readonly default: 'allow' | 'deny';
    readonly reason?: string;
    /** `deny`: a text the shell reader marks uncertain is refused before any rule is tried. */
    readonly uncertain?: 'allow' | 'deny';
    readonly list: readonly CommandRule[];
  };
  /** The audit log. `enabled` and `path` are read when a gateway starts. */
  readonly audit: AuditSettings & {
    /** Record keyed fingerprints of resolved values. */
    readonly fingerprints: boolean;
    /** Record the names of variables removed or withheld. */
    readonly env: boolean;
  };
  readonly sandbox: SandboxSettings;
}

/** Freezes plain objects and arrays; compiled patterns (RegExp, RE2) keep their own state. */
function deepFreeze<T>(value: T): T {
  const prototype = value && typeof value === 'object' ? (Object.getPrototypeOf(value) as unknown) : undefined;
  const plain = prototype === Object.prototype || prototype === Array.prototype || prototype === null;
  if (plain && !Object.isFrozen(value)) {
    for (const key of Object.keys(value as object)) deepFreeze((value as Record<string, unknown>)[key]);
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
  background: { maxConcurrent: 64, maxFileBytes: 256 * 1024 * 1024, ringBytes: 64 * 1024, onClose: 'kill' },
  secrets: { alias: true, minLength: 8, allow: ['secret:*', 'decrypt:*'], restrict: [], unknown: 'literal', bind: [], sources: [] },
  // The same as `sandbox.network: open`: every public host, through the egress proxy.
  network: OPEN_NETWORK,
  cwd: { roots: [] },
  rules: { default: 'allow', uncertain: 'allow', list: [] },
  audit: { enabled: true, fingerprints: true, env: true },
  sandbox: { mode: 'auto', network: 'none', filesystem: { hidden: [...DEFAULT_HIDDEN_PATHS], writable: [], readOnly: [] } },
});

export { deepFreeze };
