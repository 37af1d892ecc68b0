/*
 * AWS keys that never enter the sandbox (`secrets.bind` with `delivery: aws-sigv4`): Debian's
 * awscli and boto3 inside real sandboxed gateway runs hold a placeholder pair only; the egress
 * proxy checks each request is signed with this run's placeholder, signs it again with the real
 * pair, and a local S3 and STS (aws-server.ts) check the real signature as AWS would.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
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
const sandboxable = checkPlatform(undefined).ok && existsSync('/usr/bin/aws');
const maybe = sandboxable ? describe : describe.skip;
const AWS = '/usr/bin/aws --endpoint-url https://s3.aws.test';

let tmp: ReturnType<typeof makeTempDir>;
let s3: AwsServer;
let sts: AwsServer;
let other: TestService;
let names: ReturnType<typeof makeNames>;

beforeAll(async () => {
  tmp = makeTempDir('execgate-aws-');
  s3 = await startAwsServer('s3', REAL);
  sts = await startAwsServer('sts', REAL);
  other = await startService('other');
  names = makeNames({ 's3.aws.test': s3 as unknown as TestService, 'sts.aws.test': sts as unknown as TestService, 'other.test': other });
});

afterAll(async () => {
  await s3?.close();
  await sts?.close();
  await other?.close();
  tmp?.cleanup();
});

function makeGateway(name: string, extra = ''): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [s3.aws.test, sts.aws.test, other.test] } }',
    'secrets:',
    '  bind:',
    `    - { ref: "secret:aws", hosts: [s3.aws.test, sts.aws.test], delivery: aws-sigv4${extra} }`,
  ].join('\n'));
  const gateway = createGateway({
    home, env: baseEnv(), cwd: dir, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'aws' ? { found: true, value: JSON.stringify(REAL) } : { found: false }) }],
    egress: { ...names, upstreamCa: [publicCa.certPem], runtimeDir: dir },
  });
  return { gateway, dir, home };
}

const ENV = 'export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER= HOME=$PWD/h; mkdir -p h; ';

maybe('smoke', () => {
  let gateway: Gateway;
  let dir: string;
  beforeAll(() => ({ gateway, dir } = makeGateway('smoke')));
  afterAll(async () => { await gateway.close(); });
  test('mb and ls', async () => {
    const result = await gateway.exec({ command: `${ENV} env | grep AWS_; ${AWS} s3 mb s3://bucket1 && ${AWS} s3 ls`, cwd: dir, timeout: 60_000 });
    console.log(result.stdout, result.stderr, result.exitCode, JSON.stringify(s3.seen.map((s) => [s.method, s.url, s.keyId, s.status])));
  }, 120_000);
});
