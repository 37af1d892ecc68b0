/*
 * The sandbox step of the one path (plan/prepare.ts calls it once per run): decide whether the
 * run is sandboxed, how, or why not, and describe how its sandbox is started (a SandboxLaunch:
 * bubblewrap's launcher, its spec, and the mount check the gate applies before the program
 * may start; gate.ts). Sync, PTY and background runs (the detached supervisor included) all
 * start their program through that one launch.
 *
 * `required` with no sandbox possible: EXECGATE_ERR_SANDBOX_UNAVAILABLE, before any reference is
 * resolved, so nothing runs and no store is asked. `auto`: the run goes ahead unsandboxed and
 * the plan says why (result, audit record, a one-time warning from the gateway).
 */
import { homedir } from 'node:os';
import { ExecgateError } from '../errors';
import type { SandboxSettings } from '../policy/effective';
import { getSandboxSpec, NAMESPACES } from './args';
import { checkPlatform } from './detect';
import type { SandboxLaunch } from '../process/bwrap/launch';
import type { BwrapSpec } from '../process/bwrap/spec';
import type { SharedNetwork } from '../process/bwrap/network';
import { getFilesystemView, type FilesystemView } from './paths';
import { getSeccompFilterPath } from '../process/programs';

/**
 * How a run was sandboxed (mechanism, namespaces, network mode, what was hidden or skipped), or why
 * it was not.
 */
export type SandboxReport =
  | {
    readonly sandboxed: true;
    readonly mechanism: 'bubblewrap';
    readonly helper: string;
    readonly namespaces: readonly string[];
    /**
     * `mode`: what the run may reach (`none`: nothing; `open` / `allowlist`: through the egress
     * proxy; plan/prepare.ts sets it from the egress policy), over a loopback-only namespace;
     * `shared` says whether the gateway's runs share it.
     */
    readonly network: { readonly mode: 'none' | 'open' | 'allowlist'; readonly shared: boolean; readonly namespace?: string };
    readonly hidden: readonly string[];
    readonly writable: readonly string[];
    readonly readOnly: readonly string[];
    /** Listed paths that do not exist here. */
    readonly skipped: readonly string[];
    /** What the sandbox does not cover for this run (said, not hidden). */
    readonly exposed: readonly string[];
    /** The working directory, and whether the run may write there (outside the writable roots it is read-only). */
    readonly cwd: { readonly path: string; readonly writable: boolean };
    /** Whether the run has the system call filter (scripts/generate-seccomp.py) and no nested user namespaces. */
    readonly seccomp: boolean;
  }
  | { readonly sandboxed: false; readonly mode: 'auto' | 'off'; readonly reason: string };

/** What the gateway knows that a plan needs: where its state is, its shared network. */
export interface SandboxContext {
  readonly home: string;
  readonly auditPath?: string;
  /** The gateway's shared network namespace for this helper; absent = one per run. */
  readonly network?: (helper: string) => SharedNetwork;
  /** The state directory's identity once seen (see paths.ts); owned by the gateway. */
  readonly stateIdentity?: { id?: string };
  /** The policy files in force, read-only inside every run. */
  readonly policyFiles?: () => readonly string[];
  /** Told once per reason when `auto` runs a command unsandboxed. */
  readonly onUnsandboxed?: (reason: string) => void;
  /** Told when a run gets a network namespace of its own because the shared one cannot be entered. */
  readonly onUnshared?: () => void;
}

export interface SandboxInput {
  readonly settings: SandboxSettings;
  readonly context: SandboxContext;
  readonly cwd: string;
  /** `cwd.roots` of the policy. */
  readonly roots: readonly string[];
  /** The gateway's working directory: the writable root when `roots` is empty. */
  readonly workspace: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly pty: boolean;
  /** A network namespace of the run's own, never the gateway's shared one (a run holding a `delivery: env` bound secret). */
  readonly ownNetwork?: boolean;
  /** The run will reach the network through the egress proxy (its listener is opened with the shared namespace). */
  readonly egress?: boolean;
}

export interface SandboxedCommand {
  readonly report: SandboxReport;
  /** How the sandbox is started (absent when unsandboxed). */
  readonly launch?: SandboxLaunch;
  /** The gateway's shared network namespace, when the run joins it. */
  readonly shared?: SharedNetwork;
}

/*
 * Tests only: change what bubblewrap is told after the plan (and its mount check) is made, so
 * that a test can make a sandbox differ from its plan and see the gate refuse it.
 */
let specHook: ((spec: BwrapSpec) => BwrapSpec) | undefined;

