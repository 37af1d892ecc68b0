/*
 * The gateway: the object a host creates once and sends every request through. Wiring only:
 * it builds the RefStore (refs/default-sources.ts), holds the policy (policy/reload.ts), opens
 * the audit log, lends its runs a sandbox context (plan/sandbox-context.ts), and hands each
 * request to the one path (plan/prepare.ts) and the one lifecycle (run/lifecycle.ts),
 * recording the run (run/audit-records.ts). It owns every run it started, so that close() can
 * stop them all.
 */
import { setMaxListeners } from 'node:events';
import os from 'node:os';
import { createAudit, recordPolicyRejected } from './audit/from-policy';
import { AuditLog, type AuditSink } from './audit/log';
import { ExecgateError, getErrorCode, isExecgateError, maskError } from './errors';
import { RunRecords } from './run/audit-records';
import type { BackgroundManager } from './run/background/manager';
import type { BackgroundProcess } from './run/background/types';
import { resolveInput } from './plan/input';
import { getDefaultShell, type ExecRequest } from './plan/options';
import { createRunId, preparePlan, type PrepareContext, type SpawnPlan } from './plan/prepare';
import { getEgressAuditFields } from './egress/audit';
import type { EgressProxy } from './egress/proxy';
import { MaskMemory } from './redact/memory';
import { Redactor } from './redact/redactor';
import { getParentPasswords } from './egress/upstream';
import { isExecgateSecretName } from './env/secrets';
import type { ExecResult } from './run/result';
import { createSpawner, validateSpawnerKind, type Spawner } from './process/spawner';
import { validateWarmSandboxes, withWarmSandboxes, type WarmSandboxes, type WarmStats } from './process/bwrap/warm';
import { runForeground } from './run/sync';
import { getHome, resolveHome } from './home';
import { DEFAULT_POLICY, type EffectivePolicy, type ExecMode } from './policy/effective';
import { PolicyHolder, type WatchPolicyOptions } from './policy/reload';
import { validateCwdInRoots } from './policy/roots';
import { describeUnknownRefs, getUnknownRefs } from './policy/unknown-refs';
import type { ExecOptions, GatewayLogger, GatewayOptions } from './gateway-options';
import { createDefaultSources } from './refs/default-sources';
import { createProcessSources } from './refs/sources/process';
import { RefStore } from './refs/store';
import type { RefSource } from './refs/types';
import { maskStrings } from './redact/deep';
import { createGatewaySandbox, type GatewaySandbox } from './plan/sandbox-context';
import { checkSandboxCwd, planSandbox } from './sandbox';
import { checkPlatform, forgetPlatformCheck } from './sandbox/detect';
import { checkAuditPlacement, checkWorkspacePlacement } from './sandbox/placement';
import { isInside } from './fs/paths';
import type { SandboxLaunch } from './process/bwrap/launch';

export type { WatchPolicyOptions } from './policy/reload';
export type { ExecOptions, GatewayLogger, GatewayOptions } from './gateway-options';

const SUPPORTED_MODES: ReadonlySet<ExecMode> = new Set<ExecMode>(['sync', 'pty', 'background']);

/**
 * The exec gateway: checks each request against the policy, resolves its reference tokens just
 * before spawn, runs it (sync, PTY or background, sandboxed by default) and returns output in which
 * no resolved value appears. Made by {@link createGateway}; `close()` stops what it started.
 */
export class Gateway {
  readonly refs: RefStore;
  readonly home: string;
  readonly #policy: PolicyHolder;
  readonly #env: NodeJS.ProcessEnv;
  /** Every value a run of this gateway resolved or passed through: later runs mask them too. */
  readonly #masks = new MaskMemory();
  #known: { redactor: Redactor; version: number; policy: EffectivePolicy } | undefined;
  readonly #cwd: string;
  readonly #shell: string;
  readonly #audit: AuditSink;
  /** Whether runs' shells start parked while their start records are made durable (SpawnPlan.parked). */
  readonly #parks: boolean;
  readonly #logger: GatewayLogger | undefined;
  readonly #shutdown = new AbortController();
  readonly #running = new Set<Promise<unknown>>();
  /** Gateway.prepare calls in progress. */
  readonly #preparing = new Set<Promise<void>>();
  readonly #backgroundOnClose: 'kill' | 'keep' | undefined;
  readonly #backgroundLauncher: 'in-process' | 'detached';
  readonly #spawner: Spawner;
  readonly #warm: WarmSandboxes | undefined;
  readonly #sandbox: GatewaySandbox;
  #background: BackgroundManager | undefined;
  #closed = false;
  #egress: EgressProxy | undefined;
  readonly #egressOptions: GatewayOptions['egress'];
  /** The policy's credential-process sources (also in `refs`): asked again for values a run's proxy holds. */
  readonly #processSources: RefSource;

