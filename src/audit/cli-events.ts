/*
 * Audit records for changes made from the CLI to what commands can resolve: `secret.set`,
 * `secret.removed`, `vault.rotated`. Names, stores and key ids only: the callers never pass a
 * value, and nothing here could print one.
 */
import os from 'node:os';
import { getHome } from '../home';
import { AuditLog, type AuditFields } from './log';

function getCliActor(): string {
  try {
    return `cli:${os.userInfo().username}`;
  } catch {
    return `cli:uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

/** Write one record to `$EXECGATE_HOME/audit.log` (chain, lock and key as the gateway's). */
export function recordCliEvent(env: NodeJS.ProcessEnv, event: string, fields: AuditFields): void {
  const log = new AuditLog({ home: getHome(env), env });
  try {
    log.write(event, { actor: getCliActor(), ...fields });
  } finally {
    log.close();
  }
}
