/*
 * The state directory: audit log, vault, full-output files, background records. It holds
 * material only the invoking user may read, so it is created 0700.
 */
import { mkdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ExecgateError } from './errors';
import { getSpecialKind } from './fs/special';

/** `$EXECGATE_HOME`, else `~/.execgate`, symlinks resolved. Pure: creates nothing. */
export function getHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.EXECGATE_HOME;
  return resolveHome(configured !== undefined && configured !== '' ? resolve(configured) : join(homedir(), '.execgate'));
}

/**
 * The state directory by its real path, fixed when a gateway starts: a symlink on the way to it
 * may lie where a run can write, and a run that re-pointed it would otherwise receive the
 * records and keys this gateway writes from then on.
 */
export function resolveHome(path: string): string {
  validateStateDir(path);
  let home = path;
  try {
    home = realpathSync.native(path);
  } catch {
    // Not there yet: created (0700) where it is named.
  }
  if (home !== path) validateStateDir(home);
  return home;
}

/** A state directory under /proc, /sys or /dev, or one that is a FIFO or device, is refused. */
function validateStateDir(dir: string): void {
  const kind = getSpecialKind(dir);
  if (kind !== undefined) {
    throw new ExecgateError(
      'EXECGATE_ERR_SPECIAL_FILE',
      `The state directory \`${dir}\` is ${kind}. Set EXECGATE_HOME to an ordinary writable directory.`,
      { path: dir, kind },
    );
  }
}

/** Create `dir` (and parents) with mode 0700 if missing; return it. */
export function ensureDir(dir: string): string {
  validateStateDir(dir);
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
