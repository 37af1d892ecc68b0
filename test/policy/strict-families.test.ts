/*
 * strict.yaml against the families an adversarial review walked around: a wrapper that runs its
 * arguments through a shell (`sg GROUP -c`), disk tools under their per-filesystem names, a
 * download piped into a shell in any spelling, and command names or code decided at run time
 * (`rules.uncertain: deny`). Each case runs through a real gateway and real bash: refused with the
 * rule named, and the marker the command would create never appears. Plain commands still run.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { loadPolicyFile } from '../../src/policy/load';
import { decideRequest } from '../../src/policy/decide';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const STRICT = join(__dirname, '..', '..', 'policies', 'strict.yaml');

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, policyFile: STRICT });
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

const refused: Array<[string, string, string]> = [
  // [command (MARK is replaced by a marker path), rule expected, why]
  ['sg root -c "sudo touch MARK"', 'no-privilege-escalation', 'sg runs its -c operand through a shell'],
  ['sg - root "sudo touch MARK"', 'no-privilege-escalation', 'sg with a leading - and no -c'],
  ['/usr/sbin/mkfs.ext4 -q -F img; touch MARK', 'no-disk-tools', 'a per-filesystem mkfs name'],
  ['mkswap img; touch MARK', 'no-disk-tools', 'mkswap'],
  ['echo x | /bin/sh -c "touch MARK"', 'rules.default', 'control: static code is read'],
  ['printf "touch MARK" | /bin/sh', 'rules.uncertain', 'a shell reading its script from a pipe'],
  ['printf "touch MARK" |& sh', 'rules.uncertain', '|& into a shell'],
  ['printf "touch MARK" | tee /dev/null | bash', 'rules.uncertain', 'a shell at the end of a longer pipeline'],
  ['c=sudo; $c touch MARK', 'rules.uncertain', 'a command name held in a variable'],
  ['X="touch MARK"; eval "$X"', 'rules.uncertain', 'eval of a variable'],
  ['$(echo sudo) touch MARK', 'rules.uncertain', 'a command name built by $(...)'],
];

describe('strict.yaml closes the families', () => {
  test.each(refused.filter(([, rule]) => rule !== 'rules.default'))('%s is refused by %s (%s)', async (template, rule) => {
    const mark = join(tmp.dir, 'MARK');
    const command = template.replace('MARK', mark);
    await expect(gateway.exec({ command })).rejects.toMatchObject({ code: 'EXECGATE_ERR_POLICY_DENIED', details: expect.objectContaining({ rule }) });
    expect(existsSync(mark)).toBe(false);
  });

  test('static code behind a shell is read and runs when no rule refuses it', async () => {
    const mark = join(tmp.dir, 'MARK');
    const result = await gateway.exec({ command: `echo x | /bin/sh -c "touch ${mark}"` });
    expect(result.exitCode).toBe(0);
    expect(existsSync(mark)).toBe(true);
  });

  test('plain commands still run', async () => {
    const result = await gateway.exec({ command: 'echo hello | wc -c; ls >/dev/null' });
    expect(result).toMatchObject({ exitCode: 0, stdout: '6\n' });
  });
});

describe('rules.uncertain', () => {
  test('defaults to allow: the rules decide, as before', () => {
    const decision = decideRequest(DEFAULT_POLICY, { command: 'c=ls; $c', mode: 'sync', cwd: tmp.dir }, []);
    expect(decision).toMatchObject({ allowed: true, rule: 'rules.default' });
  });

  test('loads from a policy file and refuses with the reader\'s reason', () => {
    const policy = loadPolicyFile(STRICT).policy;
    expect(policy.rules.uncertain).toBe('deny');
    const decision = decideRequest(policy, { command: 'eval "$X"', mode: 'sync', cwd: tmp.dir }, []);
    expect(decision.allowed).toBe(false);
    expect(decision.rule).toBe('rules.uncertain');
    expect(decision.reason).toMatch(/cannot be read with confidence \(.+\)/);
  });
});
