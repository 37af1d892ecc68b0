/*
 * The gateway: the object a host creates once and sends every request through. It owns the
 * RefStore, the effective policy, the audit log, and every run it started, so that close()
 * can stop them all.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import os from 'node:os';
import type pino from 'pino';
import { AuditLog, NULL_AUDIT, type AuditConfig, type AuditSink } from './audit/log';
import { ExecgateError, isExecgateError } from './errors';
import { getDefaultShell, type ExecRequest } from './exec/options';
import { createRunId, preparePlan, type SpawnPlan } from './exec/prepare';
import type { ExecResult } from './exec/result';
import { runSync, type OutputListener } from './exec/sync';
import type { BackgroundManager } from './exec/background/manager';
import { createSpawner, validateSpawnerKind, type Spawner, type SpawnerKind } from './exec/spawner';
import type { BackgroundRun } from './exec/background/run';
import type { BackgroundProcess } from './exec/background/types';
import { decideRequest } from './policy/decide';
import { scanTokens } from './refs/tokens';
import { getHome } from './home';
import { DEFAULT_POLICY, type EffectivePolicy, type ExecMode } from './policy/effective';
import type { LoadedPolicy } from './policy/load';
import { validateCwdInRoots } from './policy/roots';
import { describeUnknownRefs, getUnknownRefs } from './policy/unknown-refs';
import { createEnvSource } from './refs/sources/env';
import { createKeyringSource } from './refs/sources/keyring';
import type { VaultSourceOptions } from './refs/sources/vault';
import { isKeyringDisabled } from './vault/os-keyring';
import { RefStore } from './refs/store';
import { SharedNetwork, type SandboxContext } from './sandbox';
import type { RefKind, RefSource } from './refs/types';

const SUPPORTED_MODES: ReadonlySet<ExecMode> = new Set<ExecMode>(['sync', 'pty', 'background']);

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
  audit?: false | AuditConfig | AuditSink;
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

/** What the gateway needs of a logger: pino's `warn(obj, msg)`. */
export type GatewayLogger = Pick<pino.Logger, 'warn'> | { warn(obj: object, msg: string): void };

export interface WatchPolicyOptions {
  /** Signal that triggers a reload; `false` for none. Default `SIGHUP`. */
  signal?: NodeJS.Signals | false;
  /** Quiet time after a file change before reloading (editors write in steps). Default 100 ms. */
  debounceMs?: number;
}

export interface ExecOptions {
  /** Receives redacted output as it arrives. */
  onOutput?: OutputListener;
  /** Aborting stops a sync or PTY run the way a timeout does (e.g. a client cancelled the call). */
  signal?: AbortSignal;
}

export class Gateway {
  readonly refs: RefStore;
  readonly home: string;
  /** Swapped whole by reloadPolicy(): a request reads it once, so it sees one policy throughout. */
  #policy: EffectivePolicy;
  readonly #policyFile: string | undefined;
  #policyFiles: readonly string[] = [];
  #policyDigest: string | undefined;
  #unwatchPolicy: (() => void) | undefined;
  readonly #env: NodeJS.ProcessEnv;
  readonly #cwd: string;
  readonly #shell: string;
  readonly #audit: AuditSink;
  readonly #logger: GatewayLogger | undefined;
  readonly #shutdown = new AbortController();
  readonly #running = new Set<Promise<unknown>>();
  readonly #backgroundOnClose: 'kill' | 'keep' | undefined;
  readonly #backgroundLauncher: 'in-process' | 'detached';
  readonly #spawner: Spawner;
  /** One private network namespace per sandbox helper, shared by this gateway's runs. */
  readonly #networks = new Map<string, SharedNetwork>();
  readonly #sandboxWarned = new Set<string>();
  readonly #sandbox: SandboxContext;
  #background: BackgroundManager | undefined;
  #closed = false;

