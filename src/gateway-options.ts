/*
 * What a host may configure on a Gateway, and per call. Kept beside gateway.ts so that the
 * wiring there stays readable; every option is documented here once.
 */
import type pino from 'pino';
import type { AuditOption } from './audit/from-policy';
import type { EgressProxyOptions } from './egress/proxy';
import type { SpawnerKind } from './process/spawner';
import type { OutputListener } from './run/sync';
import type { EffectivePolicy } from './policy/effective';
import type { WatchPolicyOptions } from './policy/reload';
import type { RefSource } from './refs/types';

/**
 * Options of {@link createGateway}: the policy, the state directory, secret sources, the audit log,
 * logging and egress settings.
 */
export interface GatewayOptions {
  /** State directory; default `$EXECGATE_HOME` or `~/.execgate`. */
  home?: string;
  /** The environment children inherit (sanitized) and the env source reads; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Default working directory; default process.cwd(). */
  cwd?: string;
  /** Default shell; default /bin/bash, else /bin/sh. */
  shell?: string;
  /** Effective policy; default the embedded default policy. */
  policy?: EffectivePolicy;
  /**
   * A policy file (YAML or JSON, see policies/README.md; relative to `cwd`), loaded and validated
   * at construction. An invalid file throws (the gateway does not start); `reloadPolicy()` reads
   * it again.
   */
  policyFile?: string;
  /** Reload `policyFile` when it (or a file it extends) changes, and on SIGHUP. Default off. */
  watchPolicy?: boolean | WatchPolicyOptions;
  /**
   * Audit log: `false` turns it off; default `<home>/audit.log`, sealed with the audit key
   * (`EXECGATE_AUDIT_KEY`, else `<home>/audit.key`). See AuditConfig for destinations, rotation
   * and fsync.
   */
  audit?: AuditOption;
  /** Extra secret sources, consulted after the built-in ones. */
  sources?: readonly RefSource[];
  /** Include the `EXECGATE_SECRET_<NAME>` environment source (default true). */
  envSource?: boolean;
  /**
   * The OS keyring source (service `execgate`): `false` leaves it out. Default: included unless
   * `EXECGATE_KEYRING=off` is in the environment.
   */
  keyring?: false | { service?: string };
  /** The encrypted vault under `home`: `false` leaves it out. Default: included. */
  vault?: false;
  /** A pino logger (or anything with pino's `warn(obj, msg)`) for operational messages; default: Node process warnings. */
  logger?: GatewayLogger;
  /** On close(), `kill` running background processes or `keep` them; default from the policy (`kill`). */
  backgroundOnClose?: 'kill' | 'keep';
  /**
   * `in-process` (default): background runs live in this process. `detached`: each gets a
   * supervisor process and outlives this one (what the CLI uses).
   */
  backgroundLauncher?: 'in-process' | 'detached';
  /**
   * How sync runs are spawned. `direct`: child_process.spawn in this process, a fork(2) whose
   * cost grows with this process's memory (20 to 30 ms per GiB, blocking the event loop).
   * `helper`: from a small long-lived helper process, started on first use and ended by
   * close(). `auto` (default): direct while this process's resident set is under 128 MiB, the
   * helper from then on. `EXECGATE_SPAWNER` in the gateway's environment sets the default.
   * PTY and background runs spawn directly.
   */
  spawner?: SpawnerKind;
  /**
   * Warm sandboxes kept ready for sandboxed sync runs (0 to 4; default 1): after such a run
   * ends, the same sandbox is set up again ahead of need, and the next run with the same sandbox
   * (same policy, working directory and paths) starts in it, which takes the namespace set-up
   * off its path. Each serves one run. 0 turns it off (the CLI's one-shot `run` does). See
   * process/bwrap/warm.ts and SECURITY.md.
   */
  warmSandboxes?: number;
  /**
   * The egress proxy of sandboxed runs (`sandbox.network: open | allowlist`): how names are
   * resolved and dialled, extra CAs trusted upstream, where its per-run sockets go. Default: the
   * system resolver, Node's CA roots, the system temporary directory. Tests map names to servers
   * on loopback here.
   */
  egress?: Pick<EgressProxyOptions, 'resolver' | 'dial' | 'upstreamCa' | 'runtimeDir' | 'connectTimeout' | 'connectHandoff'>;
}

/**
 * Per-call options of `gateway.exec` that are not part of the request: a listener for redacted output as it arrives, and an abort signal.
 */
export interface ExecOptions {
  /** Receives redacted output as it arrives. */
  onOutput?: OutputListener;
  /** Aborting stops a sync or PTY run the way a timeout does (e.g. a client cancelled the call). */
  signal?: AbortSignal;
}

/** What the gateway needs of a logger: pino's `warn(obj, msg)`. */
export type GatewayLogger = Pick<pino.Logger, 'warn'> | { warn(obj: object, msg: string): void };
