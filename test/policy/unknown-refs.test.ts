/*
 * `secrets.unknown` through the real gateway: literal (the default) passes an unknown token on
 * as text, warn does that and tells the host's logger, deny refuses before anything is spawned.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { baseEnv, makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
const gateways: Gateway[] = [];
beforeEach(() => { tmp = makeTempDir('execgate-unknown-'); });
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
  tmp.cleanup();
});

function open(unknown: string | undefined, warnings: Array<{ obj: unknown; msg: string }>): Gateway {
  const policyFile = join(tmp.dir, 'p.yaml');
  writeFileSync(policyFile, `version: 1\n${unknown ? `secrets:\n  unknown: ${unknown}\n` : ''}`);
  const gateway = createGateway({
    home: join(tmp.dir, 'home'),
    env: baseEnv({ EXECGATE_SECRET_KNOWN: 'known-value-123456' }),
    cwd: tmp.dir,
    policyFile,
    logger: { warn: (obj: object, msg: string) => { warnings.push({ obj, msg }); } },
  });
  gateways.push(gateway);
  return gateway;
}

test.each([[undefined], ['literal']])('%s: the token stays as text, no warning', async (setting) => {
  const warnings: Array<{ obj: unknown; msg: string }> = [];
  const result = await open(setting, warnings).exec({ command: "printf '%s' '<<secret:unknown-one>>'" });
  expect(result.stdout).toBe('<<secret:unknown-one>>');
  expect(result.refs).toEqual([expect.objectContaining({ ref: '<<secret:unknown-one>>', found: false })]);
  expect(warnings).toEqual([]);
});

test('warn: the token stays as text and the logger is told, by name', async () => {
  const warnings: Array<{ obj: unknown; msg: string }> = [];
  const result = await open('warn', warnings).exec({ command: "printf '%s %s' '<<secret:unknown-one>>' <<secret:known>>" });
  expect(result.stdout).toBe('<<secret:unknown-one>> [REDACTED:secret:known]');
  expect(warnings).toHaveLength(1);
  expect(warnings[0]?.msg).toContain('no source knows <<secret:unknown-one>>');
  expect(warnings[0]?.obj).toMatchObject({ refs: ['<<secret:unknown-one>>'] });
  expect(JSON.stringify(warnings)).not.toContain('known-value');
});

test('deny: EXECGATE_ERR_REF_UNKNOWN, nothing spawned; known references still run', async () => {
  const gateway = open('deny', []);
  const marker = join(tmp.dir, 'MARKER');
  await expect(gateway.exec({ command: `touch ${marker}; echo <<secret:unknown-one>> <<secret:known>>` })).rejects.toMatchObject({
    code: 'EXECGATE_ERR_REF_UNKNOWN',
    details: { rule: 'secrets.unknown', refs: ['<<secret:unknown-one>>'] },
  });
  expect(existsSync(marker)).toBe(false);
  expect((await gateway.exec({ command: 'echo <<secret:known>>' })).stdout).toBe('[REDACTED:secret:known]\n');
});

test('a policy with another value is invalid', () => {
  const policyFile = join(tmp.dir, 'bad.yaml');
  writeFileSync(policyFile, 'version: 1\nsecrets:\n  unknown: ignore\n');
  expect(() => createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, policyFile })).toThrow(
    expect.objectContaining({ code: 'EXECGATE_ERR_POLICY_INVALID' }),
  );
});

describe('Why 5: an unknown reference speaks', () => {
  test('unquoted, it reaches the program as its text: bash does not read `<<` as a heredoc', async () => {
    const result = await open(undefined, []).exec({ command: 'printf "[%s]\\n" <<secret:nope-typo>> x<<secret:nope-typo>>y; echo after' });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('[<<secret:nope-typo>>]\n[x<<secret:nope-typo>>y]\nafter\n');
  });

  test('the text is the same in every quoting context, beside a known reference', async () => {
    const result = await open(undefined, []).exec({
      command: 'printf "%s|" <<secret:nope>> "<<secret:nope>>" \'<<secret:nope>>\' "${UNSET:-<<secret:nope>>}" <<secret:known>>; cat <<EOF\n<<secret:nope>>\nEOF',
    });
    expect(result.stdout).toBe('<<secret:nope>>|<<secret:nope>>|<<secret:nope>>|<<secret:nope>>|[REDACTED:secret:known]|<<secret:nope>>\n');
  });

  test('the result says which references no source knew, with the closest known names', async () => {
    const gateway = open(undefined, []);
    gateway.refs.set('secret', 'github-token', 'ghp-value-1234567890');
    const result = await gateway.exec({ command: 'echo <<secret:gihtub-token>> <<secret:nothing-close-at-all>> <<secret:known>>' });
    expect(result.refs).toEqual([
      { kind: 'secret', id: 'gihtub-token', ref: '<<secret:gihtub-token>>', found: false, source: undefined, suggestions: ['<<secret:github-token>>'] },
      { kind: 'secret', id: 'nothing-close-at-all', ref: '<<secret:nothing-close-at-all>>', found: false, source: undefined, suggestions: [] },
      { kind: 'secret', id: 'known', ref: '<<secret:known>>', found: true, source: 'env' },
    ]);
  });
});
