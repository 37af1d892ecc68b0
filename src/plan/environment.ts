/*
 * The environment step's helpers: the shell's flags and the run's final environment.
 */
import type { SandboxEgress } from '../egress/bridge';

/*
 * bash sources ~/.bashrc even for `bash -c` when it believes sshd started it: stdin is a
 * socket (Node's stdio pipes are socketpairs, so every background run's stdin is one) or
 * SSH_CLIENT is set. A command must not pick up the user's interactive start-up files, so bash
 * always gets --norc --noprofile; other shells read no start-up file for `-c` (ENV is stripped).
 */
export function getShellFlags(shell: string): string[] {
  return /(^|\/)bash$/.test(shell) ? ['--norc', '--noprofile'] : [];
}

/**
 * The run's environment once its egress is known: in a sandbox the gateway's own proxy settings
 * give way to the egress proxy's, and Node's fetch gets the proxy's preload.
 */
export function getRunEnv(env: Record<string, string>, sandboxEgress: SandboxEgress | undefined, sandboxed: boolean): Record<string, string> {
  if (sandboxed) {
    // The gateway's own proxy settings (a parent proxy and its credentials) are the egress
    // proxy's to use: a sandbox gets the egress proxy's variables, or none.
    for (const name of Object.keys(env)) {
      if (/proxy/i.test(name) && sandboxEgress?.env[name] === undefined) delete env[name];
    }
  }
  // Node's fetch goes through the proxy by a preload, added to whatever NODE_OPTIONS the run has.
  const nodeOptions = sandboxEgress?.nodeOptions;
  if (nodeOptions) env.NODE_OPTIONS = env.NODE_OPTIONS ? `${env.NODE_OPTIONS} ${nodeOptions}` : nodeOptions;
  return env;
}