  constructor(options: GatewayOptions = {}) {
    this.#env = options.env ?? process.env;
    this.home = options.home !== undefined ? resolveHome(options.home) : getHome(this.#env);
    this.#cwd = options.cwd ?? process.cwd();
    this.#shell = options.shell ?? getDefaultShell();
    this.#egressOptions = options.egress;
    this.#logger = options.logger;
    try {
      this.#policy = new PolicyHolder({ file: options.policyFile, policy: options.policy, cwd: this.#cwd, homeDir: this.#env.HOME || os.homedir() });
    } catch (error) {
      // Fail closed: no gateway. The refusal is still recorded where the audit log would be.
      if (options.policyFile !== undefined) recordPolicyRejected(options.audit, this.home, DEFAULT_POLICY.audit, options.policyFile, error, this.#env);
      throw error;
    }
    validateCwdInRoots(this.policy, this.#cwd);
    // The policy's `secrets.sources`, read at each lookup (a reload changes them); each call is
    // recorded once the audit log exists (nothing resolves before).
    const processSources = this.#processSources = createProcessSources({
      specs: () => this.policy.secrets.sources,
      env: this.#env,
      cwd: this.#env.HOME || os.homedir(),
      record: ({ runId, ...call }) => this.#audit.write('secret.source', { ...(runId ? { runId } : {}), ...call }),
    });
    this.refs = new RefStore(createDefaultSources({ ...options, process: processSources, env: this.#env, home: this.home, warn: (obj, msg) => this.#warn(obj, msg) }));
    this.#backgroundOnClose = options.backgroundOnClose;
    this.#backgroundLauncher = options.backgroundLauncher ?? 'in-process';
    const warm = validateWarmSandboxes(options.warmSandboxes);
    const spawner = options.spawner !== undefined
      ? validateSpawnerKind(options.spawner, 'spawner')
      : validateSpawnerKind(this.#env.EXECGATE_SPAWNER || 'auto', 'EXECGATE_SPAWNER');
    this.#audit = createAudit(options.audit, this.home, this.policy.audit, this.#env);
    this.#parks = typeof this.#audit.writeAndSync === 'function' && (!(this.#audit instanceof AuditLog) || this.#audit.syncsBeforeSpawn);
    // A record names paths a run may have named after a value: masked like a run's output.
    if (this.#audit instanceof AuditLog) this.#audit.mask = (text) => this.maskKnown(text);
    try {
      this.#checkPlacement(this.policy);
    } catch (error) {
      this.#audit.close();
      throw error;
    }
    this.#policy.check = (policy) => this.#checkPlacement(policy);
    this.#policy.record = (event, fields) => this.#audit.write(event, fields);
    this.#policy.warn = (obj, msg) => this.#warn(obj, msg);
    this.#audit.write('gateway.started', { pid: process.pid, policy: this.policy.source, sources: this.refs.sourceNames });
    const { loaded } = this.#policy;
    if (loaded) this.#audit.write('policy.loaded', { source: loaded.policy.source, files: loaded.files, digest: loaded.digest, reload: false });
    if (options.watchPolicy) this.watchPolicy(options.watchPolicy === true ? {} : options.watchPolicy);
    this.#sandbox = createGatewaySandbox({
      home: this.home,
      auditPath: this.#audit instanceof AuditLog ? this.#audit.path : undefined,
      policyFiles: () => this.#policy.files,
      warn: (obj, msg) => this.#warn(obj, msg),
    });
    // Every run in progress listens on the shutdown signal until it ends: many at once is normal, not a leak.
    setMaxListeners(0, this.#shutdown.signal);
    // Last: a helper process is started only for a gateway that did start.
    ({ spawner: this.#spawner, warm: this.#warm } = withWarmSandboxes(createSpawner(spawner), warm));
  }

  /**
   * Where runs may write, for a policy about to be in force: never beside the credential files
   * (the home directory) nor where the audit log lies. Only where the sandbox will be used
   * (`required`, or `auto` on a platform that has it).
   */
  #checkPlacement(policy: EffectivePolicy): void {
    const { sandbox } = policy;
    if (sandbox.mode === 'off') return;
    // Asked here first, with the state directory: a success remembered there for this helper and
    // kernel spares every later start its probe (sandbox/detect.ts); the runs' plans reuse it.
    const platform = checkPlatform(sandbox.helper, { stateDir: this.home });
    if (!(sandbox.mode === 'required' || platform.ok)) return;
    const placement = { roots: policy.cwd.roots, workspace: this.#cwd, writable: sandbox.filesystem.writable, env: this.#env, userHome: os.homedir() };
    checkWorkspacePlacement(placement);
    if (this.#audit instanceof AuditLog) checkAuditPlacement({ ...placement, auditPath: this.#audit.path });
  }

  /** How sandboxed sync runs started: in a warm sandbox or cold (undefined when warm sandboxes are off). */
  get warmSandboxes(): WarmStats | undefined {
    return this.#warm?.stats;
  }

  /** The policy in force. */
  get policy(): EffectivePolicy {
    return this.#policy.policy;
  }

  /**
   * Read the policy file again. A valid policy replaces the current one atomically (requests
   * already running keep the one they started with); an invalid one is refused, the last good
   * policy stays in force, and why is logged and audited. Resolves to whether the file is now
   * in force. Changes to where the audit log goes (`audit.enabled`, `path`, `destination`, rotation,
   * `fsync`) apply at the next start; what it records applies at once.
   */
  async reloadPolicy(): Promise<boolean> {
    return !this.#closed && this.#policy.reload();
  }

  /**
   * Reload the policy file when it or a file it extends changes, and on `signal` (SIGHUP by
   * default). Meant for long-running hosts (servers); returns a function that stops watching.
   * close() stops it too.
   */
  watchPolicy(options: WatchPolicyOptions = {}): () => void {
    this.#warnWritablePolicy();
    return this.#policy.watch(options);
  }
  /**
   * Said once when a watched policy file lies where sandboxed runs may write: hot reload is when
   * a run could have rewritten it (after the host replaced it by rename), and such a change is
   * refused.
   */
  #warnWritablePolicy(): void {
    if (this.policy.sandbox.mode === 'off') return;
    const roots = [...(this.policy.cwd.roots.length > 0 ? this.policy.cwd.roots : [this.#cwd]), ...this.policy.sandbox.filesystem.writable];
    for (const file of this.#policy.files) {
      const root = roots.find((r) => isInside(file, r));
      if (root !== undefined) this.#warn({ file, root }, `The policy file ${file} lies in ${root}, where sandboxed runs may write. It is read-only inside each run, but replacing it by rename (an editor's save) while a run is alive lets that run write it; such a change is refused (EXECGATE_ERR_POLICY_WRITTEN_BY_RUN). Keep the policy outside the workspace.`);
    }
  }


  /** Background processes started through this gateway (`mode: 'background'`). */
  get background(): BackgroundManager {
    // Loaded on first use: a CLI run starts faster without it.
    this.#background ??= new (require('./run/background/manager') as typeof import('./run/background/manager')).BackgroundManager({
      home: this.home,
      getPolicy: () => this.policy,
      resolveInput: (run, data) => resolveInput(this.policy, this.refs, run.plan, data),
      // A run's end happened whatever the log can take: kept and written with the next record.
      audit: (event, fields) => {
        if (event === 'background.ended' && this.#audit.writeOrDefer) this.#audit.writeOrDefer(event, fields);
        else this.#audit.write(event, fields);
      },
      launcher: this.#backgroundLauncher,
      // Background runs spawn from this process: many starting at once would overrun the
      // spawn helper's socket backlog (EAGAIN), and a long-lived run gains nothing from it.
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
    if (this.#closed) throw closedError();
    // Tracked from here, preparation included: close() waits for a request still being prepared
    // (which then refuses to start) instead of returning while it goes on to spawn unrecorded.
    const run = this.#execute(request, options);
    this.#running.add(run);
    // What the gateway reports about a run (the sandbox's places, an error's message) can name a
    // path a run made out of a value: masked like the run's output.
    const mask = (text: string): string => this.maskKnown(text);
    try {
      const result = await run;
      return 'sandbox' in result ? { ...result, sandbox: maskStrings(result.sandbox, mask) } : result;
    } catch (error) {
      // Bubblewrap failed to set a run up: what the platform check remembered is not trusted any
      // more; the next check probes again (and words the reason in the helper's own terms).
      if (isExecgateError(error) && error.code === 'EXECGATE_ERR_SANDBOX_FAILED') {
        forgetPlatformCheck(this.home);
        await this.#sandbox.dropUnverified();
      }
      throw maskError(error, mask);
    } finally {
      this.#running.delete(run);
    }
  }

  /** What every run's plan is prepared with (preparePlan's context), less what belongs to one run. */
  #planContext(policy: EffectivePolicy): PrepareContext {
    return {
      refs: this.refs,
      // Values injected or signed with at the proxy, from a credential-process source, are kept
      // current while the run lives (plan/refresh.ts).
      refreshValue: async (kind, id, lookup) => {
        const answer = await this.#processSources.lookup(kind, id, lookup);
        return answer.found ? answer.value : undefined;
      },
      refreshableSources: () => new Set(policy.secrets.sources.map((source) => source.name)),
      policy,
      env: this.#env,
      cwd: this.#cwd,
      shell: this.#shell,
      supportedModes: SUPPORTED_MODES,
      fingerprint: policy.audit.fingerprints ? this.#audit.fingerprint?.bind(this.#audit) : undefined,
      sandbox: this.#sandbox.context,
      // A detached background run outlives this process: its supervisor takes the run's egress
      // endpoint over (run/background/detached.ts) and serves it with a proxy of its own.
      egress: () => this.#getEgress(),
      handsOver: (mode) => mode === 'background' && this.#backgroundLauncher === 'detached',
      remembered: this.#masks,
      onSshSign: (record) => this.#audit.write('ssh.sign', { ...record }),
    };
  }

  /**
   * Sets up ahead what the first sandboxed run would otherwise wait for: the platform check, the
   * file-system view, the shared network namespace and the egress proxy (where the policy lets
   * runs reach the network), and a warm sandbox for a run in the gateway's working directory.
   * Runs nothing and records nothing (no resolved value, no audit record: a plan of `true` is
   * made and released). Optional: a run asked meanwhile waits no longer than it would have.
   * Resolves once done; never rejects (a first run that still fails says why).
   */
  prepare(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    // close() waits for it, so that nothing it starts (the shared namespace's holder, a sandbox)
    // comes after the gateway's end.
    const preparing = this.#prepare();
    this.#preparing.add(preparing);
    void preparing.finally(() => this.#preparing.delete(preparing));
    return preparing;
  }

  async #prepare(): Promise<void> {
    const policy = this.policy;
    if (policy.sandbox.mode === 'off') return;
    let plan: SpawnPlan | undefined;
    try {
      plan = await preparePlan(this.#planContext(policy), { command: 'true' });
      if (plan.launch !== undefined && !this.#closed) await this.#warm?.prepare(plan.launch);
    } catch {
      // the first run that needs it reports the same
    } finally {
      await plan?.resources.release().catch(() => undefined);
    }
  }

  async #execute(request: ExecRequest, options: ExecOptions): Promise<ExecResult | BackgroundProcess> {
    const runId = createRunId();
    const policy = this.policy;
    const records = new RunRecords(this.#audit, runId, { env: policy.audit.env });
    let plan: SpawnPlan;
    try {
      plan = await preparePlan({
        ...this.#planContext(policy),
        // The shell starts while the start record is made durable, and acts only after.
        park: this.#parks,
        onNormalized: (normalized) => records.requested(normalized),
      }, request, runId);
    } catch (error) {
      records.refused(request, error);
      throw error;
    }
    if (this.#closed) {
      // close() was called while the plan was prepared (secrets resolved, sandbox planned): start nothing.
      const error = closedError();
      records.refused(request, error);
      await plan.resources.release();
      throw error;
    }
    const unknown = policy.secrets.unknown === 'warn' ? getUnknownRefs(plan.refs) : [];
    if (unknown.length > 0) this.#warn({ runId, refs: unknown }, `Run ${runId}: ${describeUnknownRefs(unknown)} (\`secrets.unknown: warn\`).`);
    // Written now; durable (the policy's fdatasync, off the event loop) before the command acts.
    const ready = records.started(plan);
    ready.catch(() => { /* the run fails with it below */ });
    // Resolved once this run's result is on its way to the caller (the end record written).
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => { settle = resolve; });
    const run = plan.request.mode === 'background'
      ? ready.then(() => this.background.start(plan)).then((started) => { records.backgroundStarted(plan, started); return started; })
      : runForeground(plan, {
        home: this.home,
        onOutput: options.onOutput,
        signal: options.signal ? AbortSignal.any([this.#shutdown.signal, options.signal]) : this.#shutdown.signal,
        spawner: this.#spawner,
        // A sync or PTY program that has not started when close() is called never starts, even if
        // its start record becomes durable after that (close() stops runs, it does not let one
        // act first): the run fails with EXECGATE_ERR_GATEWAY_CLOSED, its sandbox ended unused.
        ready: unlessClosed(ready, this.#shutdown.signal),
        settled,
      }).then((result) => records.finished(plan, result));
    try {
      return await run;
    } catch (error) {
      records.failed(plan, error);
      await plan.resources.release();
      throw error;
    } finally {
      settle();
    }
  }

  /**
   * How to start a program on the agent's behalf inside the sandbox this gateway's runs get (the
   * built-in file tools' server, tools/files/sandboxed.ts), working in `cwd`; undefined when runs
   * are not sandboxed. It has no network at all (a namespace of its own), and the same mount
   * check as a run before it starts.
   */
  async prepareToolSandbox(cwd: string): Promise<SandboxLaunch | undefined> {
    if (this.#closed) throw closedError();
    const policy = this.policy;
    const { network: _shared, ...context } = this.#sandbox.context;
    const planned = await planSandbox({
      settings: { ...policy.sandbox, network: 'none' },
      context,
      cwd,
      roots: policy.cwd.roots,
      workspace: this.#cwd,
      env: this.#env,
      pty: false,
    });
    return planned.launch;
  }

  /**
   * `text` with every value this gateway knows to be secret masked, as a run's output would have
   * it: values its runs resolved or met, its own `EXECGATE_SECRET_*` values, a parent proxy's
   * password. For what reaches the caller without being a run's output: the file tools' results
   * (a file a run wrote a resolved value into, a file named after one).
   */
  maskKnown(text: string): string {
    const policy = this.policy;
    let known = this.#known;
    if (known === undefined || known.version !== this.#masks.version || known.policy !== policy) {
      const redactor = new Redactor({ minLength: policy.secrets.minLength });
      // The values runs met, compiled once for every run (redact/memory.ts), under the labels runs
      // used: `secret:NAME` as resolved. The gateway's own secrets that no run met are added
      // above them (a remembered one keeps its label).
      redactor.setBase(this.#masks.getShared(policy.secrets.minLength));
      for (const [name, value] of Object.entries(this.#env)) {
        if (isExecgateSecretName(name) && typeof value === 'string' && value.length >= policy.secrets.minLength && !this.#masks.has(value)) redactor.add(value, `env:${name}`);
      }
      for (const password of getParentPasswords(this.#env, policy.network.upstream)) {
        if (password.length >= policy.secrets.minLength && !this.#masks.has(password)) redactor.add(password, 'env:HTTPS_PROXY');
      }
      known = { redactor, version: this.#masks.version, policy };
      this.#known = known;
    }
    return known.redactor.redactString(text).text;
  }

  /**
   * Checks that runs could work in `cwd`: inside `cwd.roots` when the policy names some, and a
   * directory the sandbox can enter (not hidden, not in the host's temp directory outside every
   * writable root). Throws the coded error a run there would get; nothing is run.
   */
  checkWorkingDirectory(cwd: string): void {
    if (this.#closed) throw closedError();
    const policy = this.policy;
    validateCwdInRoots(policy, cwd);
    checkSandboxCwd({ settings: policy.sandbox, context: this.#sandbox.context, cwd, roots: policy.cwd.roots, workspace: this.#cwd, env: this.#env });
  }

  /** The gateway's one egress proxy, started by the first run that needs it; its decisions go to the audit log under each run's id. */
  #getEgress(): EgressProxy {
    // Loaded on first need: a gateway whose runs never use the proxy never loads it (nor node-forge).
    const { EgressProxy: Proxy } = require('./egress/proxy') as typeof import('./egress/proxy');
    this.#egress ??= new Proxy({
      // The gateway's own HTTPS_PROXY / HTTP_PROXY / NO_PROXY: its upstream connections leave as the gateway's would.
      upstreamEnv: this.#env,
      ...this.#egressOptions,
      // A decision made as the gateway closes (a raw connection still being traced to its run)
      // may find the log closed: said as a warning, never thrown from a timer into the host.
      onDecision: (decision) => {
        try {
          this.#audit.write('egress.decision', getEgressAuditFields(decision));
        } catch (error) {
          this.#warn({ code: getErrorCode(error, 'EXECGATE_ERR_AUDIT_IO'), runId: decision.runId, host: decision.host, port: decision.port, allowed: decision.allowed }, `An egress decision of run ${decision.runId || '(none)'} could not be recorded: ${(error as Error).message}`);
        }
      },
    });
    return this.#egress;
  }

  #warn(obj: object, msg: string): void {
    if (this.#logger) this.#logger.warn(obj, msg);
    else process.emitWarning(msg, { code: 'EXECGATE_WARNING' });
  }

  /** Stop accepting requests, stop every run in progress, and close the audit log. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#policy.stop();
    this.#shutdown.abort();
    const stopped = this.#running.size;
    // Requests in flight first: a sync run ends on the abort, one still being prepared refuses to
    // start, and a background run that was starting is then running, for background.close() to see.
    await Promise.allSettled([...this.#running, ...this.#preparing]);
    await this.#background?.close(this.#backgroundOnClose ?? this.policy.background.onClose);
    await this.#spawner.close();
    this.#sandbox.close();
    await this.#egress?.close();
    // The gateway stops whatever the log can take; a record it cannot take now is tried again at close.
    const stoppedFields = { pid: process.pid, runsStopped: stopped };
    if (this.#audit.writeOrDefer) this.#audit.writeOrDefer('gateway.stopped', stoppedFields);
    else {
      try { this.#audit.write('gateway.stopped', stoppedFields); } catch { /* a host's sink: its own to report */ }
    }
    this.#audit.close();
  }

  get closed(): boolean {
    return this.#closed;
  }
}

/**
 * Creates a gateway: takes the policy (the `policy` option, the `policyFile` option's file, or
 * the embedded default), opens the audit log and sets up the secret sources. Throws an
 * {@link ExecgateError} for bad options or a policy that does not load; nothing runs until `exec`.
 */
export function createGateway(options: GatewayOptions = {}): Gateway {
  return new Gateway(options);
}

function closedError(): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_GATEWAY_CLOSED', 'The gateway is closed; create a new one to run commands.');
}

/**
 * `ready`, unless the gateway closes first (or had closed when it settled): then the closed error.
 * Without it, a run whose start record was still being made durable when close() was called got
 * its `go` once the record was durable, and was stopped only after: its program ran all, part or
 * none of its command depending on timing.
 */
function unlessClosed(ready: Promise<void>, shutdown: AbortSignal): Promise<void> {
  const gated = new Promise<void>((resolve, reject) => {
    const closed = (): void => reject(closedError());
    if (shutdown.aborted) {
      closed();
      return;
    }
    shutdown.addEventListener('abort', closed, { once: true });
    ready.then(() => {
      shutdown.removeEventListener('abort', closed);
      if (shutdown.aborted) closed();
      else resolve();
    }, (error: unknown) => {
      shutdown.removeEventListener('abort', closed);
      // The start record's own failure (the run fails with it).
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
  gated.catch(() => { /* the run fails with it */ });
  return gated;
}
