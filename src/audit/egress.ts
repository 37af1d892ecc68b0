/*
 * Egress decisions (`egress.decision`, one per connection or proxied request) in a run's review.
 * A run may make many requests to one host: identical decisions are kept once with a count, so
 * `audit show` and the report say "allowed api.example.test:443 ... x3" instead of folding three
 * requests into what reads like one. Distinct decisions keep the order of their first record.
 */
import type { ChainRecord } from './chain';

export const EGRESS_DECISION_EVENT = 'egress.decision';

/** Distinct decisions kept per run; more are counted in `dropped`, never silently merged. */
const MAX_DISTINCT = 500;

export interface EgressEntry {
  readonly allowed: boolean;
  readonly via: string;
  readonly host: string;
  readonly port: number;
  readonly rule: string;
  readonly method?: string;
  readonly status?: number;
  readonly injected?: readonly string[];
  readonly sentinelElsewhere?: readonly string[];
  readonly bodyNotInjected?: boolean;
  /** Why it was refused (records from before reasons have none). */
  readonly reason?: string;
  /** The parent proxy it left through. */
  readonly parent?: string;
  /** How many records made exactly this decision. */
  count: number;
}

export interface EgressLog {
  readonly entries: EgressEntry[];
  /** Decisions recorded: the sum of the counts plus the dropped ones. */
  total: number;
  /** Decisions past MAX_DISTINCT distinct ones (counted only). */
  dropped: number;
  readonly index: Map<string, EgressEntry>;
}

function names(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 ? value.filter((item): item is string => typeof item === 'string') : undefined;
}

export function readEgressEntry(record: ChainRecord): Omit<EgressEntry, 'count'> {
  return {
    allowed: record.allowed === true,
    via: typeof record.via === 'string' ? record.via : '?',
    host: typeof record.host === 'string' ? record.host : '?',
    port: typeof record.port === 'number' ? record.port : 0,
    rule: typeof record.rule === 'string' ? record.rule : '?',
    ...(typeof record.method === 'string' ? { method: record.method } : {}),
    ...(typeof record.status === 'number' ? { status: record.status } : {}),
    ...(names(record.injected) ? { injected: names(record.injected) } : {}),
    ...(names(record.sentinelElsewhere) ? { sentinelElsewhere: names(record.sentinelElsewhere) } : {}),
    ...(record.bodyNotInjected === true ? { bodyNotInjected: true } : {}),
    ...(typeof record.reason === 'string' ? { reason: record.reason } : {}),
    ...(typeof record.parent === 'string' ? { parent: record.parent } : {}),
  };
}

export function addEgressDecision(log: EgressLog | undefined, record: ChainRecord): EgressLog {
  const target: EgressLog = log ?? { entries: [], total: 0, dropped: 0, index: new Map<string, EgressEntry>() };
  const entry = readEgressEntry(record);
  const key = JSON.stringify(entry);
  target.total++;
  const found = target.index.get(key);
  if (found) found.count++;
  else if (target.entries.length >= MAX_DISTINCT) target.dropped++;
  else {
    const added: EgressEntry = { ...entry, count: 1 };
    target.entries.push(added);
    target.index.set(key, added);
  }
  return target;
}

/** One line: `allowed api.example.test:443 via connect, GET 200, rule allow:api.example.test, injected secret:gh` (names only). */
export function formatEgressEntry(entry: Omit<EgressEntry, 'count'>): string {
  const parts = [`${entry.allowed ? 'allowed' : 'denied'} ${entry.host}:${entry.port} via ${entry.via}`];
  if (entry.method !== undefined || entry.status !== undefined) parts.push([entry.method, entry.status].filter((p) => p !== undefined).join(' '));
  parts.push(`rule ${entry.rule}`);
  if (entry.injected) parts.push(`injected ${entry.injected.join(' ')}`);
  if (entry.sentinelElsewhere) parts.push(`sentinel of ${entry.sentinelElsewhere.join(' ')} sent as is (host not bound)`);
  if (entry.bodyNotInjected) parts.push('encoded body sent with the sentinel');
  if (entry.parent) parts.push(`through parent proxy ${entry.parent}`);
  if (entry.reason) parts.push(`why: ${entry.reason}`);
  return parts.join(', ');
}

/** The entry with its count: `... x3` when a decision was made more than once. */
export function formatEgressCounted(entry: EgressEntry): string {
  return `${formatEgressEntry(entry)}${entry.count > 1 ? `  x${entry.count}` : ''}`;
}
