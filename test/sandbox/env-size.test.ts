/*
 * An environment larger than one execve(2) accepts (a variable over MAX_ARG_STRLEN, or all of
 * them over ARG_MAX): the same coded error for a cold run and a run in a warm sandbox, before
 * anything is spawned, whether the size comes from the request's `env`, a resolved reference or
 * the gateway's own environment. Real bubblewrap, real bash.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { ExecgateError } from '../../src/errors';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, sandboxPolicy } from './helpers';

jest.setTimeout(120_000);

const OFFLINE = sandboxPolicy({ mode: 'required' }, { network: { ...DEFAULT_POLICY.network, mode: 'none', allow: [], deny: [] } });
const HUGE = `${'h'.repeat(100_000)}-HUGE-VALUE-${'q'.repeat(100_000)}`;
// 3 MB in all: over ARG_MAX for the default 8 MiB stack (2 MiB), each variable under MAX_ARG_STRLEN.
const CROWD = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`CROWD_${i}`, 'y'.repeat(100_000)]));

describeSandboxed('an environment too large to exec: one coded error, cold or warm', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  const open: Gateway[] = [];

  beforeEach(() => { tmp = makeTempDir('execgate-env-size-'); });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((gateway) => gateway.close()));
    rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
  });

  async function gatewayWith(warmSandboxes: number, env: NodeJS.ProcessEnv = baseEnv()): Promise<Gateway> {
    const home = join(tmp.dir, `state-${open.length}`);
    const gateway = createGateway({
      policy: OFFLINE, home, env, cwd: tmp.dir, warmSandboxes,
      sources: [{ name: 'test', kinds: ['secret'], lookup: (_kind, id) => (id === 'huge' ? { found: true, value: HUGE } : { found: false }) }],
    });
    open.push(gateway);
    if (warmSandboxes > 0) {
      // The first run sets a warm sandbox up for the next one.
      await gateway.exec({ command: 'true', envMode: 'replace' });
      expect(await waitFor(() => (gateway.warmSandboxes?.waiting ?? 0) > 0, 30_000)).toBe(true);
    }
    return gateway;
  }

  async function refusal(gateway: Gateway, request: Record<string, unknown>): Promise<{ code: string; message: string }> {
    const marker = join(tmp.dir, 'ran');
    const error = await gateway.exec({ command: `touch ${marker}`, ...request } as never).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ExecgateError);
    expect(existsSync(marker)).toBe(false);
    const { code, message } = error as ExecgateError;
    expect(message).not.toContain('-HUGE-VALUE-');
    return { code, message };
  }

  test.each([
    ['one requested variable over MAX_ARG_STRLEN', { env: { BIG: 'x'.repeat(200_000) } }, /`env.BIG` is 200004 bytes/],
    ['requested variables over ARG_MAX in all', { env: CROWD }, /The `env` option is \d+ bytes in 30 variables/],
    ['a resolved reference over MAX_ARG_STRLEN', { command: 'touch ran; : <<secret:huge>>' }, /environment variable `EXECGATE_REF_0` would be 200027 bytes/],
  ])('%s', async (_name, request, message) => {
    const seen: Array<{ code: string; message: string }> = [];
    for (const warm of [0, 1]) {
      const gateway = await gatewayWith(warm);
      const before = gateway.warmSandboxes?.warm;
      seen.push(await refusal(gateway, request));
      expect(gateway.warmSandboxes?.warm).toBe(before);
    }
    expect(seen[0]).toEqual(seen[1]);
    expect(seen[0]!.code).toBe('EXECGATE_ERR_INVALID_ENV');
    expect(seen[0]!.message).toMatch(message);
    expect(seen[0]!.message).toContain('Nothing was run.');
  });

  test('the gateway\'s own environment over ARG_MAX: refused the same cold and warm; `envMode: replace` runs', async () => {
    const seen: Array<{ code: string; message: string }> = [];
    for (const warm of [0, 1]) {
      const gateway = await gatewayWith(warm, baseEnv(CROWD));
      seen.push(await refusal(gateway, {}));
      const result = await gateway.exec({ command: 'echo "ran ${#CROWD_0}"', envMode: 'replace' });
      expect(result.stdout).toBe('ran 0\n');
    }
    // (The arguments count the launcher, which names the gateway's network namespace holder by
    // its pid: two gateways' holders may have pids of different lengths.)
    const sameBut = (error: { code: string; message: string }): object => ({ ...error, message: error.message.replace(/its arguments \(\d+ bytes\)/, 'its arguments (N bytes)') });
    expect(sameBut(seen[0]!)).toEqual(sameBut(seen[1]!));
    expect(seen[0]!.code).toBe('EXECGATE_ERR_INVALID_ENV');
    expect(seen[0]!.message).toMatch(/The run's environment \(\d+ bytes in \d+ variables, inherited ones and resolved values included\) and its arguments \(\d+ bytes\) add up to more than/);
  });
});
