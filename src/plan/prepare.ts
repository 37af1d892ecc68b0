/*
 * The one path. Every mode (sync, pty, background) goes through `preparePlan`; executors only
 * adapt I/O. Its steps' helpers sit beside it (types.ts, secrets.ts, environment.ts, egress.ts,
 * resources.ts for what the plan owns). Order matters and is the security argument of execgate:
 *   validate -> policy decision -> sandbox plan -> resolve references -> build the child
 *   environment -> build the redactor -> SpawnPlan.
 * The sandbox is planned before any store is asked for a value, so a run the policy requires to
 * be sandboxed and that cannot be fails without resolving anything. When sandboxed, the plan's
 * `launch` says how bubblewrap starts around `shell`/`args`: every executor starts them through
 * it (process/bwrap/gate.ts), so sync, PTY and background runs get the same sandbox and mount check.
 * Nothing is spawned before the plan exists, and a plan exists only if every step succeeded.
 * The plan holds resolved values only inside the child environment and the redactor; the
 * command it carries for display, logs and audit is the unresolved one.
 */
import { randomFillSync } from 'node:crypto';
import { ExecgateError } from '../errors';
import { describeRunNetwork } from '../egress/describe';
import { checkEgress, type Injection } from '../egress/plan';
import { openRunEgress, type RunEgress } from '../egress/run';
import type { RunSsh } from '../egress/ssh/run';
import type { LookupContext, RefKind } from '../refs/types';
import { sanitizeEnv, validateRequestedEnv } from '../env';
import { Redactor } from '../redact';
import { substituteTokens, validateTokenPlacements, type Replacement } from '../refs/substitute';
import { readShell } from '../shell';
import { PARK, PARK_CLOSING } from '../process/park';
import { scanTokens } from '../refs/tokens';
import { decideProgramLookup, decideRequest, type Decision } from '../policy/decide';
import { getRunWritable } from '../policy/program-path';
import { getSanitizerSettings } from '../policy/env-settings';
import { validateUnknownRefs } from '../policy/unknown-refs';
import { planSandbox } from '../sandbox';
import { getHome } from '../home';
import { normalizeRequest, validateCommandLength } from './options';
import { getDescriptorCloser } from '../process/inherited-fds';
import { validateExecSize } from './arg-limits';
import { revealValues } from './resolve';
import { RUN_ID_VARIABLE } from '../process/terminate';
import { resolveAwsBindings, type AwsBindings } from './aws';
import { startRefresh, type Refreshable } from './refresh';
import { withEgressBinds } from './egress';
import { getRunEnv, getShellFlags } from './environment';
import { PlanResources, type PlanEndpoint } from './resources';
import { getSuggestions, maskGatewaySecrets } from './secrets';
import type { ResolvedRef } from '../refs/store';
import type { PrepareContext, RefUse, SpawnPlan } from './types';

export type { AuditedRefUse, EnvReport, PrepareContext, RefUse, SpawnPlan } from './types';
export { getShellFlags } from './environment';

/*
 * Descriptors the gateway inherited without close-on-exec (`execgate run ... 200<secret`, a
 * host that forked it holding files open) would reach the command and everything it starts,
 * sandbox or not: a hidden file stays readable through an open descriptor. Node opens its own
 * descriptors close-on-exec, so what arrives above 2 is exactly what was never meant for the
 * command: closed before the shell starts (inherited-fds.ts).
 */
export { CLOSE_FDS } from '../process/inherited-fds';




/*
 * A run id's random part is cut from a pool of random bytes filled 256 ids at a time (each part
 * used once): one randomBytes call per run cost more than the rest of the id (about 30 µs).
 */
const RUN_ID_BYTES = 6;
const runIdPool = Buffer.alloc(RUN_ID_BYTES * 256);
let runIdOffset = runIdPool.length;

export function createRunId(): string {
  if (runIdOffset === runIdPool.length) {
    randomFillSync(runIdPool);
    runIdOffset = 0;
  }
  const random = runIdPool.toString('hex', runIdOffset, runIdOffset + RUN_ID_BYTES);
  runIdOffset += RUN_ID_BYTES;
  return `run_${Date.now().toString(36)}_${random}`;
}

const REF_ENV_PREFIX = 'EXECGATE_REF_';
const PARKING_SHELLS = /(^|\/)(bash|sh|dash|ksh|mksh|zsh)$/;
/*
 * The shells trusted to close their inherited descriptors themselves (process/park.ts): bash at
 * its system paths only. A request names any executable as its shell, and one merely named
 * `bash` (a script in the workspace: `#!/bin/sh` and `cat /proc/self/fd/200`) would get them
 * unclosed, ahead of its first line; every other shell is started through the closing bash.
 */
