/*
 * The one path. Every mode (sync, pty, background) goes through `preparePlan`; executors only
 * adapt I/O. Order matters and is the security argument of execgate:
 *   validate -> policy decision -> sandbox plan -> resolve references -> build the child
 *   environment -> build the redactor -> SpawnPlan.
 * The sandbox is planned before any store is asked for a value, so a run the policy requires to
 * be sandboxed and that cannot be fails without resolving anything. When sandboxed, the plan's
 * `launch` says how bubblewrap starts around `shell`/`args`: every executor starts them through
 * it (sandbox/gate.ts), so sync, PTY and background runs get the same sandbox and mount check.
 * Nothing is spawned before the plan exists, and a plan exists only if every step succeeded.
 * The plan holds resolved values only inside the child environment and the redactor; the
 * command it carries for display, logs and audit is the unresolved one.
 */
import { randomBytes } from 'node:crypto';
import { ExecgateError } from '../errors';
import { describeRunNetwork, type RunNetwork } from '../egress/describe';
import { checkEgress, type StartedEgress } from '../egress/plan';
import type { EgressDecision, EgressProxy, HandedOffRun } from '../egress/proxy';
import { openRunEgress, type RunEgress } from '../egress/run';
import { getParentPasswords } from '../egress/upstream';
import { sanitizeEnv, validateRequestedEnv } from '../env';
import type { EffectivePolicy, ExecMode } from '../policy/effective';
import { Redactor, type MaskMemory } from '../redact';
import { isExecgateSecretName, isSecretName } from '../env/secrets';
import type { RefStore } from '../refs/store';
import { substituteTokens, validateTokenPlacements, type Replacement } from '../refs/substitute';
import { readShell } from '../shell';
import { scanTokens } from '../refs/tokens';
import { decideProgramLookup, decideRequest, type Decision } from '../policy/decide';
import { getRunWritable } from '../policy/program-path';
import { getSanitizerSettings } from '../policy/env-settings';
import { validateUnknownRefs } from '../policy/unknown-refs';
import type { RefKind } from '../refs/types';
import { planSandbox, type SandboxContext, type SandboxReport } from '../sandbox';
import type { SandboxLaunch } from '../sandbox/launch';
import { getHome } from '../home';
import { normalizeRequest, validateCommandLength, type NormalizedRequest } from './options';
import { getDescriptorCloser } from './inherited-fds';
import { validateExecSize } from './arg-limits';
import { revealValues } from './resolve';
import { RUN_ID_VARIABLE } from './terminate';

/**
 * One reference a run used, by name (never by value): whether a source knew it, which source, and
 * suggestions for an unknown name.
 */
export interface RefUse {
  readonly kind: RefKind;
  readonly id: string;
  readonly ref: string;
  /** False when no source knew the reference: its text was passed on as written. */
  readonly found: boolean;
  readonly source?: string;
  /** For a reference no source knew: the known references closest to it ("did you mean"), at most three. */
  readonly suggestions?: readonly string[];
}

/** A RefUse as the audit log records it: with a keyed fingerprint of the value used. */
export interface AuditedRefUse extends RefUse {
  readonly fingerprint?: string;
}

export interface EnvReport {
  readonly removed: readonly string[];
  readonly withheld: readonly string[];
  readonly reported: readonly string[];
}

export interface SpawnPlan {
  readonly runId: string;
  readonly request: NormalizedRequest;
  /** The unresolved command: the only form shown in results, logs and audit records. */
  readonly displayCommand: string;
  /** The program and its arguments (inside the sandbox when sandboxed). */
  readonly shell: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly redactor: Redactor;
  readonly refs: readonly RefUse[];
  /** The references with value fingerprints, for the audit log only. */
  readonly auditRefs: readonly AuditedRefUse[];
  readonly decision: Decision;
  readonly envReport: EnvReport;
  /**
   * What the lifecycle does with processes the command leaves behind once it exits: `keep` only
   * when the request asks and the policy allows background processes (leftovers are background
   * processes by another name), `kill` otherwise.
   */
  readonly leftovers: 'kill' | 'keep';
  /** Whether the run is sandboxed, how (namespaces, hidden and writable paths) or why not. */
  readonly sandbox: SandboxReport;
  /** What the run could reach and how, and which of its secrets were bound or injected (egress/describe.ts). */
  readonly network: RunNetwork;
  /** Sandboxed: how bubblewrap is started around `shell` + `args` (sandbox/launch.ts). */
  readonly launch?: SandboxLaunch;
  readonly limits: {
    readonly timeout: number;
    readonly grace: number;
    readonly drainTimeout: number;
    readonly maxOutput: number;
    readonly maxFileBytes: number;
  };
}

