/*
 * `secrets.bind` on the gateway's one path: checked after the policy decision and before any
 * store is asked for a value. An unsandboxed run cannot be held to a secret's hosts, so there a
 * bound secret fails closed (sandboxed runs: gateway-runs.test.ts).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isExecgateError, type ExecgateError } from '../../src/errors';
import { createGateway, type Gateway } from '../../src/gateway';
import { baseEnv, makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
const asked: string[] = [];

function writePolicy(sandboxMode: string): string {
  const policy = join(tmp.dir, `policy-${sandboxMode}.yaml`);
  writeFileSync(policy, [
    'version: 1',
    `sandbox: { mode: ${sandboxMode}, network: { mode: allowlist, allow: [github.com] } }`,
    'secrets:',
    '  bind:',
    '    - { ref: "secret:gh", hosts: [github.com], delivery: inject }',
    '    - { ref: "secret:npm", hosts: [registry.npmjs.org] }',
  ].join('\n'));
  return policy;
}

function makeGateway(sandboxMode: string): Gateway {
  const created = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, policyFile: writePolicy(sandboxMode) });
  created.refs.addSource({ name: 'spy', kinds: ['secret'], lookup: (_kind, id) => { asked.push(id); return { found: true, value: `value-of-${id}-0123456789` }; } });
  return created;
}

beforeEach(() => {
  tmp = makeTempDir('execgate-egress-gw-');
  asked.length = 0;
  gateway = makeGateway('auto');
});

afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

async function refusal(promise: Promise<unknown>): Promise<ExecgateError> {
  try {
    await promise;
  } catch (error) {
    if (isExecgateError(error)) return error;
    throw error;
  }
  throw new Error('expected the request to be refused');
}

test('a bound secret on an unsandboxed run: refused before resolution, nothing run', async () => {
  await gateway.close();
  gateway = makeGateway('off');
  const marker = join(tmp.dir, 'MARKER');
  const error = await refusal(gateway.exec({ command: `touch ${marker}; curl -H "Authorization: <<secret:gh>>" https://github.com` }));
  expect(error.code).toBe('EXECGATE_ERR_EGRESS_NEEDS_SANDBOX');
  expect(error.message).toContain('<<secret:gh>>');
  expect(asked).toEqual([]);
  expect(existsSync(marker)).toBe(false);
});

test('a bound secret that could never reach its hosts: refused with the reason, before resolution', async () => {
  const error = await refusal(gateway.exec({ command: 'NPM_TOKEN=<<secret:npm>> npm publish' }));
  expect(error.code).toBe('EXECGATE_ERR_EGRESS_UNREACHABLE');
  expect(error.message).toContain('registry.npmjs.org');
  expect(error.message).toContain('allowlist');
  expect(asked).toEqual([]);
});

test('secrets that are not bound are unaffected', async () => {
  const result = await gateway.exec({ command: 'printf %s <<secret:other>>' });
  expect(result.stdout).toBe('[REDACTED:secret:other]');
  expect(asked).toEqual(['other']);
});