const SYSTEM_BASH = new Set(['/bin/bash', '/usr/bin/bash']);

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
    // Through the shared namespace's listener: proxied, and not a run another process will serve.
    egress: policy.network.mode !== 'none' && context.egress !== undefined && context.handsOver?.(request.mode) !== true,
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
  // A run that will intercept needs the proxy's CA before it starts: its keys are made on the
  // thread pool while the references resolve.
  if (proxied && egressCheck.injected.length > 0) egressProxy.prepareInterception();
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
  const isWritable = getRunWritable(sandboxed.report);
  const lookup = decideProgramLookup(policy, tokens, analysis, sanitized.env.PATH, isWritable);
  if (lookup) refuse(lookup);
  // A source program (secrets.sources) found where this run could write is refused.
  const resolution = await context.refs.resolveTokens(tokens, { runId, isWritable });
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
  // A parked shell waits for the gateway's word first (SpawnPlan.parked): an unsandboxed run on
  // pipes, with no bridge of its own, in a shell that reads the POSIX sh language.
  const parked = context.park === true && sandboxed.launch === undefined && !proxied && request.mode === 'sync' && !request.pty && PARKING_SHELLS.test(request.shell);
  // A parked bash closes inherited descriptors itself, first (process/park.ts).
  const closesOwn = parked && SYSTEM_BASH.has(request.shell);
  const script = `${parked ? (closesOwn ? PARK_CLOSING : PARK) : ''}${prologue ? `${prologue}; ` : ''}${body}${request.epilogue ? `\n${request.epilogue}` : ''}`;
  validateCommandLength(script);

  maskGatewaySecrets(mask, secrets, { context, request, sanitized, redactor, carry: (value, label) => void secrets.push({ value, label }) });

  // The run's proxy endpoint, opened only now that every value is known. An injected secret's
  // variable holds its sentinel: the value stays in the gateway (the proxy and the redactor).
  let egress: RunEgress | undefined;
  let stopRefresh = (): void => undefined;
  if (proxied) {
    // AWS bindings go to every proxied run, named in its command or not (plan/aws.ts).
    const aws = await resolveAwsBindings(context.refs, policy.secrets.bind, { runId, isWritable }, mask);
    const values = new Map<string, string>();
    for (const { ref, index } of indexed) values.set(`${ref.kind}:${ref.id}`, injected[`${REF_ENV_PREFIX}${index}`]);
    egress = await openRunEgress(egressProxy, {
      runId, network: policy.network, bindings: policy.secrets.bind, check: egressCheck, values, shared: sandboxed.shared,
      ownSocket: context.handsOver?.(request.mode) === true, minLength: policy.secrets.minLength,
      ...(aws ? { extraInjections: aws.injections } : {}),
    });
    if (aws) Object.assign(injected, aws.env(egress.sandbox.env.SSL_CERT_FILE));
    for (const [ref, sentinel] of egress.sentinels) {
      const envName = envNames.get(ref);
      if (envName) injected[envName] = sentinel;
    }
    stopRefresh = startPlanRefresh(context, egress, resolution.refs, aws, mask, { runId, isWritable });
  }
  // The policy's SSH keys (`delivery: ssh-agent`): an agent of the gateway for every sandboxed
  // run, the keys resolved here and held by the agent only (egress/ssh/run.ts). A run another
  // process will hold (a detached background run) gets its directory here and its agent there.
  let ssh: RunSsh | undefined;
  if (sandboxed.launch && policy.secrets.bind.some((binding) => binding.delivery === 'ssh-agent')) {
    // Loaded on first need: ssh2 stays unloaded for policies without SSH keys.
    const { openRunSsh } = require('../egress/ssh/run') as typeof import('../egress/ssh/run');
    try {
      ssh = await openRunSsh({
        runId,
        bindings: policy.secrets.bind,
        lookup: async (ref) => {
          const [kind, ...name] = ref.split(':');
          const found = await context.refs.lookup(kind as RefKind, name.join(':'));
          if (!found.found || !found.value) return undefined;
          const value = found.value.reveal();
          mask(value, ref);
          return value;
        },
        ...(context.onSshSign ? { onSign: context.onSshSign } : {}),
        serve: context.handsOver?.(request.mode) !== true,
      });
    } catch (error) {
      await egress?.run.close().catch(() => undefined);
      throw error;
    }
  }
  const env = getRunEnv({ ...sanitized.env, ...injected, ...egress?.sandbox.env, ...ssh?.env, [RUN_ID_VARIABLE]: runId }, egress?.sandbox, sandboxed.report.sandboxed);

  // Inherited descriptors are closed by a bash that then becomes the shell (one exec more), not
  // in the script itself: bash quotes the whole first line of a script with a syntax error, and
  // the caller's command must not arrive prefixed; and a shell other than bash cannot close fds
  // above 9. (No /bin/bash, as on a minimal system: SECURITY.md says inherited descriptors pass.)
  // Only when this process holds one: otherwise there is nothing to close (inherited-fds.ts).
  // Sandboxed runs have their gate close them (process/bwrap/gate.ts); a parked bash, its park.
  const closer = sandboxed.launch || closesOwn ? [] : getDescriptorCloser();
  const inner = [...closer, request.shell, ...getShellFlags(request.shell), '-c', script];
  // A run with a bridge of its own has the bridge run the shell (see egress/bridge.ts); the
  // proxy's files are bound in after the sandbox's own mounts.
  const program = egress ? egress.sandbox.wrap(inner) : inner;
  const extraMounts = [...(egress?.sandbox.mounts ?? []), ...(ssh?.mounts ?? [])];
  const launch = sandboxed.launch && extraMounts.length > 0 ? withEgressBinds(sandboxed.launch, extraMounts) : sandboxed.launch;
  // The whole exec as the kernel will see it (values resolved, variables inherited): one coded
  // error for cold and warm runs alike, not E2BIG somewhere in the spawn chain.
  try {
    validateExecSize(launch ? [...launch.launcher, ...program] : program, env);
  } catch (error) {
    await egress?.run.close().catch(() => undefined);
    await ssh?.close().catch(() => undefined);
    throw error;
  }
  const endpoint = egress ? withRefreshStopped(egress.run, stopRefresh) : undefined;
  const resources = new PlanResources(secrets, egress && endpoint ? { check: egressCheck, sentinels: egress.sentinels, endpoint } : undefined, ssh);
  const plan: SpawnPlan = Object.freeze({
    runId,
    request,
    displayCommand: request.command,
    shell: program[0],
    args: Object.freeze(program.slice(1)),
    parked,
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
      ...(proxied ? { parent: egressProxy.getParentFor(policy.network) } : {}),
    }),
    ...(launch ? { launch } : {}),
    limits: Object.freeze({
      timeout: request.timeout,
      grace: request.grace,
      drainTimeout: policy.drainTimeout,
      maxOutput: request.maxOutput,
      maxFileBytes: policy.output.maxFileBytes,
    }),
    resources,
  });
  return plan;
}

