/*
 * Starting a command on a pseudo-terminal with node-pty, loaded on first use so that hosts that
 * never ask for a PTY never load the native module. node-pty makes the child a session leader
 * with the terminal as its controlling TTY, so its pid is also its process group id and the
 * same group kill and cookie sweep apply as for pipes.
 */
import { constants as osConstants } from 'node:os';
import type { IPty } from '@lydell/node-pty';
import { ExecgateError } from '../errors';
import type { SpawnPlan } from './prepare';

let nodePty: typeof import('@lydell/node-pty') | undefined;

function loadNodePty(): typeof import('@lydell/node-pty') {
  if (!nodePty) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      nodePty = require('@lydell/node-pty') as typeof import('@lydell/node-pty');
    } catch (error) {
      throw new ExecgateError(
        'EXECGATE_ERR_MODE_UNAVAILABLE',
        `PTY mode needs the node-pty module, which could not be loaded (${(error as Error).message}). Reinstall execgate so that the prebuilt @lydell/node-pty package for this platform is installed.`,
        { mode: 'pty' },
        { cause: error },
      );
    }
  }
  return nodePty;
}

export function spawnPty(plan: SpawnPlan): IPty {
  const pty = loadNodePty();
  const env = { ...plan.env };
  if (!env.TERM) env.TERM = 'xterm-256color';
  try {
    return pty.spawn(plan.shell, [...plan.args], {
      name: env.TERM,
      cols: plan.request.cols,
      rows: plan.request.rows,
      cwd: plan.cwd,
      env,
      encoding: null,
    } as Parameters<typeof pty.spawn>[2]);
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_ERR_SPAWN_FAILED',
      `Could not start \`${plan.shell}\` on a pseudo-terminal in \`${plan.cwd}\`: ${(error as Error).message}.`,
      { shell: plan.shell },
      { cause: error },
    );
  }
}

/** node-pty reports signals as numbers (0 = none). */
export function getSignalName(signal: number | undefined): NodeJS.Signals | null {
  if (!signal) return null;
  const entry = Object.entries(osConstants.signals).find(([, number]) => number === signal);
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null;
}
