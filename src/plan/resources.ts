/*
 * What a plan owns besides its data, in one object on the plan (`plan.resources`) instead of
 * tables beside it: the (value, label) pairs its redactor was built from, and its egress
 * endpoint (what the run's start fixed for its bound secrets, the decisions so far, the endpoint
 * to close or to hand to another process).
 *
 * Private fields, so that serialising or logging a plan never carries them (JSON shows `{}`);
 * only code that must rebuild the redactor in another process (the background supervisor) reads
 * the secrets. The endpoint is released once, where every run ends (the lifecycle), or handed off
 * once, to a detached run's supervisor, whose own proxy serves it at the same path (egress/proxy.ts
 * adoptRun): whichever comes first wins, and the other does nothing.
 */
import type { StartedEgress } from '../egress/plan';
import type { EgressDecision, HandedOffRun } from '../egress/proxy';
import type { HandedOffSsh } from '../egress/ssh/run';

export interface PlanSecret {
  readonly value: string;
  readonly label: string;
}

/** The run's endpoint on the gateway's egress proxy (egress/run.ts `RunEgress.run`). */
export interface PlanEndpoint {
  decisions(): readonly EgressDecision[];
  close(): Promise<void>;
  handOff(): HandedOffRun;
  /** The run's process started with this pid (raw TCP connections are traced to its tree). */
  started?(pid: number): void;
}

/** The run's SSH agent (egress/ssh/run.ts `RunSsh`). */
export interface PlanSsh {
  close(): Promise<void>;
  /** Present when another process will serve the agent (a detached background run). */
  handOff?(): HandedOffSsh;
}

export class PlanResources {
  readonly #secrets: ReadonlyArray<PlanSecret>;
  readonly #egress: StartedEgress | undefined;
  readonly #decisions: (() => readonly EgressDecision[]) | undefined;
  #release: (() => Promise<void>) | undefined;
  #handOff: (() => HandedOffRun) | undefined;
  #started: ((pid: number) => void) | undefined;

  /** The run's SSH agent (egress/ssh/run.ts): it ends with the run, or goes to the process that holds the run. */
  #ssh: PlanSsh | undefined;

  constructor(secrets: ReadonlyArray<PlanSecret> = [], egress?: StartedEgress & { readonly endpoint: PlanEndpoint }, ssh?: PlanSsh) {
    this.#secrets = Object.freeze([...secrets]);
    this.#ssh = ssh;
    if (egress) {
      const { endpoint } = egress;
      this.#egress = Object.freeze({ check: egress.check, sentinels: egress.sentinels });
      this.#decisions = () => endpoint.decisions();
      this.#release = () => endpoint.close();
      this.#handOff = () => endpoint.handOff();
      this.#started = (pid) => endpoint.started?.(pid);
    }
  }

  /** The (value, label) pairs the plan's redactor was built from. */
  get secrets(): ReadonlyArray<PlanSecret> {
    return this.#secrets;
  }

  /**
   * What the run's start fixed for its bound secrets (its egress check and injected sentinels),
   * for stdin data written to it later (input.ts). Absent: the run has no proxy.
   */
  get egress(): StartedEgress | undefined {
    return this.#egress;
  }

  /** The run's egress decisions so far (its proxy endpoint keeps them), for its result. */
  getEgressDecisions(): readonly EgressDecision[] {
    return this.#decisions?.() ?? [];
  }

  /** The run's process has started (its pid, outside its sandbox): for the egress proxy's raw TCP attribution. */
  started(pid: number): void {
    this.#started?.(pid);
  }

  /** Undo what the run holds (its egress endpoint); once, later calls do nothing. */
  async release(): Promise<void> {
    const release = this.#release;
    const ssh = this.#ssh;
    this.#release = undefined;
    this.#ssh = undefined;
    await Promise.all([release?.().catch(() => undefined), ssh?.close().catch(() => undefined)]);
  }

  /**
   * The SSH agent of a run another process holds (egress/ssh/run.ts adoptRunSsh serves it
   * there): its directory and keys go along, and releasing here does nothing after.
   */
  handOffSsh(): HandedOffSsh | undefined {
    const ssh = this.#ssh;
    this.#ssh = undefined;
    return ssh?.handOff?.();
  }

  /**
   * A run held by another process (the detached supervisor of a CLI background run) takes its
   * egress endpoint along: this process stops serving it, and releasing does nothing after.
   */
  handOffEgress(): HandedOffRun | undefined {
    const handOff = this.#handOff;
    this.#handOff = undefined;
    this.#release = undefined;
    return handOff?.();
  }
}
