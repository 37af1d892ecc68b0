/*
 * The audit sink a gateway writes to: the host's choice (a sink, a config, or `false`), else
 * what the policy says (off, or a file under the state directory with its rotation settings).
 */
import { join } from 'node:path';
import { getErrorCode, getErrorMessage, isExecgateError } from '../errors';
import { AuditLog, NULL_AUDIT, type AuditConfig, type AuditSink } from './log';

/** Where and how the audit log is written, as a policy may set it. */
export interface AuditSettings {
  readonly enabled: boolean;
  /** Default `$EXECGATE_HOME/audit.log`. */
  readonly path?: string;
  /** `file` or `stdout`; unset = the audit log's default (file). */
  readonly destination?: 'file' | 'stdout';
  /** Rotation size in bytes (0 = off); unset = the audit log's default. */
  readonly maxBytes?: number;
  /** Rotated files kept (0 = all); unset = the audit log's default. */
  readonly maxFiles?: number;
  /** When records reach the disk; unset = the audit log's default (`before-spawn`). */
  readonly fsync?: 'always' | 'before-spawn' | 'never';
}

export type AuditOption = false | AuditConfig | AuditSink | undefined;

export function createAudit(option: AuditOption, home: string, settings: AuditSettings, env: NodeJS.ProcessEnv): AuditSink {
  if (option === false) return NULL_AUDIT;
  if (option && typeof (option as AuditSink).write === 'function') return option as AuditSink;
  // The host's choice wins; without one, the policy says whether and where.
  if (option === undefined && !settings.enabled) return NULL_AUDIT;
  const { destination, maxBytes, maxFiles, fsync } = settings;
  const config = (option ?? {
    ...(destination !== undefined ? { destination } : {}),
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    ...(maxFiles !== undefined ? { maxFiles } : {}),
    ...(fsync !== undefined ? { fsync } : {}),
  }) as AuditConfig;
  return new AuditLog({ ...config, path: config.path ?? settings.path ?? join(home, 'audit.log'), home, env });
}

/** A policy file refused at start: recorded where the audit log would be, if it can be. */
export function recordPolicyRejected(option: AuditOption, home: string, settings: AuditSettings, file: string, error: unknown, env: NodeJS.ProcessEnv): void {
  try {
    const audit = createAudit(option, home, settings, env);
    audit.write('policy.rejected', {
      source: file,
      code: getErrorCode(error),
      problems: isExecgateError(error) ? error.details.problems : undefined,
      message: getErrorMessage(error),
      reload: false,
    });
    if (audit !== option) audit.close();
  } catch {
    // The policy error is what the caller needs to see; an audit log that cannot be written
    // (no state directory) must not replace it.
  }
}
