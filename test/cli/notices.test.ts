/*
 * What `execgate run` says on stderr besides the command's output: --env entries the command
 * will not see, references no source knows (with the closest known names), and the keyring
 * line only where a keyring was expected. Names only, never values.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { execgateSync } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-cli-notices-'); });
afterEach(() => tmp.cleanup());

const KEYRING_LINE = /^execgate: warning: keyring unavailable: /gm;
const GITHUB_VALUE = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';

describe('--env entries the command does not see', () => {
  test('removed and withheld names are reported on stderr by name, never by value; kept ones are not', () => {
    const result = execgateSync(
      ['run', '--env', 'LD_PRELOAD=/tmp/evil-lib.so', '--env', `GITHUB_TOKEN=${GITHUB_VALUE}`, '--env', 'PLAIN=visible', '--', 'echo "${LD_PRELOAD-unset} ${GITHUB_TOKEN-unset} $PLAIN"'],
      { cwd: tmp.dir },
    );
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('unset unset visible\n');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^execgate: note: --env LD_PRELOAD was removed: /);
    expect(lines[1]).toMatch(/^execgate: note: --env GITHUB_TOKEN was withheld: it looks like a secret/);
    expect(result.stderr).not.toContain('evil-lib');
    expect(result.stderr).not.toContain(GITHUB_VALUE);
    expect(result.stderr).not.toContain('PLAIN');
  });

  test('a name the policy lets through (env.allowSecrets) is not reported', () => {
    const policy = join(tmp.dir, 'p.yaml');
    require('node:fs').writeFileSync(policy, 'version: 1\nenv:\n  allowSecrets: [GITHUB_TOKEN]\n');
    const result = execgateSync(['run', '--policy', policy, '--env', `GITHUB_TOKEN=${GITHUB_VALUE}`, '--', 'echo "${#GITHUB_TOKEN}"'], { cwd: tmp.dir });
    expect(result.stdout).toBe(`${GITHUB_VALUE.length}\n`);
    expect(result.stderr).toBe('');
  });
});

describe('the keyring line', () => {
  // The keyring source is on (EXECGATE_KEYRING unset); two references make two keyring lookups.
  const args = ['run', '--', 'echo', '<<secret:first-missing>>', '<<secret:second-missing>>'];

  test('no D-Bus session: no keyring is expected, so nothing is said about it', () => {
    const result = execgateSync(args, { cwd: tmp.dir, unset: ['EXECGATE_KEYRING'] });
    expect(result.status).toBe(0);
    expect(result.stderr.match(KEYRING_LINE)).toBeNull();
    expect(result.stderr).not.toContain('(node:');
  });

  test('--verbose: one plain line', () => {
    const result = execgateSync(['run', '--verbose', ...args.slice(1)], { cwd: tmp.dir, unset: ['EXECGATE_KEYRING'] });
    expect(result.stderr.match(KEYRING_LINE)).toHaveLength(1);
    expect(result.stderr).not.toContain('--trace-warnings');
  });

  test('a D-Bus session that does not answer: a keyring was expected, one plain line, once', () => {
    const result = execgateSync(args, { cwd: tmp.dir, unset: ['EXECGATE_KEYRING'], env: { DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(tmp.dir, 'no-bus')}` } });
    expect(result.status).toBe(0);
    expect(result.stderr.match(KEYRING_LINE)).toHaveLength(1);
    expect(result.stderr).not.toMatch(/\(node:\d+\)|EXECGATE_WARNING|--trace-warnings/);
  });
});

describe('references no source knows', () => {
  test('one warning per unknown reference, with the closest names from the environment source', () => {
    const result = execgateSync(['run', '--', 'echo', '<<secret:gihtub-token>>', '<<secret:zzz-unrelated>>', '<<secret:github-token>>'], {
      cwd: tmp.dir,
      env: { EXECGATE_SECRET_GITHUB_TOKEN: GITHUB_VALUE },
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('<<secret:gihtub-token>> <<secret:zzz-unrelated>> [REDACTED:secret:github-token]\n');
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      'execgate: warning: no source knows <<secret:gihtub-token>>; it was passed on as written (did you mean <<secret:github-token>>?)',
      'execgate: warning: no source knows <<secret:zzz-unrelated>>; it was passed on as written',
    ]);
    expect(result.stderr).not.toContain(GITHUB_VALUE);
  });

  test('names stored in the vault are offered too, values never', () => {
    const stored = execgateSync(['secret', 'set', '--store', 'vault', 'deploy-key'], { cwd: tmp.dir }, 'vault-value-0123456789\n');
    expect(stored.status).toBe(0);
    const result = execgateSync(['run', '--', 'echo', '<<secret:deploy-kye>>'], { cwd: tmp.dir });
    expect(result.stderr).toContain('no source knows <<secret:deploy-kye>>; it was passed on as written (did you mean <<secret:deploy-key>>?)');
    expect(result.stderr).not.toContain('vault-value');
  });

  test('--json still warns on stderr; the JSON lists the reference as not found', () => {
    const result = execgateSync(['run', '--json', '--', 'echo <<secret:nobody-knows>>'], { cwd: tmp.dir });
    expect(JSON.parse(result.stdout).refs).toEqual([expect.objectContaining({ ref: '<<secret:nobody-knows>>', found: false })]);
    expect(result.stderr).toContain('no source knows <<secret:nobody-knows>>');
  });

  test('background runs are warned about too', () => {
    const result = execgateSync(['run', '--mode', 'background', '--', 'echo', '<<secret:gihtub-token>>'], { cwd: tmp.dir, env: { EXECGATE_SECRET_GITHUB_TOKEN: GITHUB_VALUE } });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^run_/);
    expect(result.stderr).toContain('no source knows <<secret:gihtub-token>>; it was passed on as written (did you mean <<secret:github-token>>?)');
    // The detached supervisor writes into the home directory until the run ends: follow it to its end.
    const follow = execgateSync(['logs', '--follow', result.stdout.trim()], { cwd: tmp.dir });
    expect(follow.stdout).toContain('<<secret:gihtub-token>>');
  });
});

describe('secrets.unknown: deny', () => {
  const strict = join(__dirname, '..', '..', 'policies', 'strict.yaml');

  test('strict.yaml refuses the run: coded error, a suggestion, nothing ran, audited', () => {
    const marker = join(tmp.dir, 'MARKER');
    const result = execgateSync(['run', '--policy', strict, '--', `touch ${marker}; echo <<secret:gihtub-token>>`], {
      cwd: tmp.dir,
      env: { EXECGATE_SECRET_GITHUB_TOKEN: GITHUB_VALUE },
    });
    expect(result.status).toBe(125);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^execgate: EXECGATE_ERR_REF_UNKNOWN: No source knows <<secret:gihtub-token>>, and the policy .* refuses unknown references/);
    expect(lines[1]).toBe('execgate: <<secret:gihtub-token>> (did you mean <<secret:github-token>>?)');
    expect(existsSync(marker)).toBe(false);
    const records = readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.find((record) => record.event === 'exec.rejected')).toMatchObject({ code: 'EXECGATE_ERR_REF_UNKNOWN' });
    expect(records.some((record) => record.event === 'exec.started')).toBe(false);
    expect(JSON.stringify(records)).not.toContain(GITHUB_VALUE);
  });

  test('known references still run under deny', () => {
    const result = execgateSync(['run', '--policy', strict, '--', 'echo', '<<secret:github-token>>'], { cwd: tmp.dir, env: { EXECGATE_SECRET_GITHUB_TOKEN: GITHUB_VALUE } });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('[REDACTED:secret:github-token]\n');
  });
});
