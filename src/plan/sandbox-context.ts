/*
 * What a gateway lends every run it sandboxes: its state directory and audit log (kept out of
 * the run's view), its policy files (read-only inside), one private network namespace per
 * sandbox helper shared by its runs (each holder listed with the watchdog, so that it dies with
 * the gateway), and a warning told once per reason when `sandbox.mode: auto` runs a command
 * unsandboxed.
 */
import { SharedNetwork, type SandboxContext } from '../sandbox';
import { takePrestartedSharedNetwork } from '../process/bwrap/network';
import { joinMemory } from '../sandbox/detect';
import { watchRun } from '../process/watchdog';

export interface GatewaySandboxOptions {
  readonly home: string;
  readonly auditPath?: string;
  readonly policyFiles: () => readonly string[];
  readonly warn: (obj: object, msg: string) => void;
}

export interface GatewaySandbox {
  readonly context: SandboxContext;
  /** Ends the shared network namespaces (the gateway is closing). */
  close(): void;
  /**
   * A run failed to set its sandbox up: a shared namespace used on a remembered probe's word (not
   * probed by this process) is probed now, and ended and forgotten if entering it fails, so that
   * the next run starts another (which probes, and falls back to a namespace per run). Resolves
   * once that is decided: the failed run's error is told after it, so a retry finds it settled.
   */
  dropUnverified(): Promise<void>;
}


export function createGatewaySandbox(options: GatewaySandboxOptions): GatewaySandbox {
  const networks = new Map<string, SharedNetwork>();
  const warned = new Set<string>();
  const context: SandboxContext = Object.freeze({
    home: options.home,
    ...(options.auditPath !== undefined ? { auditPath: options.auditPath } : {}),
    stateIdentity: {},
    policyFiles: options.policyFiles,
    network: (helper: string): SharedNetwork => {
      let network = networks.get(helper);
      // One the CLI started ahead of the gateway (network.ts prestartSharedNetwork), else a new one.
      if (!network) networks.set(helper, (network = takePrestartedSharedNetwork(helper) ?? new SharedNetwork(helper, ({ value }) => watchRun(value), joinMemory(options.home, helper))));
      return network;
    },
    onUnshared: (): void => {
      const reason = 'shared-network';
      if (warned.has(reason)) return;
      warned.add(reason);
      options.warn({ reason }, 'The runs of this gateway do not share a network namespace: the shared one could not be started or entered, so each run gets a loopback of its own (a server one run starts is not reachable from the next). The exec.started records say network.shared: false.');
    },
    onUnsandboxed: (reason: string): void => {
      if (warned.has(reason)) return;
      warned.add(reason);
      options.warn({ reason }, `Commands run WITHOUT the OS sandbox (sandbox.mode: auto): ${reason}. Use sandbox.mode: required to refuse them instead.`);
    },
  });
  return {
    context,
    close: () => {
      for (const network of networks.values()) network.close();
    },
    dropUnverified: async () => {
      await Promise.all([...networks].filter(([, network]) => network.unverified).map(async ([helper, network]) => {
        if (!(await network.reprobe()) && networks.get(helper) === network) networks.delete(helper);
      }));
    },
  };
}
