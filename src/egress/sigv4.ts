/*
 * AWS Signature Version 4, re-signed at the proxy (`secrets.bind` with `delivery: aws-sigv4`).
 * The run holds a placeholder key pair (aws.ts); a request it signs with that pair to a bound
 * host is checked, then signed again with the real pair and sent on:
 *
 *   1. the signature is read (the Authorization header, or the X-Amz-* query of a presigned URL);
 *   2. its key id must be this run's placeholder (another key, or another run's placeholder, is
 *      refused: only what this run signed is re-signed), its scope a service and region the
 *      binding allows, its date the request's X-Amz-Date;
 *   3. the signature is computed again over the request as received, with the placeholder secret,
 *      and must match (so nothing was changed after the run signed it); a payload hash that is not
 *      UNSIGNED is checked against the body as it streams (inject.ts's stages: the last bytes are
 *      held until the hash is known, so a body that does not match never arrives whole);
 *   4. the same canonical request, with the real key id and the real session token in place of
 *      the placeholders, is signed with the real secret: same date, region, service and signed
 *      headers. The chunk signatures of `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` are checked and
 *      re-signed the same way, each chained from the seed signature.
 *
 * The canonical request, the signing key and the signature are @smithy/signature-v4's (AWS's own
 * signer, on Node's crypto through @smithy/hash-node): its building blocks, not its sign()/
 * presign(), because those take the date and the signed headers from the clock and the request
 * rather than from the signature being checked. Nothing here canonicalises by hand.
 *
 * A form that cannot be re-signed safely is refused with its reason, never forwarded with the
 * placeholder's signature: SigV4a (ECDSA), a `Date` header instead of X-Amz-Date, a signed
 * trailer (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`), a presigned URL unless the binding
 * allows them (a presigned URL carries a real, replayable signature to wherever it is sent).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import type { HeaderBag, HttpRequest } from '@smithy/types';
import type { BoundInjection } from './plan';
import type { Refusal } from './reading';
import type { AwsSettings } from './rules';

export interface AwsCredential {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** One run's AWS binding as the proxy holds it: the real pair and the placeholder pair the run has. */
export interface AwsSigning {
  readonly ref: string;
  readonly real: AwsCredential;
  readonly placeholder: AwsCredential;
  readonly settings: AwsSettings;
}

export interface SignedRequest {
  readonly method: string;
  /** Origin-form target, as received. */
  readonly target: string;
  /** Raw header names and values (hop-by-hop ones already dropped). */
  readonly headers: readonly string[];
}