export interface PrepareContext {
  readonly refs: RefStore;
  readonly policy: EffectivePolicy;
  /** The gateway's own environment: inherited by children (sanitized) and the env source. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly shell: string;
  /** Modes this gateway has an executor for. */
  readonly supportedModes: ReadonlySet<ExecMode>;
  /** Called once the request is normalized, before anything is resolved (audit, policy). */
  readonly onNormalized?: (request: NormalizedRequest, runId: string) => void;
  /** Called with the policy decision, allowed or not, before anything is resolved. */
  readonly onDecision?: (decision: Decision, request: NormalizedRequest, runId: string) => void;
  /** Keyed fingerprint of a resolved value for the audit log (never the value itself). */
  readonly fingerprint?: (value: string) => string;
  /** The gateway's state and shared network for the sandbox; default: the state directory of `env`. */
  readonly sandbox?: SandboxContext;
  /**
   * The gateway's egress proxy for a run of this mode (started on first need); undefined when the
   * run would outlive it. Without one a sandboxed run has loopback only.
   */
  readonly egress?: (mode: ExecMode) => EgressProxy | undefined;
  /**
   * True when a run of this mode is handed to another process to hold (a detached background
   * run's supervisor): its egress gets a socket of its own, which that process adopts.
   */
  readonly handsOver?: (mode: ExecMode) => boolean;
  /**
   * Values earlier runs of this gateway resolved or passed through: every run masks them too,
   * and this run's values join them once its plan exists.
   */
  readonly remembered?: MaskMemory;
}

/*
 * The (value, label) pairs a plan's redactor was built from. Kept beside the plan rather than
 * on it, so that serialising or logging a plan can never carry them; only code that must
 * rebuild the redactor in another process (the background supervisor) reads them.
 */
const planSecrets = new WeakMap<SpawnPlan, ReadonlyArray<{ readonly value: string; readonly label: string }>>();

/*
 * What must be undone when the run ends (its egress proxy endpoint). Kept beside the plan for the
 * same reason; the lifecycle calls releasePlan once, where every run ends.
 */
const planReleases = new WeakMap<SpawnPlan, () => Promise<void>>();

export async function releasePlan(plan: SpawnPlan): Promise<void> {
  const release = planReleases.get(plan);
  planReleases.delete(plan);
  await release?.().catch(() => undefined);
}

/*
 * A run held by another process (the detached supervisor of a CLI background run) takes its
 * egress endpoint along: this process stops serving it and the supervisor's own proxy serves it
 * at the same path (egress/proxy.ts adoptRun).
 */
const planHandOffs = new WeakMap<SpawnPlan, () => HandedOffRun>();

export function handOffPlanEgress(plan: SpawnPlan): HandedOffRun | undefined {
  const handOff = planHandOffs.get(plan);
  planHandOffs.delete(plan);
  planReleases.delete(plan);
  return handOff?.();
}

/*
 * What the run's start fixed for its bound secrets (its egress check and injected sentinels),
 * for stdin data written to it later (input.ts). Beside the plan, as the secrets are: a sentinel
 * is no secret, but the plan is what gets logged and serialised. Absent: the run has no proxy.
 */
const planEgress = new WeakMap<SpawnPlan, StartedEgress>();

export function getPlanEgress(plan: SpawnPlan): StartedEgress | undefined {
  return planEgress.get(plan);
}

/* The run's egress decisions so far (its proxy endpoint keeps them), for its result. */
const planDecisions = new WeakMap<SpawnPlan, () => readonly EgressDecision[]>();

