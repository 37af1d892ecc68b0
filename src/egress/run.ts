/*
 * The one call the sandboxed run makes for its network: after the plan's references are
 * resolved, open the run's proxy socket with the run's policy and bound secrets, and get back
 * what the sandbox builder needs (bubblewrap arguments, the child's proxy variables, the argv
 * wrapper) plus the sentinel each injected reference's variable holds instead of its value.
 * The caller closes `run` when the run has ended.
 */
import { getSandboxEgress, type SandboxEgress } from './bridge';
import { createInjections, type EgressCheck } from './plan';
import type { EgressProxy, EgressRun } from './proxy';
import type { NetworkPolicy } from './rules';

export interface RunEgress {
  readonly run: EgressRun;
  readonly sandbox: SandboxEgress;
  /** `secret:NAME` -> the sentinel to put where the value would have gone. */
  readonly sentinels: ReadonlyMap<string, string>;
}

export async function openRunEgress(proxy: EgressProxy, options: {
  runId: string;
  network: NetworkPolicy;
  check: EgressCheck;
  /** Resolved values by reference (`secret:NAME`); only the injected ones are used. */
  values: ReadonlyMap<string, string>;
  port?: number;
}): Promise<RunEgress> {
  const injections = createInjections(options.check, options.values);
  const run = await proxy.openRun({ runId: options.runId, network: options.network, narrowing: options.check.narrowing, injections });
  return Object.freeze({
    run,
    sandbox: getSandboxEgress(run, { port: options.port }),
    sentinels: new Map(injections.map((injection) => [injection.ref, injection.sentinel])),
  });
}
