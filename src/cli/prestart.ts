/*
 * `execgate run` with the embedded default policy (sandboxed where bubblewrap runs, its traffic
 * through the egress proxy over the gateway's shared network namespace) starts that namespace's
 * holder and the egress listener's process first thing, before the gateway's modules load: they
 * are other processes (some 50 ms of waiting on a CLI run, most of it a node start inside the
 * namespace), and they start on the other core meanwhile. The gateway takes them when its run
 * asks for a shared namespace (plan/sandbox-context.ts); they are the same processes, entered and
 * checked the same way, as the gateway would start itself.
 *
 * Only where the outcome is known before the policy is read: no --policy and no $EXECGATE_POLICY
 * (a policy file may turn the sandbox or the network off), not a background run (it gets a
 * listener of its own), not help. Whatever else stops the command first (a refused request, a
 * usage error) only ends what was started: main.ts closes what no gateway took.
 */
import { closePrestartedSharedNetworks, prestartedStarted, prestartSharedNetwork } from '../process/bwrap/network';
import { watchRun } from '../process/watchdog';
import { checkPlatform, joinMemory } from '../sandbox/detect';
import { getHome } from '../home';

/** `execgate run` options that take a value (the next word). */
const WITH_VALUE = new Set(['--mode', '--cwd', '--timeout', '--env', '--shell', '--policy', '--cols', '--rows', '--ansi']);

/** Whether `argv` (after `execgate`) is a run with the embedded default policy that shares the gateway's listener. */
export function isDefaultPolicyRun(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  if (argv[0] !== 'run' || (env.EXECGATE_POLICY ?? '') !== '') return false;
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i];
    if (word === '--' || !word.startsWith('-')) return true;
    const [name, inline] = word.startsWith('--') && word.includes('=') ? [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)] : [word, undefined];
    if (name === '--policy' || name === '--help' || name === '-h') return false;
    if (!WITH_VALUE.has(name)) continue;
    const value = inline ?? argv[++i];
    if (name === '--mode' && value !== 'sync' && value !== 'pty') return false;
  }
  return true;
}

/** Starts the shared namespace and its listener for a default-policy run (see above); a no-op otherwise. */
export function prestartRun(argv: readonly string[], env: NodeJS.ProcessEnv): void {
  if (process.platform !== 'linux' || !isDefaultPolicyRun(argv, env)) return;
  try {
    // Asked with the state directory, as the gateway asks it: the same remembered answer, asked once.
    const home = getHome(env);
    const platform = checkPlatform(undefined, { stateDir: home });
    if (!platform.ok) return;
    prestartSharedNetwork(platform.helper, ({ value }) => watchRun(value), { listener: true }, joinMemory(home, platform.helper));
  } catch {
    // The gateway meets the same problem (a state directory it cannot use) and says so.
  }
}

/**
 * Lets the holder's start go on before the gateway's modules load: the event loop is held by that
 * loading for tens of milliseconds, and the holder's readiness would wait for it before the
 * listener's process and the probe are spawned. Bounded: a holder slow to start is not waited for.
 */
export function whenPrestarted(): Promise<void> {
  return prestartedStarted(PRESTART_WAIT_MS);
}

/** How long the CLI waits for the holder before loading the gateway (a holder starts in about 10 ms). */
const PRESTART_WAIT_MS = 50;

export { closePrestartedSharedNetworks };