export interface Resigned {
  readonly target: string;
  readonly headers: string[];
  readonly ref: string;
  readonly keyId: string;
  readonly service: string;
  readonly region: string;
  /** Real signatures made for this request: masked in its response. */
  readonly signatures: readonly string[];
  /** The body's check and re-signing, when it has one to do. */
  readonly body?: () => Transform;
  /** The body must be read whole first (no payload hash header: the signer hashes it). */
  readonly needsBody?: boolean;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const UNSIGNED = 'UNSIGNED-PAYLOAD';
const STREAMING_SIGNED = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD';
const STREAMING_UNSIGNED_TRAILER = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
/** A body hashed in memory (a request with no payload hash header, such as an STS query) is at most this large. */
export const MAX_BUFFERED_BODY = 8 * 1024 * 1024;
/** The longest a presigned URL may be valid, in seconds (AWS's own limit: a week). */
export const MAX_PRESIGN_EXPIRY = 7 * 24 * 3600;

interface Parsed {
  readonly keyId: string;
  readonly date: string;
  readonly region: string;
  readonly service: string;
  readonly signedHeaders: readonly string[];
  readonly signature: string;
  readonly presigned: boolean;
  readonly expires?: number;
}

/** The AWS bindings of a run, put together from its injections (one per part of each credential). */
export function getAwsSignings(injections: readonly BoundInjection[]): AwsSigning[] {
  const byRef = new Map<string, { real: Record<string, string>; placeholder: Record<string, string>; settings: AwsSettings }>();
  for (const injection of injections) {
    const part = injection.aws;
    const settings = injection.binding.aws;
    if (!part || !settings) continue;
    const entry = byRef.get(injection.ref) ?? { real: {}, placeholder: {}, settings };
    entry.real[part] = injection.value;
    entry.placeholder[part] = injection.sentinel;
    byRef.set(injection.ref, entry);
  }
  return [...byRef.entries()].map(([ref, entry]) => ({
    ref, settings: entry.settings,
    real: entry.real as unknown as AwsCredential,
    placeholder: entry.placeholder as unknown as AwsCredential,
  }));
}

/** Does this request carry a SigV4 signature (header or query)? */
export function isSigned(request: SignedRequest): boolean {
  const auth = getHeader(request.headers, 'authorization');
  if (auth !== undefined && /^\s*AWS4-/i.test(auth)) return true;
  const q = request.target.indexOf('?');
  return q !== -1 && /(^|&)x-amz-(algorithm|signature|credential)=/i.test(request.target.slice(q + 1));
}

/**
 * Check `request` against the run's placeholder pair and sign it again with the real one, or say
 * why not. `body`: the whole body, when needsBody was asked for.
 */
export async function resign(request: SignedRequest, signings: readonly AwsSigning[], body?: Buffer): Promise<Resigned | Refusal> {
  const q = request.target.indexOf('?');
  const path = q === -1 ? request.target : request.target.slice(0, q);
  const pairs = q === -1 ? [] : parseQuery(request.target.slice(q + 1));
  if (!pairs) return refusal('aws-sigv4-form', 'the query string could not be decoded, so its signature cannot be checked');
  const parsed = parseSignature(request.headers, pairs);
  if ('rule' in parsed) return parsed;
  const signing = signings.find((s) => safeEqual(s.placeholder.accessKeyId, parsed.keyId));
  if (!signing) {
    return refusal('aws-sigv4-key', `the request is signed with an access key id that is not this run's (AWS_ACCESS_KEY_ID); only requests this run signs with its own key are signed again`);
  }
  const { settings } = signing;
  if (settings.services && !settings.services.includes(parsed.service)) {
    return refusal(`aws-sigv4-service:${signing.ref}`, `<<${signing.ref}>> signs for ${settings.services.join(', ')} only, not \`${parsed.service}\``, signing.ref);
  }
  if (settings.regions && !settings.regions.includes(parsed.region)) {
    return refusal(`aws-sigv4-region:${signing.ref}`, `<<${signing.ref}>> signs in ${settings.regions.join(', ')} only, not \`${parsed.region}\``, signing.ref);
  }
  if (parsed.presigned) {
    if (!settings.presign) {
      return refusal(`aws-sigv4-presign:${signing.ref}`, `<<${signing.ref}>> does not sign presigned (query-signed) URLs: a presigned URL carries a usable signature to wherever it is sent (the binding's \`presign\` is false)`, signing.ref);
    }
    const max = settings.presignMaxExpiry ?? MAX_PRESIGN_EXPIRY;
    if (parsed.expires === undefined || !(parsed.expires > 0) || parsed.expires > max) {
      return refusal(`aws-sigv4-presign:${signing.ref}`, `<<${signing.ref}>> signs presigned URLs valid for at most ${max} seconds; this one asks for ${parsed.expires ?? 'no'} X-Amz-Expires`, signing.ref);
    }
  }
  const headerMap = new Map<string, string>();
  for (let i = 0; i + 1 < request.headers.length; i += 2) {
    const name = request.headers[i].toLowerCase();
    // A header sent twice is signed as `a,b` by some clients and as two by others: refused rather than guessed.
    if (headerMap.has(name) && parsed.signedHeaders.includes(name)) return refusal('aws-sigv4-form', `the signed header \`${name}\` is sent twice`);
    headerMap.set(name, request.headers[i + 1]);
  }
  for (const name of parsed.signedHeaders) {
    if (!headerMap.has(name)) return refusal('aws-sigv4-form', `the signature names the header \`${name}\`, which the request does not carry`);
  }
  if (!parsed.signedHeaders.includes('host')) return refusal('aws-sigv4-form', 'the signature does not cover the Host header');
  const amzDate = parsed.presigned ? getPair(pairs, 'X-Amz-Date') : headerMap.get('x-amz-date');
  if (amzDate === undefined || !/^\d{8}T\d{6}Z$/.test(amzDate) || amzDate.slice(0, 8) !== parsed.date) {
    return refusal('aws-sigv4-form', 'the request has no X-Amz-Date matching its credential scope (a `Date` header alone is not re-signed)');
  }
  const payload = parsed.presigned ? (headerMap.get('x-amz-content-sha256') ?? (parsed.service === 's3' ? UNSIGNED : EMPTY_SHA256)) : headerMap.get('x-amz-content-sha256');
  if (payload !== undefined && payload !== UNSIGNED && payload !== STREAMING_SIGNED && payload !== STREAMING_UNSIGNED_TRAILER && !/^[0-9a-f]{64}$/.test(payload)) {
    return refusal('aws-sigv4-payload', `the payload form \`${payload.slice(0, 64)}\` cannot be re-signed (UNSIGNED-PAYLOAD, a SHA-256 hash, ${STREAMING_SIGNED} and ${STREAMING_UNSIGNED_TRAILER} can)`);
  }
  if (payload === undefined && !parsed.presigned && body === undefined) {
    // No hash header: the signature covers the body's hash, which only the whole body gives.
    return { target: request.target, headers: [...request.headers], ref: signing.ref, keyId: parsed.keyId, service: parsed.service, region: parsed.region, signatures: [], needsBody: true };
  }
  const token = parsed.presigned ? getPair(pairs, 'X-Amz-Security-Token') : headerMap.get('x-amz-security-token');
  if ((token !== undefined) !== (signing.placeholder.sessionToken !== undefined) || (token !== undefined && !safeEqual(token, signing.placeholder.sessionToken!))) {
    return refusal('aws-sigv4-key', 'the request\'s session token is not this run\'s (AWS_SESSION_TOKEN)', signing.ref);
  }

  const checker = getSigner(signing.placeholder, parsed.service);
  const payloadHash = payload ?? (body ? sha256Hex(body) : EMPTY_SHA256);
  const canonical = (pairsNow: ReadonlyArray<readonly [string, string]>, headersNow: Map<string, string>): string => {
    const signedOnly: Record<string, string> = {};
    for (const name of parsed.signedHeaders) signedOnly[name] = headersNow.get(name)!;
    const canonicalHeaders = getSmithy().getCanonicalHeaders({ headers: signedOnly } as never, undefined, new Set(parsed.signedHeaders));
    return checker.canonicalRequest({ method: request.method, path, query: toQueryObject(pairsNow), headers: signedOnly } as never, canonicalHeaders, payloadHash);
  };
  const scope = `${parsed.date}/${parsed.region}/${parsed.service}/aws4_request`;
  const signingOptions = { signingDate: toDate(amzDate), signingRegion: parsed.region, signingService: parsed.service };
  const sign = async (credential: AwsCredential, canonicalRequest: string): Promise<string> => {
    const signer = getSigner(credential, parsed.service);
    return signer.sign(await signer.stringToSign(amzDate, scope, canonicalRequest), signingOptions);
  };
  const checked = await sign(signing.placeholder, canonical(pairs, headerMap));
  if (!safeEqual(checked, parsed.signature)) {
    return refusal('aws-sigv4-mismatch', 'the request does not match its signature: it was changed after it was signed, or signed in a way the proxy cannot check, so it is not signed again', signing.ref);
  }

  // The real pair in the placeholder's places: the credential (query), the session token.
  const realHeaders = new Map(headerMap);
  let realPairs = pairs;
  if (parsed.presigned) {
    realPairs = pairs.map(([name, value]) => {
      if (name === 'X-Amz-Credential') return [name, `${signing.real.accessKeyId}/${scope}`] as const;
      if (name === 'X-Amz-Security-Token') return [name, signing.real.sessionToken ?? ''] as const;
      return [name, value] as const;
    }).filter(([name]) => name !== 'X-Amz-Security-Token' || signing.real.sessionToken !== undefined);
    if (signing.real.sessionToken !== undefined && !pairs.some(([name]) => name === 'X-Amz-Security-Token')) realPairs = [...realPairs, ['X-Amz-Security-Token', signing.real.sessionToken]];
  } else if (signing.real.sessionToken !== undefined) {
    realHeaders.set('x-amz-security-token', signing.real.sessionToken);
  }
  if (!parsed.presigned && signing.real.sessionToken !== undefined && !parsed.signedHeaders.includes('x-amz-security-token')) {
    return refusal('aws-sigv4-form', 'the signature does not cover X-Amz-Security-Token, which the real credential needs');
  }
  const realSignature = await sign(signing.real, canonical(realPairs.filter(([name]) => name !== 'X-Amz-Signature'), realHeaders));
  const headers: string[] = [];
  for (let i = 0; i + 1 < request.headers.length; i += 2) {
    const lower = request.headers[i].toLowerCase();
    if (lower === 'x-amz-security-token' && !parsed.presigned) {
      if (signing.real.sessionToken !== undefined) headers.push(request.headers[i], signing.real.sessionToken);
      continue;
    }
    if (lower === 'authorization' && !parsed.presigned) {
      headers.push(request.headers[i], `${ALGORITHM} Credential=${signing.real.accessKeyId}/${scope}, SignedHeaders=${parsed.signedHeaders.join(';')}, Signature=${realSignature}`);
      continue;
    }
    headers.push(request.headers[i], request.headers[i + 1]);
  }
  let target = request.target;
  if (parsed.presigned) {
    const query = realPairs.map(([name, value]) => `${encodeRfc3986(name)}=${encodeRfc3986(name === 'X-Amz-Signature' ? realSignature : value)}`).join('&');
    target = `${path}?${query}`;
  }
  const signatures = [realSignature];
  const result = { target, headers, ref: signing.ref, keyId: parsed.keyId, service: parsed.service, region: parsed.region, signatures };
  if (payload === STREAMING_SIGNED) {
    const chunks = { scope, amzDate, options: signingOptions, placeholder: getSigner(signing.placeholder, parsed.service), real: getSigner(signing.real, parsed.service), seed: parsed.signature, realSeed: realSignature, signatures };
    return { ...result, body: () => new ChunkResigner(chunks) };
  }
  if (payload !== undefined && /^[0-9a-f]{64}$/.test(payload) && payload !== EMPTY_SHA256) return { ...result, body: () => new HashCheck(payload) };
  if (payload === EMPTY_SHA256) return { ...result, body: () => new HashCheck(payload) };
  return result;
}

function parseSignature(headers: readonly string[], pairs: ReadonlyArray<readonly [string, string]>): Parsed | Refusal {
  const auth = getHeader(headers, 'authorization');
  const queryAlgorithm = getPair(pairs, 'X-Amz-Algorithm');
  if (auth !== undefined && queryAlgorithm !== undefined) return refusal('aws-sigv4-form', 'the request is signed both in its Authorization header and in its query');
  if (auth !== undefined) {
    const match = /^\s*(AWS4-[A-Z0-9-]+)\s+(.*)$/i.exec(auth);
    if (!match) return refusal('aws-sigv4-form', 'the Authorization header is not a SigV4 signature');
    if (match[1] !== ALGORITHM) return refusal('aws-sigv4-form', `the signing algorithm \`${match[1].slice(0, 40)}\` is not re-signed (only ${ALGORITHM})`);
    const fields = new Map<string, string>();
    for (const part of match[2].split(',')) {
      const eq = part.indexOf('=');
      if (eq !== -1) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
    return fromParts(fields.get('Credential'), fields.get('SignedHeaders'), fields.get('Signature'), false);
  }
  if (queryAlgorithm !== ALGORITHM) return refusal('aws-sigv4-form', `the signing algorithm \`${String(queryAlgorithm).slice(0, 40)}\` is not re-signed (only ${ALGORITHM})`);
  const expires = getPair(pairs, 'X-Amz-Expires');
  return fromParts(getPair(pairs, 'X-Amz-Credential'), getPair(pairs, 'X-Amz-SignedHeaders'), getPair(pairs, 'X-Amz-Signature'), true, expires !== undefined && /^\d{1,9}$/.test(expires) ? Number(expires) : undefined);
}

function fromParts(credential: string | undefined, signedHeaders: string | undefined, signature: string | undefined, presigned: boolean, expires?: number): Parsed | Refusal {
  const scope = credential ? /^([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request$/.exec(credential) : null;
  if (!scope || signedHeaders === undefined || signature === undefined || !/^[0-9a-f]{64}$/.test(signature) || !/^[a-z0-9-]+(;[a-z0-9-]+)*$/.test(signedHeaders)) {
    return refusal('aws-sigv4-form', 'the SigV4 signature is malformed (Credential, SignedHeaders or Signature)');
  }
  return { keyId: scope[1], date: scope[2], region: scope[3], service: scope[4], signedHeaders: signedHeaders.split(';'), signature, presigned, ...(expires !== undefined ? { expires } : {}) };
}

/** The signer's own canonical request and string to sign, and its sign(stringToSign) with the credential it was made with. */
interface Signer {
  canonicalRequest(request: HttpRequest, headers: HeaderBag, payloadHash: string): string;
  stringToSign(longDate: string, scope: string, canonicalRequest: string): Promise<string>;
  sign(stringToSign: string, options?: { signingDate?: Date; signingRegion?: string; signingService?: string }): Promise<string>;
}

/*
 * AWS's signer, loaded with the first request that is signed again: a gateway whose runs never
 * reach AWS (and every CLI start) does not load @smithy's modules (some 15 ms of a start).
 */
let smithy: {
  readonly getCanonicalHeaders: typeof import('@smithy/signature-v4').getCanonicalHeaders;
  readonly Signer: new (options: ConstructorParameters<typeof import('@smithy/signature-v4').SignatureV4>[0]) => Signer;
} | undefined;

function getSmithy(): NonNullable<typeof smithy> {
  if (smithy) return smithy;
  const { getCanonicalHeaders, SignatureV4 } = require('@smithy/signature-v4') as typeof import('@smithy/signature-v4');
  // The canonical request and string to sign are protected in @smithy/signature-v4: reached through a subclass.
  class SmithySigner extends SignatureV4 implements Signer {
    canonicalRequest(request: HttpRequest, headers: HeaderBag, payloadHash: string): string {
      return this.createCanonicalRequest(request, headers, payloadHash);
    }

    stringToSign(longDate: string, scope: string, canonicalRequest: string): Promise<string> {
      return this.createStringToSign(longDate, scope, canonicalRequest, ALGORITHM);
    }
  }
  smithy = { getCanonicalHeaders, Signer: SmithySigner };
  return smithy;
}

const signers = new WeakMap<AwsCredential, Map<boolean, Signer>>();
/** S3 signs the path as sent; every other service signs it normalised and encoded once more. */
function getSigner(credential: AwsCredential, service: string): Signer {
  const s3 = service === 's3';
  let byKind = signers.get(credential);
  if (!byKind) signers.set(credential, byKind = new Map<boolean, Signer>());
  let signer = byKind.get(s3);
  if (!signer) {
    const { Hash } = require('@smithy/hash-node') as typeof import('@smithy/hash-node');
    signer = new (getSmithy().Signer)({ service, region: 'us-east-1', sha256: Hash.bind(null, 'sha256'), credentials: credential, uriEscapePath: !s3 });
    byKind.set(s3, signer);
  }
  return signer;
}

/** `name=value` pairs, decoded; undefined when a part is not valid percent-encoding. */
function parseQuery(query: string): Array<readonly [string, string]> | undefined {
  const out: Array<readonly [string, string]> = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    try {
      out.push(eq === -1 ? [decodeURIComponent(part), ''] : [decodeURIComponent(part.slice(0, eq)), decodeURIComponent(part.slice(eq + 1))]);
    } catch {
      return undefined;
    }
  }
  return out;
}

function toQueryObject(pairs: ReadonlyArray<readonly [string, string]>): Record<string, string | string[]> {
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of pairs) {
    const existing = out[name];
    out[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return out;
}

function getPair(pairs: ReadonlyArray<readonly [string, string]>, name: string): string | undefined {
  return pairs.find(([n]) => n === name)?.[1];
}

function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function getHeader(raw: readonly string[], lower: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() === lower) return raw[i + 1];
  return undefined;
}

function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

function refusal(rule: string, reason: string, ref?: string): Refusal {
  return { rule, reason, ...(ref !== undefined ? { ref } : {}) };
}

/** Raised by a body stage: the body does not match what was signed. */
export class PayloadMismatch extends Error {}

/*
 * The body of a request whose signature covers its SHA-256: hashed as it streams; the last chunk
 * is held until the end, so a body with another hash is cut off before its last byte is sent
 * (the server never sees a whole request, whatever its framing).
 */
class HashCheck extends Transform {
  readonly #hash = createHash('sha256');
  readonly #expected: string;
  #held: Buffer | undefined;

  constructor(expected: string) {
    super({ highWaterMark: 256 * 1024 });
    this.#expected = expected;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hash.update(chunk);
    const out = this.#held;
    this.#held = chunk;
    callback(null, out);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#hash.digest('hex') !== this.#expected) return callback(new PayloadMismatch('the request body does not match the SHA-256 its signature covers'));
    callback(null, this.#held);
  }
}

interface ChunkContext {
  readonly scope: string;
  readonly amzDate: string;
  readonly options: { signingDate: Date; signingRegion: string; signingService: string };
  readonly placeholder: Signer;
  readonly real: Signer;
  readonly seed: string;
  readonly realSeed: string;
  readonly signatures: string[];
}

const MAX_CHUNK_HEADER = 4096;
const MAX_CHUNK = 64 * 1024 * 1024;

/*
 * `aws-chunked` with signed chunks: `hex-size;chunk-signature=SIG\r\n` DATA `\r\n`, ending with a
 * chunk of size 0. Each chunk's signature (chained from the previous one, the first from the
 * request's) is checked with the placeholder pair and replaced by the real pair's, chained from
 * the real seed. A real signature has the same length, so the body's length does not change. A
 * chunk is sent on only after its signature was checked.
 */
class ChunkResigner extends Transform {
  readonly #c: ChunkContext;
  #buffer: Buffer = Buffer.alloc(0);
  #prior: string;
  #realPrior: string;
  #done = false;

  constructor(context: ChunkContext) {
    super({ highWaterMark: 256 * 1024 });
    this.#c = context;
    this.#prior = context.seed;
    this.#realPrior = context.realSeed;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#buffer = this.#buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.#buffer, chunk]);
    this.#drain().then(() => callback(), (error: Error) => callback(error));
  }

  override _flush(callback: TransformCallback): void {
    if (!this.#done || this.#buffer.length > 0) return callback(new PayloadMismatch('the aws-chunked body ended before its final chunk'));
    callback();
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#done) {
        if (this.#buffer.length > 0) throw new PayloadMismatch('the aws-chunked body has bytes after its final chunk');
        return;
      }
      const end = this.#buffer.indexOf('\r\n');
      if (end === -1) {
        if (this.#buffer.length > MAX_CHUNK_HEADER) throw new PayloadMismatch('an aws-chunked chunk header is too long');
        return;
      }
      const line = /^([0-9a-fA-F]{1,8});chunk-signature=([0-9a-f]{64})$/.exec(this.#buffer.subarray(0, end).toString('latin1'));
      if (!line) throw new PayloadMismatch('an aws-chunked chunk header is malformed (trailers are not re-signed)');
      const size = parseInt(line[1], 16);
      if (size > MAX_CHUNK) throw new PayloadMismatch('an aws-chunked chunk is too large');
      if (this.#buffer.length < end + 2 + size + 2) return;
      const data = this.#buffer.subarray(end + 2, end + 2 + size);
      if (this.#buffer.subarray(end + 2 + size, end + 4 + size).toString('latin1') !== '\r\n') throw new PayloadMismatch('an aws-chunked chunk is not followed by CRLF');
      const dataHash = sha256Hex(data);
      const toSign = (prior: string): string => ['AWS4-HMAC-SHA256-PAYLOAD', this.#c.amzDate, this.#c.scope, prior, EMPTY_SHA256, dataHash].join('\n');
      const checked = await this.#c.placeholder.sign(toSign(this.#prior), this.#c.options);
      if (!safeEqual(checked, line[2])) throw new PayloadMismatch('an aws-chunked chunk does not match its signature');
      const real = await this.#c.real.sign(toSign(this.#realPrior), this.#c.options);
      this.#c.signatures.push(real);
      this.#prior = line[2];
      this.#realPrior = real;
      this.push(Buffer.from(`${line[1]};chunk-signature=${real}\r\n`, 'latin1'));
      this.push(this.#buffer.subarray(end + 2, end + 4 + size));
      this.#buffer = this.#buffer.subarray(end + 4 + size);
      if (size === 0) this.#done = true;
    }
  }
}

function toDate(amzDate: string): Date {
  return new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
}
