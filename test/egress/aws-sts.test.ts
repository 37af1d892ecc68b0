/*
 * aws-sigv4 and STS: the key that never enters the sandbox must not be traded for one that does.
 * STS's GetSessionToken answers any IAM user's key with a new key pair and session token, valid
 * for up to 36 hours from anywhere, and IAM cannot deny it (it is an authentication call, which
 * policies do not govern); GetFederationToken and AssumeRole* hand out keys the same way. Those
 * would reach the run in the response, unmasked (they are new values), and the run could carry
 * them out. The proxy signs an STS request again only for the calls that hand out no credential
 * (GetCallerIdentity, GetAccessKeyInfo, DecodeAuthorizationMessage), whatever form the request
 * takes: the AWS CLI's POST, a GET with the action in its query, a body sent with its hash (so the
 * proxy would otherwise stream it unread), two actions in one request; a streaming payload (framed,
 * so not the form the proxy reads) is refused whatever it names.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { MINTED, startAwsServer, type AwsKey, type AwsServer } from './aws-server';
import { makeNames, publicCa, type TestService } from './helpers';

const REAL: AwsKey = { accessKeyId: 'AKIAREALKEY7TESTQ2XZ', secretAccessKey: 'rEaL/sEcReT+kEy0123456789abcdefGHIJKLMN' };
const sandboxable = checkPlatform(undefined).ok && existsSync('/usr/bin/aws');
const maybe = sandboxable ? describe : describe.skip;

/* Signs one STS request inside the run with botocore and the run's placeholder pair; writes a curl config. */
const SIGN_PY = `
import hashlib, os, sys
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
method, url, body, out, with_hash = sys.argv[1:6]
headers = {'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8'} if body else {}
if with_hash == 'hash':
    headers['X-Amz-Content-SHA256'] = hashlib.sha256(body.encode()).hexdigest()
if with_hash == 'streaming':
    headers['X-Amz-Content-SHA256'] = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER'
creds = Credentials(os.environ['AWS_ACCESS_KEY_ID'], os.environ['AWS_SECRET_ACCESS_KEY'], os.environ.get('AWS_SESSION_TOKEN'))
request = AWSRequest(method=method, url=url, data=body.encode(), headers=headers)
SigV4Auth(creds, 'sts', 'us-east-1').add_auth(request)
with open(out, 'w') as f:
    for name, value in request.headers.items():
        f.write('header = "%s: %s"\\n' % (name, value))
    if body:
        f.write('data = "%s"\\n' % body)
`;

let tmp: ReturnType<typeof makeTempDir>;
let sts: AwsServer;
let gateway: Gateway;
let dir: string;

beforeAll(async () => {
  tmp = makeTempDir('execgate-aws-sts-');
  sts = await startAwsServer('sts', REAL);
  dir = join(tmp.dir, 'work');
  mkdirSync(dir);
  writeFileSync(join(dir, 'sign.py'), SIGN_PY);
  const policy = join(tmp.dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    'sandbox: { mode: required, network: { mode: allowlist, allow: [sts.aws.test] } }',
    'secrets:',
    '  bind:',
    '    - { ref: "secret:aws", hosts: [sts.aws.test], delivery: aws-sigv4 }',
  ].join('\n'));
  gateway = createGateway({
    home: join(tmp.dir, 'home'), env: baseEnv(), cwd: dir, policyFile: policy,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'aws' ? { found: true, value: JSON.stringify(REAL) } : { found: false }) }],
    egress: { ...makeNames({ 'sts.aws.test': sts as unknown as TestService }), upstreamCa: [publicCa.certPem], runtimeDir: tmp.dir },
  });
});

afterAll(async () => {
  await gateway?.close();
  await sts?.close();
  tmp?.cleanup();
});

const ENV = 'export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER= HOME=$PWD/h; mkdir -p h; ';
const STS = '/usr/bin/aws --endpoint-url https://sts.aws.test sts';

maybe('aws-sigv4: STS calls that hand out credentials', () => {
  test('get-caller-identity is signed again; get-session-token, in every form, is refused and no minted key reaches the run', async () => {
    const sign = (name: string, method: string, url: string, body: string, hash = 'nohash'): string => `/usr/bin/python3 sign.py ${method} '${url}' '${body}' ${name}.cfg ${hash}`;
    const send = (name: string, method: string, url: string): string => `curl -sS -o ${name}.out -w "${name}=%{http_code}\\n" -X ${method} -K ${name}.cfg '${url}'; cat ${name}.out; echo`;
    const forms: Array<[string, string, string, string, string?]> = [
      ['post', 'POST', 'https://sts.aws.test/', 'Action=GetSessionToken&Version=2011-06-15'],
      ['hashed', 'POST', 'https://sts.aws.test/', 'Action=GetSessionToken&Version=2011-06-15', 'hash'],
      ['query', 'GET', 'https://sts.aws.test/?Action=GetSessionToken&Version=2011-06-15', ''],
      ['twice', 'POST', 'https://sts.aws.test/?Action=GetCallerIdentity', 'Action=GetSessionToken&Version=2011-06-15'],
      ['lower', 'POST', 'https://sts.aws.test/', 'action=getsessiontoken&Version=2011-06-15'],
      // A streaming payload is framed (aws-chunked) where the proxy would read a form: refused whatever it says.
      ['streamed', 'POST', 'https://sts.aws.test/?Action=GetCallerIdentity', 'Action=GetCallerIdentity&Version=2011-06-15', 'streaming'],
    ];
    const result = await gateway.exec({
      command: [
        ENV,
        `${STS} get-caller-identity --output text`,
        `${STS} get-session-token --output text; echo "cli=$?"`,
        ...forms.flatMap(([name, method, url, body, hash]) => [sign(name, method, url, body, hash), send(name, method, url)]),
      ].join('\n'),
      cwd: dir,
      timeout: 120_000,
    });
    expect(result.stdout).toMatch(/123456789012\s+arn:aws:iam::123456789012:user\/test/);
    const output = `${result.stdout}\n${result.stderr}\n${readTreeText(dir)}`;
    for (const part of [MINTED.accessKeyId, MINTED.secretAccessKey, MINTED.sessionToken!]) expect(output).not.toContain(part);
    expect(result.stdout).toMatch(/cli=[1-9]/);
    for (const [name] of forms) expect(result.stdout).toContain(`${name}=403`);
    expect(result.stdout).toContain('the STS action `GetSessionToken` is not signed again');
    const refusals = readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record.event === 'egress.decision' && record.allowed === false);
    expect(refusals.map((record) => record.rule)).toEqual(Array(forms.length + 1).fill('aws-sigv4-sts'));
    // STS saw the identity call only, signed with the real key.
    expect(sts.seen.map((seen) => seen.status)).toEqual([200]);
    expect(sts.seen.every((seen) => seen.keyId === REAL.accessKeyId && !seen.raw.toString('latin1').toLowerCase().includes('getsessiontoken'))).toBe(true);
  });
});

function readTreeText(path: string): string {
  const { readdirSync } = require('node:fs') as typeof import('node:fs');
  return readdirSync(path, { withFileTypes: true }).map((entry) => {
    const full = join(path, entry.name);
    return entry.isDirectory() ? readTreeText(full) : entry.isFile() ? readFileSync(full, 'latin1') : '';
  }).join('\n');
}
