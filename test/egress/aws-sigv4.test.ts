/*
 * SigV4 re-signing (egress/sigv4.ts) on requests signed here with @smithy/signature-v4, and the
 * policy and credential parsing of `delivery: aws-sigv4`. The whole path, with real clients in
 * sandboxed runs, is aws.test.ts; here are the forms those clients do not send (signed aws-chunked
 * bodies, signed trailers, SigV4a, session tokens) and the binding's limits.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import { createAwsPlaceholder, parseAwsCredential } from '../../src/egress/aws';
import { isRefusal } from '../../src/egress/reading';
import { resign, type AwsCredential, type AwsSigning, type Resigned } from '../../src/egress/sigv4';
import { loadPolicyFile } from '../../src/policy/load';
import { makeTempDir } from '../helpers/tmp';
import { writeFiles } from '../policy/helpers';

const REAL: AwsCredential = { accessKeyId: 'ASIAREALKEY7TESTQ2XZ', secretAccessKey: 'rEaL/sEcReT+kEy0123456789abcdefGHIJKLMN', sessionToken: 'REALsessionTOKENvalue0123456789' };
const PLACEHOLDER = createAwsPlaceholder(REAL);
const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

function signing(settings: Partial<AwsSigning['settings']> = {}): AwsSigning {
  return { ref: 'secret:aws', real: REAL, placeholder: PLACEHOLDER, settings: { presign: false, ...settings } };
}

function signer(credential: AwsCredential, service = 's3'): SignatureV4 {
  return new SignatureV4({ service, region: 'eu-west-1', sha256: Hash.bind(null, 'sha256') as never, credentials: credential, uriEscapePath: service !== 's3', applyChecksum: false });
}

const DATE = new Date('2026-11-27T03:00:00Z');

async function signed(credential: AwsCredential, headers: Record<string, string>, path = '/bucket/key', service = 's3', body?: string): Promise<{ target: string; headers: string[] }> {
  const request = await signer(credential, service).sign({ method: 'PUT', protocol: 'https:', hostname: 's3.eu-west-1.amazonaws.com', path, query: {}, headers: { host: 's3.eu-west-1.amazonaws.com', ...headers }, ...(body !== undefined ? { body } : {}) } as HttpRequest, { signingDate: DATE }) as HttpRequest;
  return { target: path, headers: Object.entries(request.headers).flat() };
}

function header(raw: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() === name) return raw[i + 1];
  return undefined;
}

/** The request as the real key would have signed it: what AWS checks. */
async function expectedAuthorization(headers: Record<string, string>, path = '/bucket/key'): Promise<string> {
  const request = await signer(REAL).sign({ method: 'PUT', protocol: 'https:', hostname: 's3.eu-west-1.amazonaws.com', path, query: {}, headers: { host: 's3.eu-west-1.amazonaws.com', ...headers } } as HttpRequest, { signingDate: DATE }) as HttpRequest;
  return request.headers.authorization!;
}

