/*
 * What a host may configure on a Gateway, and per call. Kept beside gateway.ts so that the
 * wiring there stays readable; every option is documented here once.
 */
import type pino from 'pino';
import type { AuditOption } from './audit/from-policy';
import type { SpawnerKind } from './exec/spawner';
import type { OutputListener } from './exec/sync';
import type { EffectivePolicy } from './policy/effective';
import type { WatchPolicyOptions } from './policy/reload';
import type { RefSource } from './refs/types';

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
}

export interface ExecOptions {
  /** Receives redacted output as it arrives. */
  onOutput?: OutputListener;
  /** Aborting stops a sync or PTY run the way a timeout does (e.g. a client cancelled the call). */
  signal?: AbortSignal;
}

/** What the gateway needs of a logger: pino's `warn(obj, msg)`. */
export type GatewayLogger = Pick<pino.Logger, 'warn'> | { warn(obj: object, msg: string): void };
