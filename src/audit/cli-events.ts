/*
 * Audit records for changes made from the CLI to what commands can resolve: `secret.set`,
 * `secret.removed`, `vault.rotated`, each written before the change is made, and
 * `change.failed` after one that then could not be made. Names, stores and key ids only: the callers never pass a
 * value, and nothing here could print one.
 */
import os from 'node:os';
import { ExecgateError, getErrorCode, isExecgateError } from '../errors';
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

/**
 * One change to what commands can resolve, recorded before it is made. `record` writes the
 * change's record (a failure to write it is an error that says nothing was changed, and the
 * caller then changes nothing); `failed` is for a change that was recorded and then could not be
 * made: it writes `change.failed` naming it, so the log never claims a change that did not
 * happen without saying so, and returns the error to throw, which says what the log holds.
 */
export class ChangeRecord {
  readonly #env: NodeJS.ProcessEnv;
  readonly #event: string;
  #fields: AuditFields | undefined;

  constructor(env: NodeJS.ProcessEnv, event: string) {
    this.#env = env;
    this.#event = event;
  }

  record(fields: AuditFields): void {
    try {
      recordCliEvent(this.#env, this.#event, fields);
    } catch (error) {
      if (!isExecgateError(error)) throw error;
      throw new ExecgateError(error.code, `${error.message.replace(/ Nothing is run while the audit log cannot be written\.$/, '')} Nothing was changed: a change is made only once the audit log has recorded it.`, { ...error.details }, { cause: error });
    }
    this.#fields = fields;
  }

  failed(error: unknown): unknown {
    if (this.#fields === undefined) return error;
    const fields = { ...this.#fields, failed: this.#event, code: getErrorCode(error) };
    try {
      recordCliEvent(this.#env, 'change.failed', fields);
      return error;
    } catch (auditError) {
      if (!isExecgateError(error)) return error;
      return new ExecgateError(
        error.code,
        `${error.message} The audit log records the change (\`${this.#event}\`) but could not record that it failed (${getErrorCode(auditError)}).`,
        { ...error.details },
        { cause: error },
      );
    }
  }
}
