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

describe('MaskMemory#getShared: the remembered values compiled once for every run', () => {
  const value = (index: number): string => `remembered-value-${String(index).padStart(4, '0')}`;

  test('one redactor while nothing changes, extended with values remembered later', () => {
    const memory = new MaskMemory(16);
    memory.remember(value(1), 'secret:one');
    memory.remember('short', 'secret:short');
    const shared = memory.getShared(8);
    expect(memory.getShared(8)).toBe(shared);
    memory.remember(value(2), 'secret:two');
    expect(memory.getShared(8)).toBe(shared);
    expect(shared.redactString(`${value(1)} ${value(2)} short`).text).toBe('[REDACTED:secret:one] [REDACTED:secret:two] short');
    // Another minimum length has its own, with the shorter values in it.
    expect(memory.getShared(4).redactString('short').text).toBe('[REDACTED:secret:short]');
    expect(memory.getShared(8)).toBe(shared);
  });

  test('a value relabelled: built anew, with the new label', () => {
    const memory = new MaskMemory(16);
    memory.remember(value(1), 'secret:old');
    const shared = memory.getShared(8);
    memory.remember(value(1), 'secret:new');
    const rebuilt = memory.getShared(8);
    expect(rebuilt).not.toBe(shared);
    expect(rebuilt.redactString(value(1)).text).toBe('[REDACTED:secret:new]');
  });

  test('forgotten values stay masked until a quarter of the limit is forgotten, then it is built anew without them', () => {
    const memory = new MaskMemory(8);
    for (let index = 0; index < 8; index++) memory.remember(value(index), `secret:v${index}`);
    const shared = memory.getShared(8);
    // Two forgotten (a quarter of 8): still the same redactor, still masking them.
    memory.remember(value(8), 'secret:v8');
    memory.remember(value(9), 'secret:v9');
    expect(memory.getShared(8)).toBe(shared);
    expect(shared.redactString(`${value(0)} ${value(9)}`).text).toBe('[REDACTED:secret:v0] [REDACTED:secret:v9]');
    // A third: built anew from what is remembered.
    memory.remember(value(10), 'secret:v10');
    const rebuilt = memory.getShared(8);
    expect(rebuilt).not.toBe(shared);
    expect(rebuilt.redactString(`${value(0)} ${value(2)} ${value(3)} ${value(10)}`).text).toBe(`${value(0)} ${value(2)} [REDACTED:secret:v3] [REDACTED:secret:v10]`);
    expect(rebuilt.size).toBe(8);
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

  test("a run's own label wins over the label a value was remembered under, and is remembered for later runs", async () => {
    t.gateway.refs.set('secret', 'mem', VALUE);
    t.gateway.refs.set('secret', 'again', VALUE);
    await t.gateway.exec({ command: 'printf "%s\\n" <<secret:mem>> > leaked.txt' });
    const own = await t.gateway.exec({ command: 'printf "%s\\n" <<secret:again>>; cat leaked.txt' });
    expect(own.stdout).toBe('[REDACTED:secret:again]\n[REDACTED:secret:again]\n');
    const later = await t.gateway.exec({ command: 'cat leaked.txt' });
    expect(later.stdout).toBe('[REDACTED:secret:again]\n');
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

describe('gateway.maskKnown (what the file tools return)', () => {
  const t = useTempGateway({ env: { EXECGATE_SECRET_PLANTED: ENV_VALUE } });

  test('masks the values runs met under their labels, and the gateway\'s own secrets; a remembered label wins', async () => {
    expect(t.gateway.maskKnown(`a ${ENV_VALUE} b ${VALUE}`)).toBe(`a [REDACTED:env:EXECGATE_SECRET_PLANTED] b ${VALUE}`);
    t.gateway.refs.set('secret', 'mem', VALUE);
    await t.gateway.exec({ command: 'printf %s <<secret:mem>> >/dev/null' });
    expect(t.gateway.maskKnown(`a ${ENV_VALUE} b ${VALUE}`)).toBe('a [REDACTED:env:EXECGATE_SECRET_PLANTED] b [REDACTED:secret:mem]');
    // A run resolved the gateway's own secret by name: the label it used is the one remembered.
    await t.gateway.exec({ command: 'printf %s <<secret:PLANTED>> >/dev/null' });
    expect(t.gateway.maskKnown(`a ${ENV_VALUE} b ${Buffer.from(VALUE).toString('base64')}`)).toBe('a [REDACTED:secret:PLANTED] b [REDACTED:secret:mem]');
  });

  test('a run masks the gateway\'s own secret through the remembered values, under the remembered label, as maskKnown does', async () => {
    // Not remembered yet: the run registers it under its variable's name.
    const first = await t.gateway.exec({ command: `printf %s ${ENV_VALUE} | base64 -w0` });
    expect(first.stdout).toBe('[REDACTED:env:EXECGATE_SECRET_PLANTED]');
    await t.gateway.exec({ command: 'printf %s <<secret:PLANTED>> >/dev/null' });
    // Remembered under the label a run resolved it by: every spelling is masked, in a run that
    // resolved nothing, under that label.
    const later = await t.gateway.exec({ command: `echo ${ENV_VALUE}; printf %s ${ENV_VALUE} | base64 -w0` });
    expect(later.stdout).toBe('[REDACTED:secret:PLANTED]\n[REDACTED:secret:PLANTED]');
    expect(later.output).not.toContain(ENV_VALUE);
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