export function getPlanEgressDecisions(plan: SpawnPlan): readonly EgressDecision[] {
  return planDecisions.get(plan)?.() ?? [];
}

export function getPlanSecrets(plan: SpawnPlan): ReadonlyArray<{ readonly value: string; readonly label: string }> {
  return planSecrets.get(plan) ?? [];
}

/*
 * bash sources ~/.bashrc even for `bash -c` when it believes sshd started it: stdin is a
 * socket (Node's stdio pipes are socketpairs, so every background run's stdin is one) or
 * SSH_CLIENT is set. A command must not pick up the user's interactive start-up files, so bash
 * always gets --norc --noprofile; other shells read no start-up file for `-c` (ENV is stripped).
 */
/*
 * Descriptors the gateway inherited without close-on-exec (`execgate run ... 200<secret`, a
 * host that forked it holding files open) would reach the command and everything it starts,
 * sandbox or not: a hidden file stays readable through an open descriptor. Node opens its own
 * descriptors close-on-exec, so what arrives above 2 is exactly what was never meant for the
 * command: closed before the shell starts (inherited-fds.ts).
 */
export { CLOSE_FDS } from './inherited-fds';

/** "Did you mean" for each reference no source knew, as `<<kind:name>>` (names only, never values). */
async function getSuggestions(refs: RefStore, resolved: ReadonlyArray<{ kind: RefKind; id: string; ref: string; found: boolean }>): Promise<Map<string, readonly string[]>> {
  const unknown = resolved.filter((each) => !each.found);
  const suggested = await Promise.all(unknown.map((each) => refs.suggest(each.kind, each.id)));
  return new Map(unknown.map((each, index) => [each.ref, Object.freeze(suggested[index]!.map((name) => `<<${each.kind}:${name}>>`))]));
}

/** The launch with the egress proxy's files bound in, and the mount check told where they go. */
function withEgressBinds(launch: SandboxLaunch, bwrapArgs: readonly string[]): SandboxLaunch {
  const binds = [...launch.check.binds];
  for (let i = 0; i < bwrapArgs.length; i++) {
    if (bwrapArgs[i] === '--ro-bind' || bwrapArgs[i] === '--bind') {
      binds.push({ source: bwrapArgs[i + 1] as string, dest: bwrapArgs[i + 2] as string });
      i += 2;
    }
  }
  return Object.freeze({ ...launch, options: Object.freeze([...launch.options, ...bwrapArgs]), check: Object.freeze({ ...launch.check, binds: Object.freeze(binds) }) });
}

export function getShellFlags(shell: string): string[] {
  return /(^|\/)bash$/.test(shell) ? ['--norc', '--noprofile'] : [];
}

export function createRunId(): string {
  return `run_${Date.now().toString(36)}_${randomBytes(6).toString('hex')}`;
}

const REF_ENV_PREFIX = 'EXECGATE_REF_';

