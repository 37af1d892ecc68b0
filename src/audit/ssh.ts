/*
 * SSH agent answers (`ssh.sign`, one per signature or refusal of a run's agent) in a run's review:
 * which key signed for which server's host key, or why it refused. Identical answers are kept once
 * with a count, as egress decisions are (egress.ts). Fingerprints and host names only: a record
 * never holds a key.
 */
import type { ChainRecord } from './chain';

export const SSH_SIGN_EVENT = 'ssh.sign';

/** Distinct answers kept per run; more are counted in `dropped`. */
const MAX_DISTINCT = 200;

export interface SshSignLog {
  readonly entries: Array<{ readonly text: string; count: number }>;
  total: number;
  dropped: number;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '?';
}

/** `signed with SHA256:... (secret:deploy) for host key SHA256:... (git.example.com:22)`, or `refused ...: why`. */
export function formatSshSign(record: Record<string, unknown>): string {
  const hosts = Array.isArray(record.hosts) ? record.hosts.filter((host): host is string => typeof host === 'string').join(', ') : '';
  const key = record.key === undefined ? 'no key of the agent' : `${text(record.key)}${typeof record.ref === 'string' ? ` (${record.ref})` : ''}`;
  const host = record.hostKey === undefined ? 'no bound session' : `host key ${text(record.hostKey)}`;
  const head = record.allowed === true ? `signed with ${key} for ${host}` : `refused ${key}, ${host}`;
  return `${head}${hosts ? ` (bound to ${hosts})` : ''}${record.allowed === true ? '' : `: ${text(record.reason)}`}`;
}

export function addSshSign(log: SshSignLog | undefined, record: ChainRecord): SshSignLog {
  const target: SshSignLog = log ?? { entries: [], total: 0, dropped: 0 };
  const line = formatSshSign(record);
  target.total++;
  const found = target.entries.find((entry) => entry.text === line);
  if (found) found.count++;
  else if (target.entries.length >= MAX_DISTINCT) target.dropped++;
  else target.entries.push({ text: line, count: 1 });
  return target;
}
