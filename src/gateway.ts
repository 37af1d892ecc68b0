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
  readonly #shutdown = new AbortController();
  readonly #running = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: GatewayOptions = {}) {
    this.#env = options.env ?? process.env;
    this.home = options.home ?? getHome(this.#env);
    this.#cwd = options.cwd ?? process.cwd();
    this.#shell = options.shell ?? getDefaultShell();
    this.policy = options.policy ?? DEFAULT_POLICY;
    const sources: RefSource[] = [];
    if (options.envSource !== false) sources.push(createEnvSource(this.#env));
    sources.push(...(options.sources ?? []));
    this.refs = new RefStore(sources);
    this.#audit = createAudit(options.audit, this.home);
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
      this.#audit.write('exec.rejected', {
        runId,
        actor: typeof request?.actor === 'string' ? request.actor : 'library',
        command: typeof request?.command === 'string' ? request.command : undefined,
        code: isExecgateError(error) ? error.code : 'UNEXPECTED',
        reason: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
    this.#audit.write('exec.started', {
      runId,
      actor: plan.request.actor,
      command: plan.displayCommand,
      cwd: plan.cwd,
      mode: plan.request.mode,
      refs: plan.refs,
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

  /** Stop accepting requests, stop every run in progress, and close the audit log. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#shutdown.abort();
    await Promise.allSettled([...this.#running]);
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