export async function preparePlan(context: PrepareContext, input: unknown, runId = createRunId()): Promise<SpawnPlan> {
  const { policy } = context;
  const request = normalizeRequest(input, { cwd: context.cwd, shell: context.shell, policy });
  context.onNormalized?.(request, runId);

  if (!context.supportedModes.has(request.mode)) {
    throw new ExecgateError(
      'EXECGATE_ERR_MODE_UNAVAILABLE',
      `The \`${request.mode}\` mode is not available in this version of execgate; use ${[...context.supportedModes].map((m) => `\`${m}\``).join(' or ')}.`,
      { mode: request.mode },
    );
  }
  // A mode the policy turns off is a policy decision (decideRequest), audited as a denial.
  // One reading of the shell text, before any source is asked for a value: the policy decides on
  // it, and every token that could not be substituted safely is refused here too.
  const tokens = scanTokens(request.command, { alias: policy.secrets.alias });
  const analysis = readShell(request.command, tokens);
  const refuse = (refusal: Decision): never => {
    throw new ExecgateError(
      'EXECGATE_ERR_POLICY_DENIED',
      `The policy (${policy.source}) refused this command: ${refusal.reason ?? 'no rule allows it'}${refusal.rule ? ` (rule \`${refusal.rule}\`)` : ''}. Nothing was run.`,
      {
        rule: refusal.rule,
        reason: refusal.reason,
        // Names only: which references the refused command asked for (for the audit log).
        refs: [...new Map(tokens.map((t) => [`${t.kind}:${t.id}`, { kind: t.kind, id: t.id, ref: `<<${t.kind}:${t.id}>>` }])).values()],
      },
    );
  };
  const decision = decideRequest(policy, request, tokens, analysis);
  context.onDecision?.(decision, request, runId);
  if (!decision.allowed) refuse(decision);

  validateRequestedEnv(request.env, policy.env.requestable);
  validateTokenPlacements(analysis);

  const usedRefs = tokens.map((token) => `${token.kind}:${token.id}`);
  const sandboxed = await planSandbox({
    settings: policy.sandbox,
    context: context.sandbox ?? { home: getHome(context.env) },
    cwd: request.cwd,
    // The writable roots are the gateway's, never the request's: `cwd.roots`, else the
    // gateway's own working directory (sandbox/paths.ts says why).
    roots: policy.cwd.roots,
    workspace: context.cwd,
    env: context.env,
    pty: request.pty,
    // A run holding a value bound to hosts (`delivery: env`) shares no loopback with other runs:
    // a relay another run serves there would carry the value to any host, under that run's rules.
    ownNetwork: policy.secrets.bind.some((binding) => binding.delivery === 'env' && usedRefs.includes(binding.ref)),
  });

  // Traffic leaves a sandboxed run with a private namespace only through the egress proxy, which
  // applies `sandbox.network` (open: every public host; allowlist: the listed ones). `none`: no
  // proxy, nothing leaves.
  const report = sandboxed.report;
  const wantsProxy = report.sandboxed && report.network.mode === 'none' && policy.network.mode !== 'none';
  const egressProxy = wantsProxy ? context.egress?.(request.mode) : undefined;
  // No proxy for this run (the gateway has none to give): loopback only, and bound secrets are
  // refused below.
  const proxied = egressProxy !== undefined;
  // Secrets bound to hosts (`secrets.bind`) are checked before any store is asked: one that could
  // never reach its hosts, or a run that could not be held to them, refuses the request here.
  const egressCheck = checkEgress({
    network: policy.network,
    bindings: policy.secrets.bind,
    refs: usedRefs,
    sandboxed: proxied,
  });
  const sanitized = sanitizeEnv({
    ...getSanitizerSettings(policy.env),
    inherited: context.env,
    requested: request.env,
    replace: request.envMode === 'replace',
    set: policy.env.set,
    path: policy.env.path,
    pty: request.pty,
  });
  // A restricted secret's program must not be found through a PATH entry a run can write.
  const lookup = decideProgramLookup(policy, tokens, analysis, sanitized.env.PATH, getRunWritable(sandboxed.report));
  if (lookup) refuse(lookup);
  const resolution = await context.refs.resolveTokens(tokens);
  validateUnknownRefs(policy, resolution.refs);

  const redactor = new Redactor({ minLength: policy.secrets.minLength });
  const secrets: Array<{ value: string; label: string }> = [];
  const mask = (value: string, label: string): void => {
    redactor.add(value, label);
    secrets.push({ value, label });
  };
  const replacements: Replacement[] = [];
  const injected: Record<string, string> = {};
  const envNames = new Map<string, string>();
  const fingerprints = new Map<string, string>();
  const indexed: Array<{ ref: RefUse; index: number }> = [];
  for (const { ref, index, value } of revealValues(resolution.refs, policy.secrets.minLength, 'run')) {
    indexed.push({ ref, index });
    if (context.fingerprint) fingerprints.set(ref.ref, context.fingerprint(value));
    const envName = `${REF_ENV_PREFIX}${index}`;
    envNames.set(`${ref.kind}:${ref.id}`, envName);
    injected[envName] = value;
    mask(value, `${ref.kind}:${ref.id}`);
  }
  for (const token of resolution.tokens) {
    const envName = envNames.get(`${token.kind}:${token.id}`);
    // A reference no source knew goes on as its text, quoted where bash would parse it.
    replacements.push(envName ? { token, envName } : { token, literal: true });
  }
  const suggestions = await getSuggestions(context.refs, resolution.refs);
  const body = replacements.length > 0 ? substituteTokens(request.command, replacements, analysis) : request.command;
  // The prologue shares the command's first line, so the shell's own messages (`line 1: x: command
  // not found`) number the lines as the caller wrote them; a newline keeps the epilogue out of
  // the command's last line (a trailing comment, say).
  const prologue = request.prologue.replace(/[\s;]+$/, '');
  const script = `${prologue ? `${prologue}; ` : ''}${body}${request.epilogue ? `\n${request.epilogue}` : ''}`;
  validateCommandLength(script);

  for (const { name, value } of sanitized.passedSecrets) {
    if (value.length >= policy.secrets.minLength) mask(value, `env:${name}`);
  }
  // Withheld values never reach the child, but the child may meet them another way (a file,
  // a second reference); mask them too when they are long enough to mask meaningfully.
  // A removed variable with a secret's name (an allowlist drops EXECGATE_SECRET_* as `removed`)
  // is masked for the same reason, and so is every EXECGATE_SECRET_* value of the gateway's own
  // environment: the env source hands those out, so they are known secrets whether or not this
  // run's environment would have carried them.
  const inheritedOrRequested = { ...(request.envMode === 'replace' ? {} : context.env), ...request.env };
  const removedSecrets = sanitized.removed.filter((name) => isSecretName(name));
  for (const name of [...sanitized.withheld, ...removedSecrets]) {
    const value = inheritedOrRequested[name];
    if (typeof value === 'string' && value.length >= policy.secrets.minLength) mask(value, `env:${name}`);
  }
  for (const [name, value] of Object.entries(context.env)) {
    if (isExecgateSecretName(name) && typeof value === 'string' && value.length >= policy.secrets.minLength) mask(value, `env:${name}`);
  }
  // A parent proxy's password (the gateway's HTTPS_PROXY, or the policy's) is a secret of the gateway.
  for (const password of getParentPasswords(context.env, policy.network.upstream)) {
    if (password.length >= policy.secrets.minLength) mask(password, 'env:HTTPS_PROXY');
  }
  // Values earlier runs met: a file, file name or socket one run filled with a value reaches the
  // caller masked when this run prints it. Labels this run registered first stay.
  if (context.remembered) {
    const own = secrets.length;
    for (const [value, label] of context.remembered.entries()) {
      if (value.length >= policy.secrets.minLength) mask(value, label);
    }
    // The first label a value got in this run is the one its output shows: remembered so.
    const first = new Map<string, string>();
    for (const { value, label } of secrets.slice(0, own)) if (!first.has(value)) first.set(value, label);
    for (const [value, label] of first) context.remembered.remember(value, label);
  }

  // The run's proxy endpoint, opened only now that every value is known. An injected secret's
  // variable holds its sentinel: the value stays in the gateway (the proxy and the redactor).
  let egress: RunEgress | undefined;
  if (proxied) {
    const values = new Map<string, string>();
    for (const { ref, index } of indexed) values.set(`${ref.kind}:${ref.id}`, injected[`${REF_ENV_PREFIX}${index}`]!);
    egress = await openRunEgress(egressProxy!, {
      runId, network: policy.network, check: egressCheck, values, shared: sandboxed.shared,
      ownSocket: context.handsOver?.(request.mode) === true, minLength: policy.secrets.minLength,
    });
    for (const [ref, sentinel] of egress.sentinels) {
      const envName = envNames.get(ref);
      if (envName) injected[envName] = sentinel;
    }
  }
  const env: Record<string, string> = { ...sanitized.env, ...injected, ...egress?.sandbox.env, [RUN_ID_VARIABLE]: runId };
  if (sandboxed.report.sandboxed) {
    // The gateway's own proxy settings (a parent proxy and its credentials) are the egress
    // proxy's to use: a sandbox gets the egress proxy's variables, or none.
    for (const name of Object.keys(env)) {
      if (/proxy/i.test(name) && egress?.sandbox.env[name] === undefined) delete env[name];
    }
  }
  // Node's fetch goes through the proxy by a preload, added to whatever NODE_OPTIONS the run has.
  const nodeOptions = egress?.sandbox.nodeOptions;
  if (nodeOptions) env.NODE_OPTIONS = env.NODE_OPTIONS ? `${env.NODE_OPTIONS} ${nodeOptions}` : nodeOptions;

  // Inherited descriptors are closed by a bash that then becomes the shell (one exec more), not
  // in the script itself: bash quotes the whole first line of a script with a syntax error, and
  // the caller's command must not arrive prefixed; and a shell other than bash cannot close fds
  // above 9. (No /bin/bash, as on a minimal system: SECURITY.md says inherited descriptors pass.)
  // Only when this process holds one: otherwise there is nothing to close (inherited-fds.ts).
  // Sandboxed runs have their gate close them (sandbox/gate.ts).
  const closer = sandboxed.launch ? [] : getDescriptorCloser();
  const inner = [...closer, request.shell, ...getShellFlags(request.shell), '-c', script];
  // A run with a bridge of its own has the bridge run the shell (see egress/bridge.ts); the
  // proxy's files are bound in after the sandbox's own mounts.
  const program = egress ? egress.sandbox.wrap(inner) : inner;
  const launch = sandboxed.launch && egress ? withEgressBinds(sandboxed.launch, egress.sandbox.bwrapArgs) : sandboxed.launch;
  // The whole exec as the kernel will see it (values resolved, variables inherited): one coded
  // error for cold and warm runs alike, not E2BIG somewhere in the spawn chain.
  try {
    validateExecSize(launch ? [...launch.launcher, ...program] : program, env);
  } catch (error) {
    await egress?.run.close().catch(() => undefined);
    throw error;
  }
  const plan: SpawnPlan = Object.freeze({
    runId,
    request,
    displayCommand: request.command,
    shell: program[0] as string,
    args: Object.freeze(program.slice(1)),
    env: Object.freeze(env),
    cwd: request.cwd,
    redactor,
    refs: Object.freeze(resolution.refs.map(({ kind, id, ref, found, source }) => Object.freeze({ kind, id, ref, found, source, ...(suggestions.has(ref) ? { suggestions: suggestions.get(ref) } : {}) }))),
    auditRefs: Object.freeze(
      resolution.refs.map(({ kind, id, ref, found, source }) =>
        Object.freeze({ kind, id, ref, found, source, ...(fingerprints.has(ref) ? { fingerprint: fingerprints.get(ref) } : {}) }),
      ),
    ),
    decision,
    envReport: Object.freeze({
      removed: Object.freeze([...sanitized.removed]),
      withheld: Object.freeze([...sanitized.withheld]),
      reported: Object.freeze([...sanitized.reported]),
    }),
    leftovers: request.leftovers === 'keep' && policy.modes.background.allowed ? 'keep' : 'kill',
    // The namespace has loopback only whatever the policy; what the run reaches is the egress mode.
    sandbox: sandboxed.report.sandboxed
      ? Object.freeze({ ...sandboxed.report, network: Object.freeze({ ...sandboxed.report.network, mode: proxied ? policy.network.mode : 'none' as const }) })
      : sandboxed.report,
    network: describeRunNetwork({
      network: policy.network,
      bindings: policy.secrets.bind,
      refs: usedRefs,
      sandboxed: sandboxed.report.sandboxed,
      proxied,
      shared: sandboxed.report.sandboxed && sandboxed.report.network.shared,
      ...(proxied ? { parent: egressProxy!.getParentFor(policy.network) } : {}),
    }),
    ...(launch ? { launch } : {}),
    limits: Object.freeze({
      timeout: request.timeout,
      grace: request.grace,
      drainTimeout: policy.drainTimeout,
      maxOutput: request.maxOutput,
      maxFileBytes: policy.output.maxFileBytes,
    }),
  });
  planSecrets.set(plan, Object.freeze(secrets));
  if (egress) {
    planEgress.set(plan, Object.freeze({ check: egressCheck, sentinels: egress.sentinels }));
    const run = egress.run;
    planDecisions.set(plan, () => run.decisions());
    planReleases.set(plan, () => run.close());
    planHandOffs.set(plan, () => run.handOff());
  }
  return plan;
}
