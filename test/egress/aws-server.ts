/*
 * A small S3 and STS for the AWS tests that checks every request's SigV4 signature with the REAL
 * key pair, as AWS does (s3rver accepts a wrong secret, so it cannot show that re-signing works).
 * Checked with @smithy/signature-v4's sign()/presign() (the proxy uses its building blocks with
 * the signature's own date and headers; this side signs the request again as a client would), and
 * the streaming aws-chunked form chunk by chunk. Enough of S3 for the CLI's mb, cp (single and
 * multipart, ranged downloads), ls and presigned GETs, kept in memory; STS answers
 * GetCallerIdentity. Every request is recorded, raw, so a test can show the placeholder never
 * arrived.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { publicCa } from './helpers';

export interface AwsSeen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  /** The request line, headers and body as received (decoded from aws-chunked where it was). */
  readonly raw: Buffer;
  readonly keyId: string | undefined;
  readonly status: number;
  readonly payload: string | undefined;
}

export interface AwsServer {
  readonly name: string;
  readonly httpsPort: number;
  readonly httpPort: number;
  readonly seen: AwsSeen[];
  connections: number;
  readonly objects: Map<string, Buffer>;
  close(): Promise<void>;
}

export interface AwsKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** The credentials STS's GetSessionToken hands out (a test shows they never reach a run). */
export const MINTED: AwsKey = { accessKeyId: 'ASIAMINTEDKEY7TEST2X', secretAccessKey: 'mInTeD/sEcReT+kEy0123456789abcdefGHIJKL', sessionToken: 'IQoJmintedSessionTokenValue0123456789abcdefghijklmnopqrstuvwxyz' };

