/*
 * The gateway: the object a host creates once and sends every request through. It owns the
 * RefStore, the effective policy, the audit log, and every run it started, so that close()
 * can stop them all.
 */
import { join } from 'node:path';
import os from 'node:os';
import type pino from 'pino';
import { AuditLog, NULL_AUDIT, type AuditSink } from './audit/log';
import { ExecgateError, isExecgateError } from './errors';
import { getDefaultShell, type ExecRequest } from './exec/options';
import { createRunId, preparePlan, type SpawnPlan } from './exec/prepare';
import type { ExecResult } from './exec/result';
import { runSync, type OutputListener } from './exec/sync';
import { getHome } from './home';
import { DEFAULT_POLICY, type EffectivePolicy, type ExecMode } from './policy/effective';
import { createEnvSource } from './refs/sources/env';
import { createKeyringSource } from './refs/sources/keyring';
import { createVaultSource } from './refs/sources/vault';
import { isKeyringDisabled } from './vault/os-keyring';
import { RefStore } from './refs/store';
import type { RefSource } from './refs/types';

const SUPPORTED_MODES: ReadonlySet<ExecMode> = new Set<ExecMode>(['sync']);

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
  /** Audit log: `false` turns it off; default `<home>/audit.log`. */
  audit?: false | { path?: string } | AuditSink;
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
  /** A pino logger for operational messages; default silent. */
  logger?: pino.Logger;
}

export interface ExecOptions {
  /** Receives redacted output as it arrives. */
  onOutput?: OutputListener;
}

export class Gateway {
  readonly refs: RefStore;
  readonly home: string;
  readonly policy: EffectivePolicy;
  readonly #env: NodeJS.ProcessEnv;
  readonly #cwd: string;
  readonly #shell: string;
  readonly #audit: AuditSink;
  readonly #logger: pino.Logger | undefined;
  readonly #shutdown = new AbortController();
  readonly #running = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: GatewayOptions = {}) {
    this.#env = options.env ?? process.env;
    this.home = options.home ?? getHome(this.#env);
    this.#cwd = options.cwd ?? process.cwd();
    this.#shell = options.shell ?? getDefaultShell();
    this.policy = options.policy ?? DEFAULT_POLICY;
    this.#logger = options.logger;
    const sources: RefSource[] = [];
    if (options.envSource !== false) sources.push(createEnvSource(this.#env));
    const keyringEnabled = options.keyring !== false && !isKeyringDisabled(this.#env);
    if (keyringEnabled) {
      const service = options.keyring ? options.keyring.service : undefined;
      sources.push(createKeyringSource({ service, logger: { warn: (obj, msg) => this.#warn(obj, msg) } }));
    }
    if (options.vault !== false) {
      sources.push(createVaultSource({ home: this.home, env: this.#env, keyring: keyringEnabled ? (options.keyring || {}) : false }));
    }
    sources.push(...(options.sources ?? []));
    this.refs = new RefStore(sources);
    this.#audit = createAudit(options.audit, this.home);
    this.#audit.write('gateway.started', { pid: process.pid, policy: this.policy.source, sources: this.refs.sourceNames });
  }

  /** Validate, decide, resolve, spawn, and return the redacted result. */
  async exec(request: ExecRequest, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.#closed) {
      throw new ExecgateError('EXECGATE_ERR_GATEWAY_CLOSED', 'The gateway is closed; create a new one to run commands.');
    }
    const runId = createRunId();
    let plan: SpawnPlan;
    try {
      plan = await preparePlan(
        {
          refs: this.refs,
          policy: this.policy,
          env: this.#env,
          cwd: this.#cwd,
          shell: this.#shell,
          supportedModes: SUPPORTED_MODES,
          fingerprint: this.#audit.fingerprint?.bind(this.#audit),
          onNormalized: (normalized) => {
            this.#audit.write('exec.request', {
              runId,
              actor: normalized.actor,
              command: normalized.command,
              cwd: normalized.cwd,
              mode: normalized.mode,
              timeout: normalized.timeout,
            });
          },
        },
        request,
        runId,
      );
    } catch (error) {
      const denied = isExecgateError(error) && error.code === 'EXECGATE_ERR_POLICY_DENIED';
      this.#audit.write(denied ? 'exec.denied' : 'exec.rejected', {
        runId,
        actor: typeof request?.actor === 'string' ? request.actor : 'library',
        command: typeof request?.command === 'string' ? request.command : undefined,
        code: isExecgateError(error) ? error.code : 'EXECGATE_ERR_UNEXPECTED',
        ...(denied ? { rule: (error as ExecgateError).details.rule, reason: (error as ExecgateError).details.reason } : {}),
        message: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
    this.#audit.write('exec.started', {
      runId,
      actor: plan.request.actor,
      command: plan.displayCommand,
      cwd: plan.cwd,
      mode: plan.request.mode,
      decision: plan.decision,
      refs: plan.auditRefs,
      env: plan.envReport,
    });
    const run = runSync(plan, { home: this.home, onOutput: options.onOutput, signal: this.#shutdown.signal });
    this.#running.add(run);
    try {
      const result = await run;
      this.#audit.write('exec.finished', {
        runId,
        actor: plan.request.actor,
        command: plan.displayCommand,
        exitCode: result.exitCode,
        signal: result.signal,
        timedOut: result.timedOut,
        killed: result.killed,
        durationMs: result.durationMs,
        bytes: result.bytes,
        truncated: result.truncated,
        redactions: result.redactions,
      });
      return result;
    } catch (error) {
      this.#audit.write('exec.failed', {
        runId,
        actor: plan.request.actor,
        command: plan.displayCommand,
        code: isExecgateError(error) ? error.code : 'UNEXPECTED',
        reason: plan.redactor.redactString(error instanceof Error ? error.message : String(error)).text,
      });
      throw error;
    } finally {
      this.#running.delete(run);
    }
  }

  #warn(obj: object, msg: string): void {
    if (this.#logger) this.#logger.warn(obj, msg);
    else process.emitWarning(msg, { code: 'EXECGATE_WARNING' });
  }

  /** Stop accepting requests, stop every run in progress, and close the audit log. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#shutdown.abort();
    const stopped = this.#running.size;
    await Promise.allSettled([...this.#running]);
    this.#audit.write('gateway.stopped', { pid: process.pid, runsStopped: stopped });
    this.#audit.close();
  }

  get closed(): boolean {
    return this.#closed;
  }
}

function createAudit(option: GatewayOptions['audit'], home: string): AuditSink {
  if (option === false) return NULL_AUDIT;
  if (option && typeof (option as AuditSink).write === 'function') return option as AuditSink;
  const path = (option as { path?: string } | undefined)?.path ?? join(home, 'audit.log');
  return new AuditLog({ path });
}

export function createGateway(options: GatewayOptions = {}): Gateway {
  return new Gateway(options);
}

export function getCurrentUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return String(process.getuid?.() ?? 'unknown');
  }
}
