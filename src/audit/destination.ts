/*
 * Where sealed lines go besides (or instead of) the audit file: stdout through pino's
 * synchronous destination, or any pino transport (pino-syslog, pino-socket, an HTTP collector's
 * transport, `pino/file`), which runs in a worker thread. Lines are the exact sealed bytes, so a
 * collector can verify the chain with the same key. pino is loaded only when one is configured.
 */
import type pino from 'pino';

/** A stream that accepts sealed JSON lines. */
export interface AuditStream {
  write(line: string): unknown;
  flushSync?(): void;
  end?(): void;
}

/** A pino transport configuration: `{target, options}`, `{targets: [...]}` or `{pipeline: [...]}`. */
export type AuditTransport = pino.TransportSingleOptions | pino.TransportMultiOptions | pino.TransportPipelineOptions;

/** `file` (default), `stdout`, a pino transport, or a stream. */
export type AuditDestination = 'file' | 'stdout' | AuditTransport | AuditStream;

export function isAuditStream(value: unknown): value is AuditStream {
  return typeof value === 'object' && value !== null && typeof (value as AuditStream).write === 'function';
}

export function isAuditTransport(value: unknown): value is AuditTransport {
  if (typeof value !== 'object' || value === null) return false;
  const object = value as Record<string, unknown>;
  return typeof object.target === 'string' || Array.isArray(object.targets) || Array.isArray(object.pipeline);
}

/** Open a non-file destination as a stream of lines. */
export function openAuditStream(destination: Exclude<AuditDestination, 'file'>): AuditStream {
  if (isAuditStream(destination)) return destination;
  const pinoModule = require('pino') as typeof pino;
  if (destination === 'stdout') return pinoModule.destination({ dest: 1, sync: true }) as unknown as AuditStream;
  return pinoModule.transport(destination as pino.TransportSingleOptions) as unknown as AuditStream;
}

export function closeAuditStream(stream: AuditStream, owned: boolean): void {
  try {
    stream.flushSync?.();
  } catch {
    // a transport whose worker already ended
  }
  if (owned) stream.end?.();
}
