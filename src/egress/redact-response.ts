/*
 * Responses from a host an injected secret was sent to come back with the value removed, so a
 * server that echoes a request header or body cannot hand the value to the command. Headers are
 * redacted one by one; a body is redacted as a stream, decoded first when it is content-encoded
 * (gzip, deflate, br) and encoded again after. A body in any other encoding cannot be read, so it
 * is refused rather than passed on unread.
 */
import { Transform, type Readable, type TransformCallback, type TransformOptions, type Writable } from 'node:stream';
import { pipeline } from 'node:stream';
import {
  createBrotliCompress, createBrotliDecompress, createDeflate, createGunzip, createGzip, createInflate,
} from 'node:zlib';
import { getEncodedForms, Redactor, type RedactStream } from '../redact';

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
    const name = part.split(';')[0].trim().toLowerCase();
    return name === 'identity' || name in CODECS;
  });
  return kept.length > 0 ? kept.join(', ') : 'identity';
}

/*
 * The fields to pass on, each value masked. A field whose name holds a value (a token such as
 * `X-sk-live-...` is a valid field name) is left out: a masked name is no longer a token, and the
 * name was passed on unread before.
 */
export function redactHeaders(rawHeaders: readonly string[], redactor: Redactor, drop: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (drop.has(name.toLowerCase())) continue;
    if (redactor.redactString(name).count > 0) continue;
    out.push(name, redactField(rawHeaders[i + 1], redactor));
  }
  return out;
}

/*
 * A field's value is read as latin1 (one character a byte, as Node reads it), so a value with
 * characters beyond ASCII, sent back as its UTF-8 bytes, is not found in that reading; it is
 * looked for in the bytes read as UTF-8 too, and a field that holds it there goes on masked.
 */
