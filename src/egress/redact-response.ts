/*
 * Responses from a host an injected secret was sent to come back with the value removed, so a
 * server that echoes a request header or body cannot hand the value to the command. Headers are
 * redacted one by one; a body is redacted as a stream, decoded first when it is content-encoded
 * (gzip, deflate, br) and encoded again after. A body in any other encoding cannot be read, so it
 * is refused rather than passed on unread.
 */
import { Transform, type TransformCallback, type Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import {
  createBrotliCompress, createBrotliDecompress, createDeflate, createGunzip, createGzip, createInflate,
} from 'node:zlib';
import type { Redactor } from '../redact';

const CODECS: Record<string, { decode: () => Transform; encode: () => Transform }> = {
  gzip: { decode: createGunzip, encode: createGzip },
  'x-gzip': { decode: createGunzip, encode: createGzip },
  deflate: { decode: createInflate, encode: createDeflate },
  br: { decode: createBrotliDecompress, encode: createBrotliCompress },
};

/** True when a body with this Content-Encoding can be decoded and redacted. */
export function canRedactEncoding(encoding: string | undefined): boolean {
  const value = (encoding ?? '').trim().toLowerCase();
  return value === '' || value === 'identity' || value in CODECS;
}

/*
 * The Accept-Encoding sent on for a request whose response will be cleaned: the client's list cut
 * down to what the masker can read through (so a server has no reason to send anything else), or
 * `identity` alone when the binding asks for uncompressed responses.
 */
export function getAcceptedEncodings(given: string | undefined, identityOnly: boolean): string | undefined {
  if (identityOnly) return 'identity';
  if (given === undefined) return undefined;
  const kept = given.split(',').map((part) => part.trim()).filter((part) => {
    const name = part.split(';')[0]!.trim().toLowerCase();
    return name === 'identity' || name in CODECS;
  });
  return kept.length > 0 ? kept.join(', ') : 'identity';
}

export function redactHeaders(rawHeaders: readonly string[], redactor: Redactor, drop: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (drop.has(name.toLowerCase())) continue;
    out.push(name, redactor.redactString(rawHeaders[i + 1]!).text);
  }
  return out;
}

class RedactTransform extends Transform {
  readonly #stream;
  constructor(redactor: Redactor) {
    super();
    this.#stream = redactor.createStream();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const out = this.#stream.push(chunk);
    callback(null, out.length > 0 ? out : undefined);
  }
  override _flush(callback: TransformCallback): void {
    const out = this.#stream.flush();
    callback(null, out.length > 0 ? out : undefined);
  }
}

/** The redacted body stream (same Content-Encoding as the input); errors end it with `onError`. */
export function redactBody(body: Readable, encoding: string | undefined, redactor: Redactor, onError: (error: Error) => void): Readable {
  const codec = CODECS[(encoding ?? '').trim().toLowerCase()];
  const stages: (Readable | Transform)[] = codec
    ? [body, codec.decode(), new RedactTransform(redactor), codec.encode()]
    : [body, new RedactTransform(redactor)];
  const last = stages[stages.length - 1] as Transform;
  pipeline(stages as unknown as [Readable, Transform], (error) => {
    if (error) onError(error);
  });
  return last;
}
