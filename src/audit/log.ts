/*
 * The audit log: one JSON line per event, written with pino through a synchronous destination,
 * so a record is on its way to the kernel before the call that produced it continues (the
 * request record is written before the command spawns). Records carry unresolved commands,
 * reference names and environment variable names only, never values.
 */
import { dirname } from 'node:path';
import pino from 'pino';
import { ensureDir } from '../home';

export type AuditFields = Record<string, unknown>;

export interface AuditSink {
  write(event: string, fields: AuditFields): void;
  close(): void;
  /** Keyed fingerprint of a resolved value, proving which version was used without revealing it. */
  fingerprint?(value: string): string;
}

export interface AuditOptions {
  /** File path (JSON lines, created 0600). */
  readonly path: string;
}

export class AuditLog implements AuditSink {
  readonly path: string;
  readonly #logger: pino.Logger;
  readonly #destination: pino.DestinationStream & { flushSync?: () => void; end?: () => void };

  constructor(options: AuditOptions) {
    this.path = options.path;
    ensureDir(dirname(options.path));
    this.#destination = pino.destination({ dest: options.path, sync: true, mkdir: true, mode: 0o600 } as Parameters<typeof pino.destination>[0]);
    this.#logger = pino(
      {
        base: null,
        messageKey: 'message',
        // The time is the record's first field (written below), not pino's epoch number.
        timestamp: false,
        // Every record opens with the record format version instead of pino's numeric level.
        formatters: { level: () => ({ v: 1 }) },
      },
      this.#destination,
    );
  }

  write(event: string, fields: AuditFields): void {
    this.#logger.info({ time: new Date().toISOString(), event, ...fields });
  }

  close(): void {
    this.#destination.end?.();
  }
}

/** A sink that records nothing (audit turned off). */
export const NULL_AUDIT: AuditSink = Object.freeze({ write() { /* off */ }, close() { /* off */ } });