/**
 * Keeps the values the proxy holds for this run current (plan/refresh.ts): injected references
 * and AWS credentials that a credential-process source answered.
 */
function startPlanRefresh(
  context: PrepareContext,
  egress: RunEgress,
  refs: readonly ResolvedRef[],
  aws: AwsBindings | undefined,
  mask: (value: string, label: string) => void,
  lookup: LookupContext,
): () => void {
  const ask = context.refreshValue;
  const names = context.refreshableSources?.();
  if (!ask || !names || names.size === 0) return () => undefined;
  const refresh = (kind: RefKind, id: string): Promise<string | undefined> => ask(kind, id, lookup);
  const items: Refreshable[] = [];
  for (const ref of refs) {
    const key = `${ref.kind}:${ref.id}`;
    const sentinel = egress.sentinels.get(key);
    if (sentinel !== undefined && ref.source !== undefined && names.has(ref.source)) items.push({ ref: key, sentinel });
  }
  for (const [ref, source] of aws?.sources ?? []) {
    if (!names.has(source)) continue;
    const parts = new Map<NonNullable<Injection['aws']>, string>();
    for (const injection of aws?.injections ?? []) if (injection.ref === ref && injection.aws) parts.set(injection.aws, injection.sentinel);
    items.push({ ref, parts });
  }
  return startRefresh({ items, refresh, replace: (sentinel, value) => egress.run.replaceValue(sentinel, value), mask });
}

/** The run's endpoint, its refresh stopped once it closes or is handed to another process. */
function withRefreshStopped(run: RunEgress['run'], stop: () => void): PlanEndpoint {
  return {
    decisions: () => run.decisions(),
    close: () => { stop(); return run.close(); },
    handOff: () => { stop(); return run.handOff(); },
    started: (pid: number) => run.started(pid),
  };
}