function redactField(value: string, redactor: Redactor): string {
  const text = redactor.redactString(value).text;
  if (!/[\x80-\xff]/.test(text)) return text;
  const utf8 = redactor.redactString(Buffer.from(text, 'latin1').toString('utf8'));
  return utf8.count > 0 ? Buffer.from(utf8.text, 'utf8').toString('latin1') : text;
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

/** Raised when a response holds a value split over lines, which cannot be masked in place. */
export class WrappedValue extends Error {
  readonly ref: string;
  constructor(ref: string) {
    super(`the response holds ${ref} split over lines`);
    this.ref = ref;
  }
}

/** What the wrap gate looks for: a value's spellings that are written wrapped (base64, hex, the value itself). */
export interface WrapDetector {
  readonly redactor: Redactor;
  /** The longest spelling, in bytes. */
  readonly maxLength: number;
}

export function createWrapDetector(values: readonly { value: string; ref: string }[], minLength: number): WrapDetector | undefined {
  if (values.length === 0) return undefined;
  const redactor = new Redactor({ minLength });
  let maxLength = 0;
  for (const { value, ref } of values) {
    // The masker's own spellings (src/redact), less the pieces of an already wrapped form.
    for (const { form, text } of getEncodedForms(value, { minLength, encodings: true })) {
      if (!/^(value|base64|hex)/.test(form) || form.startsWith('base64-wrap')) continue;
      redactor.add(text, ref, { encodings: false });
      maxLength = Math.max(maxLength, Buffer.byteLength(text));
    }
  }
  return { redactor, maxLength };
}

/*
 * An encoded value wrapped over lines (base64 at 60 columns inside JSON, as GitHub's contents API
 * returns a file) never appears unbroken, so masking in place cannot find it. This gate reads the
 * body with line breaks taken out (CR, LF, and JSON's `\n` / `\r` escapes) through the same
 * masker, and passes the original bytes on only once that view of them is decided: a value found
 * there ends the response before its bytes leave. (What the masker reads in place is masked
 * before the gate sees it.)
 *
 * Only bytes near a line break can be part of a value the first pass missed (such a value spans
 * a break, and is at most `maxLength` long), so a chunk with no break is not read: what follows
 * the last break by more than `maxLength` is decided, and the last `maxLength` bytes are held in
 * case the next chunk begins with one. A body with few breaks costs the gate almost nothing.
 */
export class WrapGate extends Transform {
  readonly #stream: RedactStream;
  readonly #keep: number;
  /** Original bytes not yet passed on. */
  #pending: Buffer = EMPTY;
  /** Bytes at the start of #pending the view has been given (the rest is a chunk without breaks, held unread). */
  #fed = 0;
  /** Runs of view bytes given but not yet decided: [start in #pending, length], in order. */
  #runs: number[] = [];
  /** A backslash at the end of the last chunk: it may begin a `\n` escape in the next one. */
  #escape = false;

  constructor(detector: WrapDetector, options: TransformOptions = {}) {
    super(options);
    this.#stream = detector.redactor.createStream();
    this.#keep = detector.maxLength;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // Skimmed only when the chunk is at least `keep` long: a value running over a break before it
    // then ends inside it, and cannot go on over a break after it. A skimmed chunk holds no byte
    // the view leaves out (LF, CR, a backslash), because its tail is later given to the view as it
    // is: a CRLF cut between two chunks left the CR in the view, splitting the value there.
    if (!this.#escape && chunk.length >= this.#keep && chunk.indexOf(0x0a) === -1 && chunk.indexOf(0x0d) === -1 && chunk.indexOf(0x5c) === -1) {
      return this.#skim(chunk, callback);
    }
    // A chunk #skim held unread: only its last `keep` bytes can run on over this chunk's breaks;
    // the rest goes on now, and that tail is read first.
    if (this.#fed < this.#pending.length) {
      const cut = Math.max(this.#fed, this.#pending.length - this.#keep);
      if (cut > 0) {
        this.push(this.#pending.subarray(0, cut));
        this.#pending = this.#pending.subarray(cut);
        this.#fed = Math.max(0, this.#fed - cut);
        for (let i = 0; i < this.#runs.length; i += 2) this.#runs[i] = this.#runs[i] - cut;
      }
    }
    const base = this.#pending.length;
    let decided = 0;
    if (this.#fed < base) {
      const tail = this.#pending.subarray(this.#fed);
      this.#runs.push(this.#fed, tail.length);
      this.#fed = base;
      const out = this.#stream.push(tail);
      if (this.#stream.count > 0) return callback(new WrappedValue(labelIn(out)));
      decided += out.length;
    }
    this.#pending = base === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#fed = this.#pending.length;
    const parts: Buffer[] = [];
    let at = 0;
    if (this.#escape) {
      this.#escape = false;
      if (chunk.length > 0 && (chunk[0] === 0x6e || chunk[0] === 0x72)) {
        at = 1;
      } else {
        parts.push(BACKSLASH);
        this.#runs.push(base - 1, 1);
      }
    }
    // Next position of each byte that may break a line; each search moves forward only.
    let lf = chunk.indexOf(0x0a, at);
    let cr = chunk.indexOf(0x0d, at);
    let bs = chunk.indexOf(0x5c, at);
    while (at < chunk.length) {
      const next = Math.min(lf === -1 ? chunk.length : lf, cr === -1 ? chunk.length : cr, bs === -1 ? chunk.length : bs);
      if (next > at) {
        parts.push(chunk.subarray(at, next));
        this.#runs.push(base + at, next - at);
      }
      if (next === chunk.length) break;
      let skip = 1;
      if (next === bs) {
        if (next + 1 === chunk.length) {
          this.#escape = true;
        } else if (chunk[next + 1] === 0x6e || chunk[next + 1] === 0x72) {
          skip = 2;
        } else {
          parts.push(BACKSLASH);
          this.#runs.push(base + next, 1);
        }
      }
      at = next + skip;
      if (lf !== -1 && lf < at) lf = chunk.indexOf(0x0a, at);
      if (cr !== -1 && cr < at) cr = chunk.indexOf(0x0d, at);
      if (bs !== -1 && bs < at) bs = chunk.indexOf(0x5c, at);
    }
    const view = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    const out = view.length > 0 ? this.#stream.push(view) : EMPTY;
    if (this.#stream.count > 0) return callback(new WrappedValue(labelIn(out)));
    this.#release(decided + out.length, callback);
  }

  override _flush(callback: TransformCallback): void {
    // An unread tail has no break, and none follows it: it cannot hold a wrapped value.
    const outs: Buffer[] = [];
    if (this.#escape) {
      this.#escape = false;
      outs.push(this.#stream.push(BACKSLASH));
    }
    outs.push(this.#stream.flush());
    const out = Buffer.concat(outs);
    if (this.#stream.count > 0) return callback(new WrappedValue(labelIn(out)));
    const rest = this.#pending;
    this.#pending = EMPTY;
    this.#fed = 0;
    this.#runs = [];
    callback(null, rest.length > 0 ? rest : undefined);
  }

  /*
   * A long chunk without a line break: what the view still holds is decided with the chunk's
   * first `keep` bytes; what was held goes on, and the chunk itself is held (by reference, not
   * copied) until the next one shows whether a break follows it.
   */
  #skim(chunk: Buffer, callback: TransformCallback): void {
    if (this.#runs.length > 0) {
      const out = Buffer.concat([this.#stream.push(chunk.subarray(0, this.#keep)), this.#stream.flush()]);
      if (this.#stream.count > 0) return callback(new WrappedValue(labelIn(out)));
      this.#runs = [];
    }
    const out = this.#pending;
    this.#pending = chunk;
    this.#fed = 0;
    callback(null, out.length > 0 ? out : undefined);
  }

  /** `decided` more view bytes passed the masker: pass on the original bytes before the first undecided one. */
  #release(decided: number, callback: TransformCallback): void {
    const runs = this.#runs;
    let drop = 0;
    let left = decided;
    while (left > 0 && drop < runs.length) {
      const length = runs[drop + 1];
      if (length <= left) {
        left -= length;
        drop += 2;
      } else {
        runs[drop] = runs[drop] + left;
        runs[drop + 1] = length - left;
        left = 0;
      }
    }
    if (drop > 0) runs.splice(0, drop);
    // Held: from the first undecided view byte on, or a trailing backslash that may begin an escape.
    const holdFrom = runs.length > 0 ? runs[0] : this.#escape ? this.#pending.length - 1 : this.#pending.length;
    if (holdFrom === 0) return callback();
    const out = this.#pending.subarray(0, holdFrom);
    this.#pending = holdFrom === this.#pending.length ? EMPTY : Buffer.from(this.#pending.subarray(holdFrom));
    this.#fed -= holdFrom;
    for (let i = 0; i < runs.length; i += 2) runs[i] = runs[i] - holdFrom;
    callback(null, out);
  }
}

const EMPTY = Buffer.alloc(0);
const BACKSLASH = Buffer.from('\\');

function labelIn(redacted: Buffer): string {
  return /\[REDACTED:([^\]]+)\]/.exec(redacted.toString('latin1'))?.[1] ?? 'a bound secret';
}


/*
 * The masker and the wrap gate in one stage: a response body is cut into many chunks (a TLS
 * record is 16 KiB), and each stage costs per chunk.
 */
class CleanTransform extends WrapGate {
  readonly #masker: RedactStream;

  constructor(redactor: Redactor, wrap: WrapDetector) {
    // Node's default buffer sizes: larger ones cost more here (measured with bench/egress.js).
    super(wrap);
    this.#masker = redactor.createStream();
  }

  override _transform(chunk: Buffer, encoding: BufferEncoding, callback: TransformCallback): void {
    const masked = this.#masker.push(chunk);
    if (masked.length === 0) return callback();
    super._transform(masked, encoding, callback);
  }

  override _flush(callback: TransformCallback): void {
    const masked = this.#masker.flush();
    if (masked.length === 0) return super._flush(callback);
    super._transform(masked, 'latin1', (error, data) => {
      if (error) return callback(error);
      if (data) this.push(data);
      super._flush(callback);
    });
  }
}

/** The redacted body stream (same Content-Encoding as the input); errors end it with `onError`. */
export function redactBody(body: Readable, encoding: string | undefined, redactor: Redactor, onError: (error: Error) => void, wrap?: WrapDetector): Readable {
  let failed = false;
  const fail = (error: Error): void => {
    if (failed) return;
    failed = true;
    onError(error);
  };
  const { input, output } = createBodyCleaner(encoding, redactor, fail, wrap);
  pipeline(body, input, (error) => {
    if (error) fail(error);
  });
  return output;
}

/*
 * The cleaning stages of a body (same Content-Encoding out as in): written to through `input`,
 * read from `output` (one stage when the body is not encoded). Errors end them with `onError`,
 * once.
 */
export function createBodyCleaner(encoding: string | undefined, redactor: Redactor, onError: (error: Error) => void, wrap?: WrapDetector): { input: Writable; output: Readable } {
  const codec = CODECS[(encoding ?? '').trim().toLowerCase()];
  const cleaning: Transform = wrap ? new CleanTransform(redactor, wrap) : new RedactTransform(redactor);
  let failed = false;
  const fail = (error: Error | null | undefined): void => {
    if (!error || failed) return;
    failed = true;
    onError(error);
  };
  if (!codec) {
    cleaning.on('error', fail);
    return { input: cleaning, output: cleaning };
  }
  const stages = [codec.decode(), cleaning, codec.encode()];
  pipeline(stages as unknown as [Transform, Transform, Transform], fail);
  return { input: stages[0], output: stages[2] };
}
