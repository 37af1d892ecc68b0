/*
 * Egress decisions as audit records (`egress.decision`, one per connection and per intercepted
 * request), filed under the run they belong to so that `audit show RUN_ID` and the HTML report
 * tell the run's network story next to its command. Names and rules only: a decision never holds
 * a value or a sentinel.
 */
import type { EgressDecision } from './proxy';

export const EGRESS_AUDIT_EVENT = 'egress.decision';

export function getEgressAuditFields(decision: EgressDecision): Record<string, unknown> {
  return {
    runId: decision.runId,
    via: decision.via,
    host: decision.host,
    port: decision.port,
    allowed: decision.allowed,
    rule: decision.rule,
    ...(decision.address !== undefined ? { address: decision.address } : {}),
    ...(decision.method !== undefined ? { method: decision.method } : {}),
    ...(decision.status !== undefined ? { status: decision.status } : {}),
    ...(decision.injected && decision.injected.length > 0 ? { injected: [...decision.injected] } : {}),
    ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
    ...(decision.parent !== undefined ? { parent: decision.parent } : {}),
    ...(decision.resigned !== undefined ? { resigned: true, aws: { ...decision.resigned } } : {}),
  };
}
