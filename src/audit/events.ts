/*
 * The one list of audit event types. Writers (the gateway, background runs, the CLI) and the
 * review code (runs.ts, search, stats, the report) both read it, so a writer cannot record an
 * event that review silently misreads: test/audit/events.test.ts finds every event name written
 * anywhere in src/ and fails when one is missing here.
 *
 * Each event has a role, which is all the reader needs to fold it into a run:
 * - `request`   a run was asked for (exec.request)
 * - `started`   the policy allowed it and it was spawned (refs, env, decision)
 * - `denied`    the policy refused it; ends the run
 * - `rejected`  execgate refused it as invalid before any decision; ends the run
 * - `ended`     the run ended with an exit status (sync, PTY or background); ends the run
 * - `failed`    the run could not be run or could not be waited for; ends the run
 * - `run`       something else that happened to a run (stdin written, a kill asked for)
 * - `lifecycle` the gateway starting and stopping: hidden by `audit search` unless asked
 * - `change`    what commands can resolve or what the policy is changed (recorded before the
 *               change is made; `change.failed` follows one that then could not be made)
 * - `chain`     the log's own bookkeeping (a crash leftover set aside)
 */

export type AuditEventRole = 'request' | 'started' | 'denied' | 'rejected' | 'ended' | 'failed' | 'run' | 'lifecycle' | 'change' | 'chain';

export const AUDIT_EVENTS = Object.freeze({
  'exec.request': 'request',
  'exec.started': 'started',
  'exec.denied': 'denied',
  'exec.rejected': 'rejected',
  'exec.finished': 'ended',
  'exec.failed': 'failed',
  'background.started': 'run',
  'background.write': 'run',
  'background.kill': 'run',
  'background.ended': 'ended',
  'egress.decision': 'run',
  'secret.source': 'run',
  'ssh.sign': 'run',
  'gateway.started': 'lifecycle',
  'gateway.stopped': 'lifecycle',
  'policy.loaded': 'lifecycle',
  'policy.rejected': 'change',
  'secret.set': 'change',
  'secret.removed': 'change',
  'vault.rotated': 'change',
  'change.failed': 'change',
  'chain.resumed': 'chain',
} as const satisfies Record<string, AuditEventRole>);

export type AuditEventName = keyof typeof AUDIT_EVENTS;

const ROLES: ReadonlyMap<string, AuditEventRole> = new Map(Object.entries(AUDIT_EVENTS));

export function isAuditEventName(event: string): event is AuditEventName {
  return ROLES.has(event);
}

/** The role of an event; an event this version does not know is something that happened to its run. */
export function getEventRole(event: string): AuditEventRole {
  return ROLES.get(event) ?? 'run';
}

/** Roles that close a run: nothing more is expected under its run id. */
export function isTerminalRole(role: AuditEventRole): boolean {
  return role === 'denied' || role === 'rejected' || role === 'ended' || role === 'failed';
}

/**
 * Gateway start/stop rows: what `audit search` leaves out unless `--all` or `--event` asks. A
 * policy *reloaded* while running is a change a reviewer wants to see, so only the load at
 * start counts as lifecycle.
 */
export function isLifecycleRecord(event: string, record: { reload?: unknown }): boolean {
  if (getEventRole(event) !== 'lifecycle') return false;
  return event !== 'policy.loaded' || record.reload !== true;
}