const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export async function startAwsServer(name: string, key: AwsKey): Promise<AwsServer> {
  const seen: AwsSeen[] = [];
  const objects = new Map<string, Buffer>();
  const buckets = new Set<string>();
  const uploads = new Map<string, Map<number, Buffer>>();
  const server = { name, seen, objects, connections: 0, httpPort: 0 } as { -readonly [K in keyof AwsServer]: AwsServer[K] };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const verdict = await verify(req, body, key);
        const decoded = verdict.body ?? body;
        const raw = Buffer.concat([Buffer.from(`${req.method} ${req.url}\n${JSON.stringify(req.rawHeaders)}\n`), body]);
        const reply = (status: number, text = '', headers: Record<string, string> = {}): void => {
          seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, keyId: verdict.keyId, status, payload: req.headers['x-amz-content-sha256'] as string | undefined });
          res.writeHead(status, { 'content-type': 'application/xml', 'x-amz-request-id': 'test', ...headers });
          res.end(text);
        };
        if (verdict.error || req.url === '/echo-error') {
          // As S3 does: the error names what it was given (the key id and the signature).
          return reply(403, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${verdict.error ?? 'AccessDenied'}</Code><Message>The request signature we calculated does not match the signature you provided.</Message><AWSAccessKeyId>${verdict.keyId ?? ''}</AWSAccessKeyId><SignatureProvided>${verdict.signature ?? ''}</SignatureProvided></Error>`);
        }
        const url = new URL(req.url ?? '/', 'https://x');
        const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
        const [bucket, ...rest] = parts;
        const objectKey = rest.join('/');
        if (name.startsWith('sts')) {
          // GetSessionToken as STS answers it: a new key pair, usable from anywhere until it expires.
          const action = [...url.searchParams.getAll('Action'), ...new URLSearchParams(decoded.toString('latin1')).getAll('Action')];
          if (action.includes('GetSessionToken')) {
            return reply(200, `<GetSessionTokenResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetSessionTokenResult><Credentials><AccessKeyId>${MINTED.accessKeyId}</AccessKeyId><SecretAccessKey>${MINTED.secretAccessKey}</SecretAccessKey><SessionToken>${MINTED.sessionToken}</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration></Credentials></GetSessionTokenResult><ResponseMetadata><RequestId>test</RequestId></ResponseMetadata></GetSessionTokenResponse>`, { 'content-type': 'text/xml' });
          }
          return reply(200, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/test</Arn><UserId>AIDATEST</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>test</RequestId></ResponseMetadata></GetCallerIdentityResponse>`, { 'content-type': 'text/xml' });
        }
        if (!bucket) {
          return reply(200, `<?xml version="1.0" encoding="UTF-8"?><ListAllMyBucketsResult><Owner><ID>test</ID><DisplayName>test</DisplayName></Owner><Buckets>${[...buckets].map((b) => `<Bucket><Name>${b}</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket>`).join('')}</Buckets></ListAllMyBucketsResult>`);
        }
        if (!objectKey) {
          if (req.method === 'PUT') {
            buckets.add(bucket);
            return reply(200, '', { location: `/${bucket}` });
          }
          if (!buckets.has(bucket)) return reply(404, '<Error><Code>NoSuchBucket</Code></Error>');
          const prefix = url.searchParams.get('prefix') ?? '';
          const keys = [...objects.keys()].filter((k) => k.startsWith(`${bucket}/${prefix}`)).map((k) => k.slice(bucket.length + 1));
          const contents = keys.map((k) => `<Contents><Key>${k}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>"${md5(objects.get(`${bucket}/${k}`)!)}"</ETag><Size>${objects.get(`${bucket}/${k}`)!.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`).join('');
          return reply(200, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${bucket}</Name><Prefix>${prefix}</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`);
        }
        const path = `${bucket}/${objectKey}`;
        if (req.method === 'POST' && url.searchParams.has('uploads')) {
          const id = randomBytes(8).toString('hex');
          uploads.set(id, new Map());
          return reply(200, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${objectKey}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`);
        }
        if (req.method === 'PUT' && url.searchParams.has('uploadId')) {
          const upload = uploads.get(url.searchParams.get('uploadId')!);
          if (!upload) return reply(404, '<Error><Code>NoSuchUpload</Code></Error>');
          upload.set(Number(url.searchParams.get('partNumber')), decoded);
          return reply(200, '', { etag: `"${md5(decoded)}"` });
        }
        if (req.method === 'POST' && url.searchParams.has('uploadId')) {
          const upload = uploads.get(url.searchParams.get('uploadId')!);
          if (!upload) return reply(404, '<Error><Code>NoSuchUpload</Code></Error>');
          const whole = Buffer.concat([...upload.entries()].sort((a, b) => a[0] - b[0]).map(([, part]) => part));
          objects.set(path, whole);
          return reply(200, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${objectKey}</Key><ETag>"${md5(whole)}-${upload.size}"</ETag></CompleteMultipartUploadResult>`);
        }
        if (req.method === 'PUT') {
          objects.set(path, decoded);
          return reply(200, '', { etag: `"${md5(decoded)}"` });
        }
        const object = objects.get(path);
        if (!object) return reply(404, '<Error><Code>NoSuchKey</Code></Error>');
        const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
        const common = { 'content-type': 'application/octet-stream', etag: `"${md5(object)}"`, 'last-modified': 'Thu, 01 Jan 2026 00:00:00 GMT', 'accept-ranges': 'bytes' };
        if (req.method === 'HEAD') return reply(200, '', { ...common, 'content-length': String(object.length) });
        if (range) {
          const start = Number(range[1]);
          const end = range[2] === '' ? object.length - 1 : Math.min(Number(range[2]), object.length - 1);
          seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, keyId: verdict.keyId, status: 206, payload: undefined });
          res.writeHead(206, { ...common, 'content-range': `bytes ${start}-${end}/${object.length}`, 'content-length': String(end - start + 1) });
          return void res.end(object.subarray(start, end + 1));
        }
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, keyId: verdict.keyId, status: 200, payload: undefined });
        res.writeHead(200, { ...common, 'content-length': String(object.length) });
        res.end(object);
      })();
    });
  };
  const https = createHttpsServer({ SNICallback: (servername, cb) => cb(null, publicCa.getSecureContext(servername)) }, handler);
  https.on('connection', () => { server.connections += 1; });
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  server.httpsPort = (https.address() as AddressInfo).port;
  server.close = async () => {
    https.closeAllConnections();
    await new Promise<void>((resolve) => https.close(() => resolve()));
  };
  return server as AwsServer;
}

function md5(data: Buffer): string {
  return createHash('md5').update(data).digest('hex');
}

interface Verdict {
  readonly keyId?: string;
  readonly signature?: string;
  readonly error?: string;
  /** The body decoded from aws-chunked. */
  readonly body?: Buffer;
}

/** Check the request as S3 would: its signature recomputed with the real key. */
async function verify(req: IncomingMessage, body: Buffer, key: AwsKey): Promise<Verdict> {
  const url = new URL(req.url ?? '/', 'https://x');
  const auth = String(req.headers.authorization ?? '');
  const presigned = url.searchParams.has('X-Amz-Signature');
  const header = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  let keyId: string;
  let region: string;
  let service: string;
  let signedHeaders: string[];
  let signature: string;
  let amzDate: string;
  if (header) {
    [, keyId, , region, service] = header;
    signedHeaders = header[5].split(';');
    signature = header[6];
    amzDate = String(req.headers['x-amz-date'] ?? '');
  } else if (presigned) {
    const credential = /^([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request$/.exec(url.searchParams.get('X-Amz-Credential') ?? '');
    if (!credential) return { error: 'AuthorizationQueryParametersError' };
    [, keyId, , region, service] = credential;
    signedHeaders = (url.searchParams.get('X-Amz-SignedHeaders') ?? '').split(';');
    signature = url.searchParams.get('X-Amz-Signature') ?? '';
    amzDate = url.searchParams.get('X-Amz-Date') ?? '';
  } else {
    return { error: 'AccessDenied' };
  }
  if (keyId !== key.accessKeyId) return { keyId, signature, error: 'InvalidAccessKeyId' };
  const sessionToken = presigned ? url.searchParams.get('X-Amz-Security-Token') ?? undefined : req.headers['x-amz-security-token'] as string | undefined;
  if (sessionToken !== key.sessionToken) return { keyId, signature, error: 'InvalidToken' };
  const signer = new SignatureV4({ service, region, sha256: Hash.bind(null, 'sha256') as never, credentials: key, uriEscapePath: service !== 's3', applyChecksum: false });
  const signingDate = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = req.headers[name];
    if (value === undefined) return { keyId, signature, error: 'SignatureDoesNotMatch' };
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) if (!(presigned && name.startsWith('X-Amz-') && name !== 'X-Amz-Content-Sha256')) query[name] = value;
  const payload = req.headers['x-amz-content-sha256'] as string | undefined;
  let expected: string;
  if (presigned) {
    const signed = await signer.presign({ method: req.method ?? 'GET', protocol: 'https:', hostname: 'x', path: url.pathname, query, headers: { ...headers, ...(service === 's3' ? { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } : {}) } } as never, {
      signingDate, expiresIn: Number(url.searchParams.get('X-Amz-Expires')), signableHeaders: new Set(signedHeaders), unhoistableHeaders: new Set(['x-amz-content-sha256']), unsignableHeaders: new Set(['x-amz-content-sha256']),
    });
    expected = String((signed.query as Record<string, string>)['X-Amz-Signature']);
  } else {
    const request = { method: req.method ?? 'GET', protocol: 'https:', hostname: 'x', path: url.pathname, query, headers: { ...headers }, body: payload === undefined ? body : undefined } as never;
    const signed = await signer.sign(request, { signingDate, signableHeaders: new Set(signedHeaders), unsignableHeaders: new Set(Object.keys(headers).filter((h) => !signedHeaders.includes(h))) });
    expected = /Signature=([0-9a-f]{64})/.exec(String((signed.headers as Record<string, string>).authorization))![1];
  }
  if (expected !== signature) return { keyId, signature, error: 'SignatureDoesNotMatch' };
  if (payload && /^[0-9a-f]{64}$/.test(payload) && createHash('sha256').update(body).digest('hex') !== payload) return { keyId, signature, error: 'XAmzContentSHA256Mismatch' };
  if (payload === 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD') {
    const decoded = await decodeChunks(body, signer, signature, amzDate, `${amzDate.slice(0, 8)}/${region}/${service}/aws4_request`, signingDate);
    if (!decoded) return { keyId, signature, error: 'SignatureDoesNotMatch' };
    return { keyId, signature, body: decoded };
  }
  return { keyId, signature };
}

async function decodeChunks(body: Buffer, signer: SignatureV4, seed: string, amzDate: string, scope: string, signingDate: Date): Promise<Buffer | undefined> {
  const out: Buffer[] = [];
  let prior = seed;
  let at = 0;
  for (;;) {
    const end = body.indexOf('\r\n', at);
    const line = /^([0-9a-f]+);chunk-signature=([0-9a-f]{64})$/.exec(body.subarray(at, end).toString('latin1'));
    if (!line) return undefined;
    const size = parseInt(line[1], 16);
    const data = body.subarray(end + 2, end + 2 + size);
    const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, prior, EMPTY, createHash('sha256').update(data).digest('hex')].join('\n');
    if (await signer.sign(toSign, { signingDate }) !== line[2]) return undefined;
    prior = line[2];
    out.push(data);
    at = end + 2 + size + 2;
    if (size === 0) return at === body.length ? Buffer.concat(out) : undefined;
  }
}
