/*
 * Values that stay in the gateway, kept current while a run lives. A secret delivered by
 * injection (`delivery: inject`) or an AWS credential signed with at the proxy (`aws-sigv4`) is
 * used by the egress proxy for as long as the run makes requests; when a credential-process
 * source (`secrets.sources`) answered for it, the value expires (an hour-long STS session, a
 * short-lived token) while a long background run still needs it. Every `REFRESH_POLL_MS` the
 * plan asks that source again (its own cache answers until a quarter of the value's life is
 * left, then it runs its program: refs/sources/process.ts), and a new value replaces the old one
 * at the proxy (EgressRun.replaceValue) and in the run's masker. The run holds only the sentinel
 * or placeholder, which stays. A source that fails then leaves the old value in use: requests
 * fail at the server once it has expired, as they would without a refresh.
 */
import { parseAwsCredential } from '../egress/aws';
import type { AwsCredential } from '../egress/sigv4';
import type { RefKind } from '../refs/types';

/** How often a run's refreshable values are checked (a cache lookup unless a refresh is due). */
export const REFRESH_POLL_MS = 1000;

/** Asks the credential-process sources only (never the keyring or the vault): a value, or undefined. */
export type RefreshValue = (kind: RefKind, id: string) => Promise<string | undefined>;

export interface Refreshable {
  /** `secret:NAME`. */
  readonly ref: string;
  /** An injected value: the sentinel the run holds. */
  readonly sentinel?: string;
  /** An AWS credential: the placeholder of each part the run holds. */
  readonly parts?: ReadonlyMap<keyof AwsCredential, string>;
}

/** Starts the checks; the returned function stops them (the run's endpoint closes or is handed off). */
export function startRefresh(options: {
  readonly items: readonly Refreshable[];
  readonly refresh: RefreshValue;
  readonly replace: (sentinel: string, value: string) => boolean;
  readonly mask: (value: string, label: string) => void;
  readonly periodMs?: number;
}): () => void {
  if (options.items.length === 0) return () => undefined;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void Promise.all(options.items.map(async (item) => {
      const colon = item.ref.indexOf(':');
      let value: string | undefined;
      try {
        value = await options.refresh(item.ref.slice(0, colon) as RefKind, item.ref.slice(colon + 1));
      } catch {
        return; // the old value stays in use (see above)
      }
      if (value === undefined) return;
      if (item.sentinel !== undefined) {
        options.mask(value, item.ref);
        options.replace(item.sentinel, value);
        return;
      }
      let real: AwsCredential;
      try {
        real = parseAwsCredential(item.ref, value);
      } catch {
        return;
      }
      // The run's placeholder set is fixed: a credential that gained or lost a session token is not taken.
      if ((real.sessionToken === undefined) !== !item.parts?.has('sessionToken')) return;
      for (const [part, placeholder] of item.parts ?? []) {
        const next = real[part];
        if (next === undefined) continue;
        options.mask(next, item.ref);
        options.replace(placeholder, next);
      }
    })).finally(() => { busy = false; });
  }, options.periodMs ?? REFRESH_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
