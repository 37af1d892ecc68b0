/*
 * The state directory is hidden from every run, and the one path of the view the gateway creates
 * when it is missing: a run that could create it could plant a vault key the gateway would later
 * trust. Once a gateway has seen it, it is never created again: a state directory that vanished or
 * was replaced (another device and inode) was moved by someone, and re-creating an empty one
 * would leave the real one, under its new name, outside everything hidden.
 */
import { mkdirSync, statSync, type Stats } from 'node:fs';
import { ExecgateError } from '../errors';

/** Checks the state directory, creates it (0700) when missing and notes its identity the first time. */
export function ensureStateDir(home: string, identity: { id?: string } | undefined): void {
  checkStateDir(home, identity);
  try {
    mkdirSync(home, { recursive: true, mode: 0o700 });
    if (identity && identity.id === undefined) identity.id = identify(statSync(home));
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_ERR_STATE_DIR',
      `The state directory ${home} could not be created (${(error as NodeJS.ErrnoException).code ?? 'error'}); the sandbox must hide it, so nothing was run.`,
      { home },
      { cause: error },
    );
  }
}

function identify(stats: Stats): string {
  return `${stats.dev}:${stats.ino}`;
}

/** A state directory this gateway saw before must still be the same directory. */
function checkStateDir(home: string, identity: { id?: string } | undefined): void {
  if (identity?.id === undefined) return;
  let now: string | undefined;
  try {
    now = identify(statSync(home));
  } catch {
    now = undefined;
  }
  if (now === identity.id) return;
  throw new ExecgateError(
    'EXECGATE_ERR_STATE_DIR',
    `The state directory ${home} ${now === undefined ? 'has vanished' : 'was replaced by another directory'} since this gateway started (it may have been moved, with the vault and keys in it). It is not re-created: find where it went, move it back or restart the gateway. Nothing was run.`,
    { home },
  );
}
