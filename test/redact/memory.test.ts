/*
 * Values cross runs: a value one run writes somewhere (a file, a file name) must come back masked
 * when a later run of the same gateway prints it, even though that run resolved nothing; and
 * the gateway's own EXECGATE_SECRET_* values are masked in every run, whatever the policy's
 * environment mode made of them.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { MaskMemory } from '../../src/redact/memory';
import { useTempGateway } from '../helpers/gateway';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const VALUE = 'mem-VALUE-6f1c2a9e77';
const ENV_VALUE = 'env-VALUE-b8d04e5531';
const POLICIES = join(__dirname, '..', '..', 'policies');

describe('MaskMemory', () => {
  test('keeps at most `limit` values, forgetting the least recently remembered first', () => {
    const memory = new MaskMemory(2);
    memory.remember('value-one-1234', 'secret:a');
    memory.remember('value-two-1234', 'secret:b');
    memory.remember('value-one-1234', 'secret:a');
    memory.remember('value-three-12', 'secret:c');
    expect([...memory.entries()].map(([, label]) => label)).toEqual(['secret:a', 'secret:c']);
    expect(() => new MaskMemory(0)).toThrow(/positive integer/);
  });
});

describe('values met in earlier runs of the same gateway', () => {
  const t = useTempGateway();

  test('a value written to a file by one run is masked when a later run prints the file', async () => {
    t.gateway.refs.set('secret', 'mem', VALUE);
    const first = await t.gateway.exec({ command: 'printf "%s\\n" <<secret:mem>> > leaked.txt; echo written' });
    expect(first.stdout).toBe('written\n');
    const second = await t.gateway.exec({ command: 'cat leaked.txt; cat leaked.txt | base64' });
    expect(second.stdout).not.toContain(VALUE);
    expect(second.stdout).not.toContain(Buffer.from(`${VALUE}\n`).toString('base64').slice(0, 16));
    expect(second.stdout).toContain('[REDACTED:secret:mem]');
    expect(second.redactions).toBeGreaterThanOrEqual(1);
  });

  test('a file named after the value shows up masked in a later listing', async () => {
    t.gateway.refs.set('secret', 'mem', VALUE);
    await t.gateway.exec({ command: 'mkdir names && : > "names/<<secret:mem>>"' });
    expect(readdirSync(join(t.dir, 'names'))).toEqual([VALUE]);
    const listing = await t.gateway.exec({ command: 'ls names' });
    expect(listing.stdout).toBe('[REDACTED:secret:mem]\n');
  });

  test('background output files mask remembered values too', async () => {
    t.gateway.refs.set('secret', 'mem', VALUE);
    await t.gateway.exec({ command: 'printf %s <<secret:mem>> > v.txt' });
    const bg = await t.gateway.exec({ command: 'cat v.txt; echo', mode: 'background' });
    await t.gateway.background.wait(bg.id, 20_000);
    const status = t.gateway.background.status(bg.id, { offset: 0 });
    expect(status.output.text).toContain('[REDACTED:secret:mem]');
    expect(status.output.text).not.toContain(VALUE);
  });
});

describe("the gateway's own EXECGATE_SECRET_* values", () => {
  test('are masked under strict.yaml, whose allowlist removes them rather than withholding them', async () => {
    const tmp = makeTempDir();
    try {
      const file = join(tmp.dir, 'planted.txt');
      require('node:fs').writeFileSync(file, `token=${ENV_VALUE}\n`);
      const gateway = createGateway({
        home: join(tmp.dir, 'home'),
        env: baseEnv({ EXECGATE_SECRET_PLANTED: ENV_VALUE }),
        cwd: tmp.dir,
        policyFile: join(POLICIES, 'strict.yaml'),
      });
      try {
        const result = await gateway.exec({ command: 'cat planted.txt' });
        expect(result.stdout).toBe('token=[REDACTED:env:EXECGATE_SECRET_PLANTED]\n');
      } finally {
        await gateway.close();
      }
    } finally {
      tmp.cleanup();
    }
  });
});
