/*
 * The state directory: audit log, vault, full-output files, background records. It holds
 * material only the invoking user may read, so it is created 0700.
 */
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ExecgateError } from './errors';

/** `$EXECGATE_HOME`, else `~/.execgate`. Pure: creates nothing. */
export function getHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.EXECGATE_HOME;
  if (configured !== undefined && configured !== '') return resolve(configured);
  return join(homedir(), '.execgate');
}

/** Create `dir` (and parents) with mode 0700 if missing; return it. */
export function ensureDir(dir: string): string {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_ERR_STATE_DIR',
      `Cannot create the state directory \`${dir}\`: ${(error as NodeJS.ErrnoException).code ?? String(error)}. Set EXECGATE_HOME to a writable directory.`,
      { path: dir },
      { cause: error },
    );
  }
  return dir;
}
