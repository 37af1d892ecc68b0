/*
 * Assignments are part of the command: a secret restricted to `git` does not reach another
 * program through the variables a text sets (`PATH=. git`, `GIT_CONFIG_*` aliases,
 * `GIT_EXTERNAL_DIFF`, `BASH_ENV`, `export`, `declare -x`, `env NAME=...`), nor through a PATH
 * entry a run can write or a relative one. Real gateway runs, real git, real bash: each refused
 * text would have printed the value in base32 (which no masker reads) had it run.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { decideRequest } from '../../src/policy/decide';
import { loadPolicyFile } from '../../src/policy/load';
import { scanTokens } from '../../src/refs/tokens';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const VALUE = 'tok-8f2a9c41d7e3b605';
const POLICY = `version: 1
env:
  requestable: [LANG]
secrets:
  restrict:
    - id: tok-for-git
      ref: secret:tok
      command: git
`;

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway | undefined;
let mark: string;
let policyFile: string;

beforeEach(() => {
  tmp = makeTempDir('execgate-steer-');
  mark = join(tmp.dir, 'LEAKED');
  // What an earlier run could have left in the workspace: a `git` that prints every value it
  // was given in base32, and a config file for the tricks that point git at one.
  const leak = `#!/bin/sh\nenv | base32 -w0; touch ${mark}\n`;
  writeFileSync(join(tmp.dir, 'git'), leak);
  chmodSync(join(tmp.dir, 'git'), 0o755);
  mkdirSync(join(tmp.dir, 'bin'));
  writeFileSync(join(tmp.dir, 'bin', 'git'), leak);
  chmodSync(join(tmp.dir, 'bin', 'git'), 0o755);
  writeFileSync(join(tmp.dir, 'leak.sh'), leak);
  chmodSync(join(tmp.dir, 'leak.sh'), 0o755);
  policyFile = join(tmp.dir, 'policy.yaml');
  writeFileSync(policyFile, POLICY);
});
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  tmp.cleanup();
});

function open(env: Record<string, string> = {}, policy = POLICY): Gateway {
  writeFileSync(policyFile, policy);
  gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(env), cwd: tmp.dir, policyFile });
  gateway.refs.set('secret', 'tok', VALUE);
  return gateway;
}

describe('Why 1: a restricted secret does not reach another program through the variables a text sets', () => {
  test.each([
    ['PATH=.:$PATH git status <<secret:tok>>'],
    ["GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0='!./leak.sh' git st <<secret:tok>>"],
    ['export PATH=.:$PATH; git status <<secret:tok>>'],
    ['declare -x PATH=.:$PATH; git status <<secret:tok>>'],
    ['env PATH=. git status <<secret:tok>>'],
    ['PATH=.; git status <<secret:tok>>'],
    ["env -S'PATH=. git' status <<secret:tok>>"],
  ])('%s is refused, and nothing runs', async (command) => {
    const run = open();
    await expect(run.exec({ command })).rejects.toMatchObject({ code: 'EXECGATE_ERR_POLICY_DENIED', details: expect.objectContaining({ rule: 'tok-for-git' }) });
    expect(existsSync(mark)).toBe(false);
  });

  test('the texts policy explain allowed before are refused, with the variable named', () => {
    const policy = loadPolicyFile(policyFile).policy;
    for (const [command, name] of [
      ['GIT_EXTERNAL_DIFF=./leak.sh git diff <<secret:tok>>', 'GIT_EXTERNAL_DIFF'],
      ['BASH_ENV=./leak.sh git status <<secret:tok>>', 'BASH_ENV'],
      ['HOME=. git status <<secret:tok>>', 'HOME'],
      ['XDG_CONFIG_HOME=. git status <<secret:tok>>', 'XDG_CONFIG_HOME'],
      ['LD_PRELOAD=./x.so git status <<secret:tok>>', 'LD_PRELOAD'],
      ['GIT_SSH_COMMAND=./leak.sh git fetch https://x:<<secret:tok>>@h/r', 'GIT_SSH_COMMAND'],
    ]) {
      const decision = decideRequest(policy, { command: command!, mode: 'sync', cwd: tmp.dir }, scanTokens(command!));
      expect(decision).toMatchObject({ allowed: false, rule: 'tok-for-git' });
      expect(decision.reason).toContain(`sets \`${name}\``);
    }
  });

  test('what the secret is for still runs: git with the value, no assignment', async () => {
    const run = open({ PATH: '/usr/bin:/bin' });
    const result = await run.exec({ command: 'git version <<secret:tok>>' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^git version /);
  });

  test('an assignment that steers nothing is fine: LANG=C git', async () => {
    const run = open({ PATH: '/usr/bin:/bin' });
    expect((await run.exec({ command: 'LANG=C git version <<secret:tok>>' })).exitCode).toBe(0);
  });
});

describe('Why 1: a restricted command is not looked up through a relative or writable PATH entry', () => {
  test.each([
    ['.:/usr/bin:/bin', 'relative'],
    [':/usr/bin:/bin', 'relative'],
    ['bin:/usr/bin:/bin', 'relative'],
  ])('PATH %s is refused (%s)', async (path, why) => {
    const run = open({ PATH: path });
    const error = await run.exec({ command: 'git status <<secret:tok>>' }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'EXECGATE_ERR_POLICY_DENIED', details: expect.objectContaining({ rule: 'tok-for-git' }) });
    expect((error as Error).message).toContain(`which is ${why}`);
    expect(existsSync(mark)).toBe(false);
  });

  test('a PATH entry in the workspace is refused while runs can write it, and allowed once it is read-only', async () => {
    const bin = join(tmp.dir, 'bin');
    const run = open({ PATH: `${bin}:/usr/bin:/bin` });
    const error = await run.exec({ command: 'git status <<secret:tok>>' }).catch((caught: unknown) => caught);
    expect((error as Error).message).toContain('which is writable by the run');
    expect(existsSync(mark)).toBe(false);
    await gateway!.close();

    // The remedy the message names: a directory runs cannot write (here, read-only inside).
    open({ PATH: `${bin}:/usr/bin:/bin` }, `${POLICY}sandbox:\n  filesystem:\n    readOnly: [${bin}]\n`);
    const result = await gateway!.exec({ command: 'git status <<secret:tok>>' });
    // That directory's `git` is now the operator's: it runs.
    expect(result.exitCode).toBe(0);
    expect(existsSync(mark)).toBe(true);
  });

  test('an unrestricted secret is not held to PATH', async () => {
    const run = open({ PATH: `.:/usr/bin:/bin` });
    run.refs.set('secret', 'other', 'other-value-1234567');
    expect((await run.exec({ command: 'echo <<secret:other>>' })).stdout).toBe('[REDACTED:secret:other]\n');
  });
});

test('the planted programs would leak: run without the policy, the base32 of the value comes back', async () => {
  // The oracle for the refusals above: the same text under a policy with no restriction.
  const run = open({}, 'version: 1\n');
  const result = await run.exec({ command: 'PATH=.:$PATH git status <<secret:tok>>' });
  expect(result.stdout).not.toContain(VALUE);
  expect(execFileSync('base32', ['-d'], { input: result.stdout }).toString('latin1')).toContain(VALUE);
});