  constructor(options: GatewayOptions = {}) {
    this.#env = options.env ?? process.env;
    this.home = options.home ?? getHome(this.#env);
    this.#cwd = options.cwd ?? process.cwd();
    this.#shell = options.shell ?? getDefaultShell();
    this.#logger = options.logger;
    if (options.policy !== undefined && options.policyFile !== undefined) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'Give either the `policy` or the `policyFile` option, not both.', { option: 'policyFile' });
    }
    this.#policyFile = options.policyFile;
    let loaded: LoadedPolicy | undefined;
    if (options.policyFile !== undefined) {
      try {
        loaded = this.#loadPolicyFile(options.policyFile);
      } catch (error) {
        // Fail closed: no gateway. The refusal is still recorded where the audit log would be.
        recordPolicyRejected(options.audit, this.home, options.policyFile, error, this.#env);
        throw error;
      }
    }
    this.#policy = loaded?.policy ?? options.policy ?? DEFAULT_POLICY;
    validateCwdInRoots(this.#policy, this.#cwd);
    const sources: RefSource[] = [];
    if (options.envSource !== false) sources.push(createEnvSource(this.#env));
    const keyringEnabled = options.keyring !== false && !isKeyringDisabled(this.#env);
    if (keyringEnabled) {
      const service = options.keyring ? options.keyring.service : undefined;
      sources.push(createKeyringSource({ service, logger: { warn: (obj, msg) => this.#warn(obj, msg) } }));
    }
    if (options.vault !== false) {
      sources.push(createLazyVaultSource({ home: this.home, env: this.#env, keyring: keyringEnabled ? (options.keyring || {}) : false }));
    }
    sources.push(...(options.sources ?? []));
    this.refs = new RefStore(sources);
    this.#backgroundOnClose = options.backgroundOnClose;
    this.#backgroundLauncher = options.backgroundLauncher ?? 'in-process';
    const spawner = options.spawner !== undefined
      ? validateSpawnerKind(options.spawner, 'spawner')
      : validateSpawnerKind(this.#env.EXECGATE_SPAWNER || 'auto', 'EXECGATE_SPAWNER');
    this.#audit = createAudit(options.audit, this.home, this.#policy.audit, this.#env);
    this.#audit.write('gateway.started', { pid: process.pid, policy: this.policy.source, sources: this.refs.sourceNames });
    if (loaded) this.#audit.write('policy.loaded', { source: loaded.policy.source, files: loaded.files, digest: loaded.digest, reload: false });
    if (options.watchPolicy) this.watchPolicy(options.watchPolicy === true ? {} : options.watchPolicy);
    const audit = this.#audit;
    this.#sandbox = Object.freeze({
      home: this.home,
      ...(audit instanceof AuditLog ? { auditPath: audit.path } : {}),
      network: (helper: string): SharedNetwork => {
        let network = this.#networks.get(helper);
        if (!network) this.#networks.set(helper, (network = new SharedNetwork(helper)));
        return network;
      },
      onUnsandboxed: (reason: string): void => {
        if (this.#sandboxWarned.has(reason)) return;
        this.#sandboxWarned.add(reason);
        this.#warn({ reason }, `Commands run WITHOUT the OS sandbox (sandbox.mode: auto): ${reason}. Use sandbox.mode: required to refuse them instead.`);
      },
    });
    // Last: a helper process is started only for a gateway that did start.
    this.#spawner = createSpawner(spawner);
  }

  /** The policy in force. */
  get policy(): EffectivePolicy {
    return this.#policy;
  }

  #loadPolicyFile(file: string): LoadedPolicy {
    // Loaded on first use: a gateway without a policy file never loads the parser or validator.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { loadPolicyFile } = require('./policy/load') as typeof import('./policy/load');
    const loaded = loadPolicyFile(file, { cwd: this.#cwd, homeDir: this.#env.HOME || os.homedir() });
    this.#policyFiles = loaded.files;
    this.#policyDigest = loaded.digest;
    return loaded;
  }

  /**
   * Read the policy file again. A valid policy replaces the current one atomically (requests
   * already running keep the one they started with); an invalid one is refused, the last good
   * policy stays in force, and why is logged and audited. Resolves to whether the file is now
   * in force. Changes to where the audit log goes (`audit.enabled`, `path`, `destination`, rotation,
   * `fsync`) apply at the next start; what it records applies at once.
   */
  async reloadPolicy(): Promise<boolean> {
    const file = this.#policyFile;
    if (file === undefined || this.#closed) return false;
    const before = this.#policyDigest;
    let loaded: LoadedPolicy;
    try {
      loaded = this.#loadPolicyFile(file);
    } catch (error) {
      const problems = isExecgateError(error) && Array.isArray(error.details.problems) ? error.details.problems : undefined;
      const code = isExecgateError(error) ? error.code : 'EXECGATE_ERR_UNEXPECTED';
      this.#audit.write('policy.rejected', { source: file, code, problems, message: error instanceof Error ? error.message : String(error), reload: true });
      this.#warn({ code, file, problems }, `The policy ${file} was not reloaded; the last good policy stays in force. ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
    if (loaded.digest === before) return true;
    const current = this.#policy;
    const destination = ({ enabled, path, destination, maxBytes, maxFiles, fsync }: EffectivePolicy['audit']): string =>
      JSON.stringify([enabled, path, destination, maxBytes, maxFiles, fsync]);
    const auditRestart = destination(loaded.policy.audit) !== destination(current.audit);
    this.#policy = loaded.policy;
    this.#audit.write('policy.loaded', { source: loaded.policy.source, files: loaded.files, digest: loaded.digest, reload: true, ...(auditRestart ? { auditRestartRequired: true } : {}) });
    if (auditRestart) this.#warn({ file }, `The policy ${file} changes the audit destination; that takes effect when the gateway restarts.`);
    return true;
  }

  /**
   * Reload the policy file when it or a file it extends changes, and on `signal` (SIGHUP by
   * default). Meant for long-running hosts (servers); returns a function that stops watching.
   * close() stops it too.
   */
  watchPolicy(options: WatchPolicyOptions = {}): () => void {
    if (this.#policyFile === undefined) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'watchPolicy() needs a gateway created with the `policyFile` option.', { option: 'watchPolicy' });
    }
    this.#unwatchPolicy?.();
    const debounceMs = options.debounceMs ?? 100;
    const signal = options.signal === undefined ? 'SIGHUP' : options.signal;
    let watchers: FSWatcher[] = [];
    let timer: NodeJS.Timeout | undefined;
    const reload = (): void => {
      void this.reloadPolicy().then(rewatch, () => { /* reloadPolicy reports its own failures */ });
    };
    const schedule = (): void => {
      clearTimeout(timer);
      timer = setTimeout(reload, debounceMs);
      timer.unref();
    };
    // Directories are watched, not files: editors save by writing a new file and renaming it.
    const rewatch = (): void => {
      for (const watcher of watchers) watcher.close();
      watchers = [];
      const names = new Map<string, Set<string>>();
      for (const file of this.#policyFiles) {
        const dir = dirname(file);
        if (!names.has(dir)) names.set(dir, new Set());
        names.get(dir)?.add(basename(file));
      }
      for (const [dir, files] of names) {
        try {
          const watcher = watch(dir, { persistent: false }, (_event, name) => {
            if (name === null || files.has(String(name))) schedule();
          });
          watcher.on('error', () => { /* the directory went away; a SIGHUP still reloads */ });
          watchers.push(watcher);
        } catch {
          // Not watchable (removed, no permission): the signal still works.
        }
      }
    };
    rewatch();
    if (signal) process.on(signal, reload);
    const stop = (): void => {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      watchers = [];
      if (signal) process.removeListener(signal, reload);
      if (this.#unwatchPolicy === stop) this.#unwatchPolicy = undefined;
    };
    this.#unwatchPolicy = stop;
    return stop;
  }

  /** Background processes started through this gateway (`mode: 'background'`). */
  get background(): BackgroundManager {
    // Loaded on first use, like the PTY executor below: a CLI run starts faster without them.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    this.#background ??= new (require('./exec/background/manager') as typeof import('./exec/background/manager')).BackgroundManager({
      home: this.home,
      getPolicy: () => this.policy,
      resolveInput: (run, data) => this.#resolveInput(run, data),
      audit: (event, fields) => this.#audit.write(event, fields),
      launcher: this.#backgroundLauncher,
      detachedAudit: () => {
        const audit = this.#audit;
        if (!(audit instanceof AuditLog)) return undefined;
        const key = this.#env.EXECGATE_AUDIT_KEY;
        return { path: audit.path, home: this.home, ...(key ? { key } : {}) };
      },
    });
    return this.#background;
  }

  /**
   * Validate, decide, resolve, spawn. Sync and PTY runs resolve to the redacted ExecResult;
   * background runs resolve as soon as the process started, to its BackgroundProcess.
   */
  exec(request: ExecRequest & { mode: 'background' }, options?: ExecOptions): Promise<BackgroundProcess>;
  exec(request: ExecRequest, options?: ExecOptions): Promise<ExecResult>;
  async exec(request: ExecRequest, options: ExecOptions = {}): Promise<ExecResult | BackgroundProcess> {
    if (this.#closed) {
      throw new ExecgateError('EXECGATE_ERR_GATEWAY_CLOSED', 'The gateway is closed; create a new one to run commands.');
    }
    const runId = createRunId();
    const policy = this.#policy;
    let plan: SpawnPlan;
    try {
      plan = await preparePlan(
        {
          refs: this.refs,
          policy,
          env: this.#env,
          cwd: this.#cwd,
          shell: this.#shell,
          supportedModes: SUPPORTED_MODES,
          fingerprint: policy.audit.fingerprints ? this.#audit.fingerprint?.bind(this.#audit) : undefined,
          sandbox: this.#sandbox,
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
        ...(denied
          ? { rule: (error as ExecgateError).details.rule, reason: (error as ExecgateError).details.reason, refs: (error as ExecgateError).details.refs ?? [] }
          : {}),
        message: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
    if (policy.secrets.unknown === 'warn' && getUnknownRefs(plan.refs).length > 0) {
      this.#warn({ runId, refs: getUnknownRefs(plan.refs) }, `Run ${runId}: ${describeUnknownRefs(getUnknownRefs(plan.refs))} (\`secrets.unknown: warn\`).`);
    }
    this.#audit.write('exec.started', {
      runId,
      actor: plan.request.actor,
      command: plan.displayCommand,
      cwd: plan.cwd,
      mode: plan.request.mode,
      decision: plan.decision,
      refs: plan.auditRefs,
      ...(policy.audit.env ? { env: plan.envReport } : {}),
      sandbox: plan.sandbox,
    });
    if (plan.request.mode === 'background') {
      try {
        const started = await this.background.start(plan);
        this.#audit.write('background.started', { runId, actor: plan.request.actor, command: plan.displayCommand, pid: started.pid, pty: started.pty, outputPath: started.outputPath });
        return started;
      } catch (error) {
        this.#audit.write('exec.failed', {
          runId,
          actor: plan.request.actor,
          command: plan.displayCommand,
          code: isExecgateError(error) ? error.code : 'EXECGATE_ERR_UNEXPECTED',
          reason: plan.redactor.redactString(error instanceof Error ? error.message : String(error)).text,
        });
        throw error;
      }
    }
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const executor = plan.request.mode === 'pty' ? (require('./exec/pty') as typeof import('./exec/pty')).runPty : runSync;
    const signal = options.signal ? AbortSignal.any([this.#shutdown.signal, options.signal]) : this.#shutdown.signal;
    const run = executor(plan, { home: this.home, onOutput: options.onOutput, signal, spawner: this.#spawner });
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

  /**
   * stdin data for a background run goes through the same reference resolution as commands:
   * the policy decides on the tokens (for the run's command), values shorter than the minimum
   * are refused, and each value is registered with the run's redactor before it is written, so
   * the terminal's echo of it is masked. No shell is involved, so values are written literally.
   */
  async #resolveInput(run: BackgroundRun, data: string): Promise<Buffer> {
    const policy = this.policy;
    const tokens = scanTokens(data, { alias: policy.secrets.alias });
    if (tokens.length === 0) return Buffer.from(data, 'utf8');
    const decision = decideRequest(policy, run.plan.request, tokens);
    if (!decision.allowed) {
      throw new ExecgateError(
        'EXECGATE_ERR_POLICY_DENIED',
        `The policy (${policy.source}) refused this input: ${decision.reason ?? 'no rule allows it'}. Nothing was written.`,
        { rule: decision.rule, reason: decision.reason },
      );
    }
    const resolution = await this.refs.resolveTokens(tokens);
    const values = new Map<string, string>();
    for (const ref of resolution.refs) {
      if (!ref.found || !ref.value) continue;
      const value = ref.value.reveal();
      if (value.length < policy.secrets.minLength) {
        throw new ExecgateError(
          'EXECGATE_ERR_REF_TOO_SHORT',
          `${ref.ref} resolved to a value shorter than ${policy.secrets.minLength} characters, too short to mask. Nothing was written.`,
          { reference: ref.ref, minLength: policy.secrets.minLength },
        );
      }
      run.plan.redactor.add(value, `${ref.kind}:${ref.id}`);
      values.set(`${ref.kind}:${ref.id}`, value);
    }
    let text = '';
    let last = 0;
    for (const token of tokens) {
      const value = values.get(`${token.kind}:${token.id}`);
      if (value === undefined) continue;
      text += data.slice(last, token.start) + value;
      last = token.end;
    }
    text += data.slice(last);
    return Buffer.from(text, 'utf8');
  }

  #warn(obj: object, msg: string): void {
    if (this.#logger) this.#logger.warn(obj, msg);
    else process.emitWarning(msg, { code: 'EXECGATE_WARNING' });
  }

  /** Stop accepting requests, stop every run in progress, and close the audit log. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatchPolicy?.();
    this.#shutdown.abort();
    const stopped = this.#running.size;
    await Promise.allSettled([
      ...this.#running,
      this.#background?.close(this.#backgroundOnClose ?? this.policy.background.onClose),
    ]);
    await this.#spawner.close();
    for (const network of this.#networks.values()) network.close();
    this.#audit.write('gateway.stopped', { pid: process.pid, runsStopped: stopped });
    this.#audit.close();
  }

  get closed(): boolean {
    return this.#closed;
  }
}

function createAudit(option: GatewayOptions['audit'], home: string, settings: EffectivePolicy['audit'], env: NodeJS.ProcessEnv): AuditSink {
  if (option === false) return NULL_AUDIT;
  if (option && typeof (option as AuditSink).write === 'function') return option as AuditSink;
  // The host's choice wins; without one, the policy says whether and where.
  if (option === undefined && !settings.enabled) return NULL_AUDIT;
  const config = (option ?? getPolicyAuditConfig(settings)) as AuditConfig;
  return new AuditLog({ ...config, path: config.path ?? settings.path ?? join(home, 'audit.log'), home, env });
}

/** The audit log settings a policy file may make (the host's `audit` option replaces them all). */
function getPolicyAuditConfig(settings: EffectivePolicy['audit']): AuditConfig {
  const { destination, maxBytes, maxFiles, fsync } = settings;
  return {
    ...(destination !== undefined ? { destination } : {}),
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    ...(maxFiles !== undefined ? { maxFiles } : {}),
    ...(fsync !== undefined ? { fsync } : {}),
  };
}

function recordPolicyRejected(option: GatewayOptions['audit'], home: string, file: string, error: unknown, env: NodeJS.ProcessEnv): void {
  try {
    const audit = createAudit(option, home, DEFAULT_POLICY.audit, env);
    audit.write('policy.rejected', {
      source: file,
      code: isExecgateError(error) ? error.code : 'EXECGATE_ERR_UNEXPECTED',
      problems: isExecgateError(error) ? error.details.problems : undefined,
      message: error instanceof Error ? error.message : String(error),
      reload: false,
    });
    if (audit !== option) audit.close();
  } catch {
    // The policy error is what the caller needs to see; an audit log that cannot be written
    // (no state directory) must not replace it.
  }
}

/** The vault source, its module loaded on the first lookup: most runs name no vault secret. */
function createLazyVaultSource(options: VaultSourceOptions): RefSource {
  let source: RefSource | undefined;
  return Object.freeze({
    name: 'vault',
    kinds: Object.freeze(['secret', 'decrypt'] as RefKind[]),
    lookup(kind: RefKind, id: string) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      source ??= (require('./refs/sources/vault') as typeof import('./refs/sources/vault')).createVaultSource(options);
      return source.lookup(kind, id);
    },
  });
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
