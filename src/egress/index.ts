/*
 * Egress control: the network path of a sandboxed run. See SECURITY.md ("Egress") for what it
 * guarantees and where it stops.
 */
export { parseHostPattern, parseHostPatterns, matchesHost, normalizeHost, type HostPattern } from './hosts';
export {
  decideDestination, OPEN_NETWORK, NO_NETWORK,
  type NetworkPolicy, type NetworkMode, type SecretBinding, type Delivery, type Verdict,
} from './rules';
export { checkEgress, createInjections, type EgressCheck, type Injection } from './plan';
export { createSentinel } from './sentinel';
export { getAddressRefusal, resolveAllowed, systemResolver, type Resolver } from './address';
export { createEgressCa, type EgressCa } from './ca';
export { EgressProxy, type EgressDecision, type EgressProxyOptions, type EgressRun, type EgressRunOptions } from './proxy';
export { getSandboxEgress, SharedBridge, EGRESS_MOUNT, SOCKET_MOUNT, DEFAULT_BRIDGE_PORT, type SandboxEgress, type NamespaceLauncher } from './bridge';
export { EGRESS_AUDIT_EVENT, getEgressAuditFields } from './audit';
export { openRunEgress, getSharedBridge, type RunEgress } from './run';
