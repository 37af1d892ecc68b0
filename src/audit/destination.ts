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
  if (destination === 'stdout') return pinoModule.destination({ dest: 1, sync: true });
  return pinoModule.transport(destination as pino.TransportSingleOptions);
}

/*
 * Closing. A destination (the record's only home besides the chain state) is flushed and ended,
 * waiting for its worker. A forward copy is best effort and must not hold up a close: when its
 * worker never became ready (its collector has been unreachable since the start), flushSync and
 * end would each block for up to 10 s on a worker that is not reading. Such a copy is ended
 * once the worker becomes ready, and the worker no longer keeps the process alive: a host that
 * keeps running still delivers the lines; one that exits first loses them from the copy only
 * (the local file has them, and `audit verify --against` names the gap).
 */
interface WorkerStream {
  readonly ready?: boolean;
  once?(event: 'ready', listener: () => void): unknown;
  unref?(): unknown;
}

export function closeAuditStream(stream: AuditStream, owned: boolean, options: { bestEffort?: boolean } = {}): void {
  const worker = stream as AuditStream & WorkerStream;
  if (owned && options.bestEffort && worker.ready === false && worker.once !== undefined) {
    worker.once('ready', () => {
      try {
        stream.end?.();
      } catch {
        // the worker ended meanwhile
      }
    });
    worker.unref?.();
    return;
  }
  try {
    stream.flushSync?.();
  } catch {
    // a transport whose worker already ended
  }
  if (owned) stream.end?.();
}
