/*
 * Real bash as an oracle, in a PID namespace of its own: every process a script starts dies with
 * it. A script may leave processes behind (a coprocess, `cmd &`, a `setsid` daemon) or hang past
 * its bound; spawnSync's timeout kills only the process it started, so without the namespace
 * those descendants lived on beside the rest of the suite. Here `unshare --pid --fork
 * --kill-child` starts a small init (`sh`) that runs bash and exits with its status; when the
 * init exits the kernel kills everything else in the namespace, and when unshare itself is killed
 * (the timeout), --kill-child takes the init down with it. Bash is not the init (it is pid 2), so
 * the script runs with the signal handling and `$$` of an ordinary shell.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** A user namespace only where one is needed to make a PID namespace (not root). */
const UNSHARE = ['--pid', '--fork', '--kill-child', ...(process.getuid?.() === 0 ? [] : ['--user', '--map-root-user'])];

export interface OracleOptions {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** A bound on a hang: the whole namespace is killed after it. */
  readonly timeoutMs: number;
}

/** Run `script` with `bash -c` in a PID namespace of its own; nothing it started outlives the call for long. */
export function runBashOracle(script: string, options: OracleOptions): SpawnSyncReturns<Buffer> {
  const result = spawnSync('unshare', [...UNSHARE, '--', '/bin/sh', '-c', '"$@"; exit $?', 'sh', 'bash', '--norc', '--noprofile', '-c', script], {
    cwd: options.cwd,
    env: options.env,
    stdio: 'ignore',
    timeout: options.timeoutMs,
    killSignal: 'SIGKILL',
  });
  if (result.error && (result.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT') throw result.error;
  return result;
}

/** Host pids (not zombies) whose command line holds `marker`. */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(marker)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && state !== 'X') found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