test('header signing with a session token: checked with the placeholder, signed again with the real key and token', async () => {
  const request = await signed(PLACEHOLDER, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' });
  expect(header(request.headers, 'x-amz-security-token')).toBe(PLACEHOLDER.sessionToken);
  const result = await resign({ method: 'PUT', ...request }, [signing()]);
  if (isRefusal(result)) throw new Error(result.reason);
  expect(header(result.headers, 'authorization')).toBe(await expectedAuthorization({ 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }));
  expect(header(result.headers, 'x-amz-security-token')).toBe(REAL.sessionToken);
  expect(result.keyId).toBe(PLACEHOLDER.accessKeyId);
});

test('refused: another key, a changed header, a service or region the binding does not allow, SigV4a, a signed trailer', async () => {
  const other = { ...PLACEHOLDER, accessKeyId: 'ASIAOTHERKEY0000TEST' };
  const byOther = await resign({ method: 'PUT', ...(await signed(other, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' })) }, [signing()]);
  expect(byOther).toMatchObject({ rule: 'aws-sigv4-key' });
  const request = await signed(PLACEHOLDER, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-amz-meta-a': 'one' });
  const changed = request.headers.map((v) => (v === 'one' ? 'two' : v));
  expect(await resign({ method: 'PUT', target: request.target, headers: changed }, [signing()])).toMatchObject({ rule: 'aws-sigv4-mismatch' });
  expect(await resign({ method: 'DELETE', ...request }, [signing()])).toMatchObject({ rule: 'aws-sigv4-mismatch' });
  expect(await resign({ method: 'PUT', ...request }, [signing({ services: ['sts'] })])).toMatchObject({ rule: 'aws-sigv4-service:secret:aws' });
  expect(await resign({ method: 'PUT', ...request }, [signing({ regions: ['us-east-1'] })])).toMatchObject({ rule: 'aws-sigv4-region:secret:aws' });
  const v4a = request.headers.map((v) => v.replace(/^AWS4-HMAC-SHA256/, 'AWS4-ECDSA-P256-SHA256'));
  expect(await resign({ method: 'PUT', target: request.target, headers: v4a }, [signing()])).toMatchObject({ rule: 'aws-sigv4-form' });
  const trailer = await signed(PLACEHOLDER, { 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER' });
  const refused = await resign({ method: 'PUT', ...trailer }, [signing()]);
  expect(refused).toMatchObject({ rule: 'aws-sigv4-payload' });
  expect(JSON.stringify(refused)).not.toContain(REAL.secretAccessKey);
});

test('a payload hash: the body is checked as it streams; one that does not match fails before its last bytes leave', async () => {
  const body = 'x'.repeat(100_000);
  const hash = createHash('sha256').update(body).digest('hex');
  const request = await signed(PLACEHOLDER, { 'x-amz-content-sha256': hash });
  const result = await resign({ method: 'PUT', ...request }, [signing()]) as Resigned;
  const run = async (data: string): Promise<string> => {
    let out = '';
    await pipeline(Readable.from([Buffer.from(data.slice(0, 50_000)), Buffer.from(data.slice(50_000))]), result.body!(), new Writable({ write(chunk: Buffer, _e, cb) { out += chunk.toString(); cb(); } }));
    return out;
  };
  expect(await run(body)).toBe(body);
  let passed = '';
  await expect(pipeline(Readable.from([Buffer.from('y'.repeat(50_000)), Buffer.from('x'.repeat(50_000))]), result.body!(), new Writable({ write(chunk: Buffer, _e, cb) { passed += chunk.toString(); cb(); } }))).rejects.toThrow(/SHA-256/);
  expect(passed.length).toBeLessThan(body.length);
});

test('no payload hash header (STS, query APIs): the body is hashed whole, and a changed body does not match', async () => {
  const body = 'Action=GetCallerIdentity&Version=2011-06-15';
  const request = await signed(PLACEHOLDER, {}, '/', 'sts', body);
  const first = await resign({ method: 'PUT', ...request }, [signing()]);
  expect(first).toMatchObject({ needsBody: true });
  const result = await resign({ method: 'PUT', ...request }, [signing()], Buffer.from(body));
  expect(isRefusal(result)).toBe(false);
  expect(await resign({ method: 'PUT', ...request }, [signing()], Buffer.from(body.replace('Get', 'Put')))).toMatchObject({ rule: 'aws-sigv4-mismatch' });
});

/** An aws-chunked body signed chunk by chunk, as the Java and JavaScript SDKs send S3 uploads. */
async function chunked(credential: AwsCredential, seed: string, chunks: string[]): Promise<Buffer> {
  const s = signer(credential);
  const scope = '20261127/eu-west-1/s3/aws4_request';
  let prior = seed;
  const out: Buffer[] = [];
  for (const data of [...chunks, '']) {
    const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', '20261127T030000Z', scope, prior, EMPTY, createHash('sha256').update(data).digest('hex')].join('\n');
    prior = await s.sign(toSign, { signingDate: DATE });
    out.push(Buffer.from(`${Buffer.byteLength(data).toString(16)};chunk-signature=${prior}\r\n${data}\r\n`));
  }
  return Buffer.concat(out);
}

test('STREAMING-AWS4-HMAC-SHA256-PAYLOAD: every chunk checked with the placeholder and signed again, chained from the real seed', async () => {
  const headers = { 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD', 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': '12' };
  const request = await signed(PLACEHOLDER, headers);
  const seed = /Signature=([0-9a-f]{64})/.exec(header(request.headers, 'authorization')!)![1];
  const body = await chunked(PLACEHOLDER, seed, ['hello ', 'world!']);
  const result = await resign({ method: 'PUT', ...request }, [signing()]) as Resigned;
  const run = async (input: Buffer): Promise<Buffer> => {
    const parts: Buffer[] = [];
    // Split at odd places: a chunk header may arrive in pieces.
    await pipeline(Readable.from([input.subarray(0, 7), input.subarray(7, 100), input.subarray(100)]), result.body!(), new Writable({ write(chunk: Buffer, _e, cb) { parts.push(chunk); cb(); } }));
    return Buffer.concat(parts);
  };
  const out = await run(body);
  const realSeed = /Signature=([0-9a-f]{64})/.exec(header(result.headers, 'authorization')!)![1];
  expect(out.equals(await chunked(REAL, realSeed, ['hello ', 'world!']))).toBe(true);
  expect(out.length).toBe(body.length);
  const tampered = Buffer.from(body.toString('latin1').replace('world!', 'WORLD!'), 'latin1');
  await expect(run(tampered)).rejects.toThrow(/does not match its signature/);
});

// As S3's presigners do: the payload is UNSIGNED-PAYLOAD, neither a query parameter nor a signed header.
const PRESIGN = { signingDate: DATE, expiresIn: 300, unhoistableHeaders: new Set(['x-amz-content-sha256']), unsignableHeaders: new Set(['x-amz-content-sha256']) };

test('presigned: refused by default; allowed within maxExpiry, with the real credential in the query', async () => {
  const url = await signer(PLACEHOLDER).presign({ method: 'GET', protocol: 'https:', hostname: 's3.eu-west-1.amazonaws.com', path: '/bucket/key', query: {}, headers: { host: 's3.eu-west-1.amazonaws.com', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } } as HttpRequest, PRESIGN);
  const query = Object.entries(url.query as Record<string, string>).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  const request = { method: 'GET', target: `/bucket/key?${query}`, headers: ['Host', 's3.eu-west-1.amazonaws.com'] };
  expect(query).not.toContain('Content-Sha256');
  expect(await resign(request, [signing()])).toMatchObject({ rule: 'aws-sigv4-presign:secret:aws' });
  expect(await resign(request, [signing({ presign: true, presignMaxExpiry: 60 })])).toMatchObject({ rule: 'aws-sigv4-presign:secret:aws' });
  const result = await resign(request, [signing({ presign: true })]) as Resigned;
  expect(isRefusal(result)).toBe(false);
  const real = await signer(REAL).presign({ method: 'GET', protocol: 'https:', hostname: 's3.eu-west-1.amazonaws.com', path: '/bucket/key', query: {}, headers: { host: 's3.eu-west-1.amazonaws.com', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } } as HttpRequest, PRESIGN);
  const params = new URLSearchParams(result.target.split('?')[1]);
  expect(params.get('X-Amz-Credential')).toBe(`${REAL.accessKeyId}/20261127/eu-west-1/s3/aws4_request`);
  expect(params.get('X-Amz-Security-Token')).toBe(REAL.sessionToken);
  expect(params.get('X-Amz-Signature')).toBe((real.query as Record<string, string>)['X-Amz-Signature']);
});

test('credentials: both JSON shapes; an error names the reference, never the value', () => {
  expect(parseAwsCredential('secret:aws', JSON.stringify({ AccessKeyId: 'AKIAREALKEY7TESTQ2XZ', SecretAccessKey: REAL.secretAccessKey, Version: 1 }))).toEqual({ accessKeyId: 'AKIAREALKEY7TESTQ2XZ', secretAccessKey: REAL.secretAccessKey });
  expect(parseAwsCredential('secret:aws', JSON.stringify(REAL))).toEqual(REAL);
  for (const value of ['not json', REAL.secretAccessKey, JSON.stringify({ accessKeyId: 'AKIAREALKEY7TESTQ2XZ' }), JSON.stringify({ secretAccessKey: REAL.secretAccessKey })]) {
    let error: { code?: string; message?: string } = {};
    try {
      parseAwsCredential('secret:aws', value);
    } catch (caught) {
      error = caught as typeof error;
    }
    expect(error.code).toBe('EXECGATE_ERR_AWS_CREDENTIAL_INVALID');
    expect(error.message).toContain('<<secret:aws>>');
    expect(error.message).not.toContain(REAL.secretAccessKey);
  }
  const placeholder = createAwsPlaceholder(REAL);
  expect(placeholder.accessKeyId).toMatch(/^ASIA[A-Z2-7]{16}$/);
  expect(placeholder.secretAccessKey).toHaveLength(40);
  expect(placeholder.sessionToken).toBeDefined();
  expect(createAwsPlaceholder({ accessKeyId: 'AKIAREALKEY7TESTQ2XZ', secretAccessKey: REAL.secretAccessKey }).accessKeyId).toMatch(/^AKIA/);
});

test('policy: aws-sigv4 defaults to the AWS endpoints; its options and inject\'s do not mix', () => {
  const tmp = makeTempDir('execgate-aws-policy-');
  try {
    writeFiles(tmp.dir, { 'policy.yaml': 'version: 1\nsecrets:\n  bind:\n    - { ref: "secret:aws", delivery: aws-sigv4, services: [s3], presign: { maxExpiry: 300 } }\n' });
    const binding = loadPolicyFile(join(tmp.dir, 'policy.yaml')).policy.secrets.bind[0]!;
    expect(binding.hosts.map((h) => h.text)).toEqual(['*.amazonaws.com', 'amazonaws.com']);
    expect(binding.aws).toEqual({ services: ['s3'], presign: true, presignMaxExpiry: 300 });
    expect(binding.place.headers).toEqual([]);
    for (const [text, code] of [
      ['{ ref: "secret:aws", delivery: aws-sigv4, headers: [X-Key] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID'],
      ['{ ref: "secret:aws", delivery: inject, hosts: [a.test], presign: true }', 'EXECGATE_ERR_EGRESS_BIND_INVALID'],
      ['{ ref: "secret:aws", hosts: [a.test], services: [s3] }', 'EXECGATE_ERR_EGRESS_BIND_INVALID'],
      ['{ ref: "secret:aws", delivery: inject }', 'EXECGATE_ERR_EGRESS_BIND_INVALID'],
    ] as const) {
      writeFiles(tmp.dir, { 'bad.yaml': `version: 1\nsecrets:\n  bind:\n    - ${text}\n` });
      expect(() => loadPolicyFile(join(tmp.dir, 'bad.yaml'))).toThrow(expect.objectContaining({ code }));
    }
  } finally {
    tmp.cleanup();
  }
});
