/*
 * The shapes of the plan step: what a run used (RefUse), what preparePlan is given
 * (PrepareContext) and what it returns (SpawnPlan).
 */
import type { SshSignRecord } from '../egress/ssh/agent';
import type { RunNetwork } from '../egress/describe';
import type { EgressProxy } from '../egress/proxy';
import type { Decision } from '../policy/decide';
import type { EffectivePolicy, ExecMode } from '../policy/effective';
import type { SandboxLaunch } from '../process/bwrap/launch';
import type { MaskMemory, Redactor } from '../redact';
import type { RefStore } from '../refs/store';
import type { LookupContext, RefKind } from '../refs/types';
import type { SandboxContext, SandboxReport } from '../sandbox';
import type { NormalizedRequest } from './options';
import type { PlanResources } from './resources';

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
  /** Sandboxed: how bubblewrap is started around `shell` + `args` (process/bwrap/launch.ts). */
  readonly launch?: SandboxLaunch;
  /**
   * The shell starts parked: its script first reads one line from stdin and exits (125) at end
   * of input, then takes /dev/null as stdin. The run's spawner gives it a pipe and writes that
   * line only once the run's start record is durable (run/lifecycle.ts), so the spawn overlaps
   * the audit log's fdatasync and the command still acts only after it.
   */
  readonly parked: boolean;
  readonly limits: {
    readonly timeout: number;
    readonly grace: number;
    readonly drainTimeout: number;
    readonly maxOutput: number;
    readonly maxFileBytes: number;
  };
  /** What the plan owns besides its data (its secrets, its egress endpoint): resources.ts. */
  readonly resources: PlanResources;
}

export interface PrepareContext {
  readonly refs: RefStore;
  /**
   * Asks the policy's credential-process sources again for a reference one of them answered
   * (plan/refresh.ts): values injected or signed with at the proxy are kept current while the run
   * lives. Absent: they are fixed at the run's start.
   */
  readonly refreshValue?: (kind: RefKind, id: string, lookup: LookupContext) => Promise<string | undefined>;
  /** The names of the policy's credential-process sources in force (which answers are refreshable). */
  readonly refreshableSources?: () => ReadonlySet<string>;
  readonly policy: EffectivePolicy;
  /** The gateway's own environment: inherited by children (sanitized) and the env source. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly shell: string;
  /** Modes this gateway has an executor for. */
  readonly supportedModes: ReadonlySet<ExecMode>;
  /**
   * Park an unsandboxed pipe run's shell until the gateway releases it (SpawnPlan.parked): set
   * when the run's start record is made durable while the shell starts.
   */
  readonly park?: boolean;
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
  /** Called with each signature or refusal of the run's SSH agent (an `ssh.sign` record). */
  readonly onSshSign?: (record: SshSignRecord) => void;
}