export function setSandboxSpecHookForTests(hook: ((spec: BwrapSpec) => BwrapSpec) | undefined): void {
  specHook = hook;
}

function unavailable(reason: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_SANDBOX_UNAVAILABLE',
    `The policy requires a sandbox (sandbox.mode: required) and none can be started: ${reason}. Nothing was run.`,
    { reason },
  );
}

/**
 * Whether a run could work in `cwd` under these settings: the file-system checks a plan makes
 * (hidden paths, the host's temp directory, runtime directories), without planning a run. The
 * MCP bash tool asks before it follows a `cd` made inside a run.
 */
export function checkSandboxCwd(input: Omit<SandboxInput, 'pty' | 'ownNetwork'>): void {
  if (input.settings.mode === 'off') return;
  getView(input);
}

/** The file-system view of a run in `input.cwd` (sandbox/paths.ts), with the gateway's protected files. */
function getView(input: Omit<SandboxInput, 'pty' | 'ownNetwork'>, protectedFiles?: readonly string[]): FilesystemView {
  return getFilesystemView({
    settings: input.settings,
    home: input.context.home,
    auditPath: input.context.auditPath,
    cwd: input.cwd,
    roots: input.roots,
    workspace: input.workspace,
    env: input.env,
    userHome: homedir(),
    stateIdentity: input.context.stateIdentity,
    ...(protectedFiles ? { protectedFiles } : {}),
  });
}

export async function planSandbox(input: SandboxInput): Promise<SandboxedCommand> {
  const { settings } = input;
  if (settings.mode === 'off') {
    return { report: Object.freeze({ sandboxed: false, mode: 'off', reason: 'the policy turns the sandbox off (sandbox.mode: off)' }) };
  }
  const platform = checkPlatform(settings.helper);
  if (!platform.ok) {
    if (settings.mode === 'required') throw unavailable(platform.reason);
    input.context.onUnsandboxed?.(platform.reason);
    return { report: Object.freeze({ sandboxed: false, mode: 'auto', reason: platform.reason }) };
  }
  // The shared namespace's holder (and the egress listener's process) start first: they are
  // other processes, and the view below is this one's work, done while they start.
  const sharing = settings.network === 'none' && !input.ownNetwork;
  const shared: SharedNetwork | undefined = sharing ? input.context.network?.(platform.helper) : undefined;
  const joining = shared?.join({ listener: input.egress === true });
  joining?.catch(() => undefined);
  const view = getView(input, input.context.policyFiles?.() ?? []);
  const exposed: string[] = [];
  let join;
  if (sharing) {
    join = await joining;
    if (shared && !join) input.context.onUnshared?.();
  } else if (view.abstractBus) {
    exposed.push('the D-Bus session bus is an abstract socket, reachable with the host network (sandbox.network: open in a policy built in code)');
  }
  const seccomp = getSeccompFilterPath();
  const { spec, check } = getSandboxSpec({ view, cwd: view.cwd, unshareNet: settings.network === 'none' && join === undefined, pty: input.pty, ...(seccomp ? { seccomp } : {}) });
  const launch: SandboxLaunch = Object.freeze({
    launcher: Object.freeze(join ? [...join.prefix] : [platform.helper]),
    spec: specHook ? Object.freeze(specHook(spec)) : spec,
    // Joined by the holder's pid: the gate checks the run is in the namespace the plan names.
    check: join ? Object.freeze({ ...check, network: join.namespace }) : check,
  });
  const report: SandboxReport = {
    sandboxed: true,
    mechanism: 'bubblewrap',
    helper: platform.helper,
    namespaces: Object.freeze(settings.network === 'none' ? [...NAMESPACES, 'net'] : [...NAMESPACES]),
    network: Object.freeze({ mode: settings.network, shared: join !== undefined, ...(join ? { namespace: join.namespace } : {}) }),
    hidden: Object.freeze(view.hidden.map((h) => h.path)),
    // Each private temp directory (/tmp, /var/tmp, the gateway's own) by name, then the writable roots.
    writable: Object.freeze([...view.privateTmp.map((path) => `${path} (private)`), ...view.writable]),
    readOnly: Object.freeze(view.readOnly),
    skipped: view.skipped,
    exposed: Object.freeze(exposed),
    cwd: Object.freeze({ path: view.cwd, writable: view.cwdWritable }),
    seccomp: seccomp !== undefined,
  };
  return { report: Object.freeze(report), launch, ...(join && shared ? { shared } : {}) };
}
