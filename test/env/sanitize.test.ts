import { ExecgateError } from '../../src/errors';
import { sanitizeEnv, type SanitizeEnvOptions } from '../../src/env';

const ghToken = `ghp_${'aB3dE5gH7jK9'.repeat(3)}`;

function userKeys(env: Record<string, string>): string[] {
  const forced = new Set(['PAGER', 'GIT_PAGER', 'GIT_EDITOR', 'EDITOR']);
  return Object.keys(env).filter((name) => !forced.has(name));
}

describe('merging', () => {
  test('inherits the base and lets the request win', () => {
    const result = sanitizeEnv({
      inherited: { HOME: '/home/u', MODE: 'inherited', UNSET_ME: 'x', ABSENT: undefined },
      requested: { MODE: 'requested', EXTRA: '1' },
    });
    expect(userKeys(result.env)).toEqual(['EXTRA', 'HOME', 'MODE', 'UNSET_ME']);
    expect(result.env.MODE).toBe('requested');
  });

  test('a requested undefined unsets an inherited variable without reporting it', () => {
    const requested = { UNSET_ME: undefined } as unknown as Record<string, string>;
    const result = sanitizeEnv({ inherited: { UNSET_ME: 'x', KEEP: 'y' }, requested });
    expect(userKeys(result.env)).toEqual(['KEEP']);
    expect(result.removed).toEqual([]);
  });

  test('the inherited `_` (the gateway\'s program, set by the shell that started it) is not copied or reported; a requested one is', () => {
    const inherited = { _: '/usr/bin/node', KEEP: 'y' };
    const result = sanitizeEnv({ inherited });
    expect(userKeys(result.env)).toEqual(['KEEP']);
    expect(result.removed).toEqual([]);
    expect(sanitizeEnv({ inherited, requested: { _: '/requested' } }).env._).toBe('/requested');
    expect(sanitizeEnv({ inherited, mode: 'allowlist', allowlist: ['_'] }).env._).toBeUndefined();
  });

  test('a request can override a withheld inherited value with a harmless one', () => {
    const result = sanitizeEnv({ inherited: { CONFIG: ghToken }, requested: { CONFIG: 'plain' } });
    expect(result.env.CONFIG).toBe('plain');
    expect(result.withheld).toEqual([]);
  });

  test('hazards in the requested env are stripped too', () => {
    const result = sanitizeEnv({
      inherited: { HOME: '/home/u' },
      requested: { LD_PRELOAD: '/tmp/x.so', BASH_ENV: '/tmp/x.sh', NODE_OPTIONS: '--require x', OK: '1' },
    });
    expect(result.removed).toEqual(['BASH_ENV', 'LD_PRELOAD', 'NODE_OPTIONS']);
    expect(userKeys(result.env)).toEqual(['HOME', 'OK']);
  });

  test('replace mode starts from the request only', () => {
    const result = sanitizeEnv({
      inherited: { HOME: '/home/u', PATH: '/usr/bin', LD_PRELOAD: '/tmp/x.so', GITHUB_TOKEN: ghToken },
      requested: { ONLY: 'me', PAGER: 'less' },
      replace: true,
    });
    expect(userKeys(result.env)).toEqual(['ONLY']);
    expect(result.removed).toEqual(['PAGER']);
    expect(result.withheld).toEqual([]);
  });
});

describe('secrets', () => {
  test('are withheld by default, names only', () => {
    const result = sanitizeEnv({ inherited: { GITHUB_TOKEN: ghToken, API_KEY: 'k', HOME: '/h' } });
    expect(result.withheld).toEqual(['API_KEY', 'GITHUB_TOKEN']);
    expect(result.passedSecrets).toEqual([]);
    expect(JSON.stringify(result)).not.toContain(ghToken);
  });

  test('allowSecrets lets named ones through and reports their values', () => {
    const result = sanitizeEnv({
      inherited: { GITHUB_TOKEN: ghToken, DEPLOY_KEY_A: 'a', DEPLOY_KEY_B: 'b', OTHER_TOKEN: 'o', PLAIN: 'p' },
      allowSecrets: ['GITHUB_TOKEN', 'DEPLOY_KEY_*', 'PLAIN'],
    });
    expect(result.env.GITHUB_TOKEN).toBe(ghToken);
    expect(result.env.DEPLOY_KEY_A).toBe('a');
    expect(result.withheld).toEqual(['OTHER_TOKEN']);
    expect(result.passedSecrets).toEqual([
      { name: 'DEPLOY_KEY_A', value: 'a' },
      { name: 'DEPLOY_KEY_B', value: 'b' },
      { name: 'GITHUB_TOKEN', value: ghToken },
    ]);
    // PLAIN is not secret-looking: it passes anyway and is not registered for masking.
    expect(result.env.PLAIN).toBe('p');
  });

  test('allowSecrets matches names case-sensitively', () => {
    const result = sanitizeEnv({ inherited: { GITHUB_TOKEN: 'x' }, allowSecrets: ['github_token'] });
    expect(result.withheld).toEqual(['GITHUB_TOKEN']);
  });

  test('allowSecrets also releases a variable withheld for its value', () => {
    const result = sanitizeEnv({ inherited: { CI_NOTE: ghToken }, allowSecrets: ['CI_NOTE'] });
    expect(result.env.CI_NOTE).toBe(ghToken);
    expect(result.passedSecrets).toEqual([{ name: 'CI_NOTE', value: ghToken }]);
  });

  test('EXECGATE_SECRET_* never reaches a child, whatever allowSecrets says', () => {
    const inherited = { EXECGATE_SECRET_GITHUB: ghToken, execgate_secret_lower: 'x', EXECGATE_HOME: '/h' };
    for (const allowSecrets of [['*'], ['EXECGATE_SECRET_*'], ['EXECGATE_SECRET_GITHUB', 'execgate_secret_lower'], ['EXECGATE_*']]) {
      const result = sanitizeEnv({ inherited, requested: { EXECGATE_SECRET_REQ: 'r' }, allowSecrets });
      expect(result.withheld).toEqual(['EXECGATE_SECRET_GITHUB', 'EXECGATE_SECRET_REQ', 'execgate_secret_lower']);
      expect(result.passedSecrets).toEqual([]);
      expect(Object.keys(result.env).some((name) => name.toUpperCase().startsWith('EXECGATE_SECRET_'))).toBe(false);
      // The gateway's own settings are stripped as hazards, not passed (env/hazards.ts).
      expect(result.env.EXECGATE_HOME).toBeUndefined();
      expect(result.removed).toContain('EXECGATE_HOME');
    }
  });
});

describe('allowlist mode', () => {
  const inherited = {
    HOME: '/home/u',
    LOGNAME: 'u',
    PATH: '/usr/bin:/bin',
    SHELL: '/bin/bash',
    TERM: 'xterm',
    USER: 'u',
    LANG: 'en_US.UTF-8',
    LC_ALL: 'C.UTF-8',
    LC_TIME: 'de_DE.UTF-8',
    TZ: 'Europe/Berlin',
    TMPDIR: '/tmp',
    LD_PRELOAD: '/tmp/x.so',
    GITHUB_TOKEN: ghToken,
    RANDOM_APP_SETTING: 'x',
    CORP_PROXY_HOST: 'proxy',
    LANGUAGE: 'en',
  };

  test('copies only the base allowlist; TZ with a / is rejected', () => {
    const result = sanitizeEnv({ inherited, mode: 'allowlist' });
    expect(userKeys(result.env)).toEqual(['HOME', 'LANG', 'LC_ALL', 'LC_TIME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'TMPDIR', 'USER']);
    expect(result.removed).toEqual(['TZ']);
    expect(result.withheld).toEqual([]);
  });

  test.each([
    ['UTC', true],
    ['CET-1CEST,M3.5.0,M10.5.0/3', false],
    [':/etc/localtime', false],
    ['%s', false],
    ['EST5EDT', true],
  ])('TZ=%j kept: %s', (tz, kept) => {
    const result = sanitizeEnv({ inherited: { TZ: tz }, mode: 'allowlist' });
    expect(result.env.TZ === tz).toBe(kept);
    expect(result.removed).toEqual(kept ? [] : ['TZ']);
  });

  test('a requested TZ is checked too; inherit mode leaves TZ alone', () => {
    expect(sanitizeEnv({ inherited: {}, requested: { TZ: '/tmp/zone' }, mode: 'allowlist' }).removed).toEqual(['TZ']);
    expect(sanitizeEnv({ inherited: { TZ: 'Europe/Berlin' } }).env.TZ).toBe('Europe/Berlin');
  });

  test('extra allowlist names and prefixes are copied, then still sanitized', () => {
    const result = sanitizeEnv({
      inherited,
      mode: 'allowlist',
      allowlist: ['RANDOM_APP_SETTING', 'CORP_*', 'LD_PRELOAD', 'GITHUB_TOKEN'],
    });
    expect(result.env.RANDOM_APP_SETTING).toBe('x');
    expect(result.env.CORP_PROXY_HOST).toBe('proxy');
    expect(result.removed).toEqual(['LD_PRELOAD', 'TZ']);
    expect(result.withheld).toEqual(['GITHUB_TOKEN']);
  });

  test('requested variables are still merged and sanitized', () => {
    const result = sanitizeEnv({
      inherited,
      mode: 'allowlist',
      requested: { APP_MODE: 'test', PYTHONPATH: '/tmp', SLACK_TOKEN: 't' },
    });
    expect(result.env.APP_MODE).toBe('test');
    expect(result.removed).toEqual(['PYTHONPATH', 'TZ']);
    expect(result.withheld).toEqual(['SLACK_TOKEN']);
  });

  test('path replaces the inherited PATH', () => {
    const result = sanitizeEnv({ inherited, mode: 'allowlist', path: '/opt/tools/bin:/usr/bin' });
    expect(result.env.PATH).toBe('/opt/tools/bin:/usr/bin');
  });
});

describe('execgate settings', () => {
  test('non-PTY runs get a pager and editor that never wait', () => {
    const result = sanitizeEnv({ inherited: { HOME: '/h', TERM: 'xterm' } });
    expect(result.env).toEqual({ EDITOR: 'true', GIT_EDITOR: 'true', GIT_PAGER: 'cat', HOME: '/h', PAGER: 'cat', TERM: 'xterm' });
    expect(result.removed).toEqual([]);
  });

  test('forced pager values replace inherited ones, which are reported as removed', () => {
    const result = sanitizeEnv({ inherited: { PAGER: 'less', GIT_PAGER: 'delta', VISUAL: 'vim', MANPAGER: 'most' } });
    expect(result.removed).toEqual(['GIT_PAGER', 'MANPAGER', 'PAGER', 'VISUAL']);
    expect(result.env.PAGER).toBe('cat');
    expect(result.env.GIT_PAGER).toBe('cat');
    expect('VISUAL' in result.env).toBe(false);
    expect('MANPAGER' in result.env).toBe(false);
  });

  test('PTY runs add no pager settings and keep TERM', () => {
    const result = sanitizeEnv({ inherited: { HOME: '/h', TERM: 'screen', PAGER: 'less' }, pty: true });
    expect(result.env).toEqual({ HOME: '/h', TERM: 'screen' });
    expect(result.removed).toEqual(['PAGER']);
  });

  test('PTY runs get TERM=xterm-256color when it is missing or empty', () => {
    expect(sanitizeEnv({ inherited: {}, pty: true }).env).toEqual({ TERM: 'xterm-256color' });
    expect(sanitizeEnv({ inherited: { TERM: '' }, pty: true }).env.TERM).toBe('xterm-256color');
    expect(sanitizeEnv({ inherited: {}, pty: false }).env.TERM).toBeUndefined();
  });

  test('set is applied last and not sanitized', () => {
    const result = sanitizeEnv({
      inherited: { LD_LIBRARY_PATH: '/evil', PAGER: 'less', MODE: 'inherited' },
      requested: { MODE: 'requested' },
      set: { LD_LIBRARY_PATH: '/opt/vendor/lib', PAGER: 'more', MODE: 'policy', PATH: '/policy/bin' },
      path: '/path/option',
    });
    expect(result.env.LD_LIBRARY_PATH).toBe('/opt/vendor/lib');
    expect(result.env.PAGER).toBe('more');
    expect(result.env.MODE).toBe('policy');
    expect(result.env.PATH).toBe('/policy/bin');
    expect(result.removed).toEqual(['LD_LIBRARY_PATH', 'PAGER']);
  });

  test('a secret-looking value forced by set is listed for masking', () => {
    const result = sanitizeEnv({ inherited: {}, set: { SERVICE_TOKEN: 'policy-chosen', PLAIN: 'x' } });
    expect(result.env.SERVICE_TOKEN).toBe('policy-chosen');
    expect(result.passedSecrets).toEqual([{ name: 'SERVICE_TOKEN', value: 'policy-chosen' }]);
  });

  test('path sets PATH, also when nothing was inherited', () => {
    expect(sanitizeEnv({ inherited: {}, path: '/usr/bin' }).env.PATH).toBe('/usr/bin');
    expect(sanitizeEnv({ inherited: { PATH: '/a' }, requested: { PATH: '/b' }, path: '/c' }).env.PATH).toBe('/c');
  });
});

describe('output', () => {
  const options: SanitizeEnvOptions = {
    inherited: { ZED: '1', ALPHA: '2', LD_AUDIT: 'x', GITHUB_TOKEN: ghToken, HTTPS_PROXY: 'http://p', BRAVO: '3' },
    requested: { CHARLIE: '4', NODE_PATH: 'y', AA_SECRET: 's' },
    allowSecrets: ['GITHUB_TOKEN'],
    set: { FORCED: 'f' },
  };

  test('is deterministic, sorted and unique', () => {
    const first = sanitizeEnv(options);
    const second = sanitizeEnv(options);
    expect(second).toEqual(first);
    expect(Object.keys(first.env)).toEqual([...Object.keys(first.env)].sort());
    expect(first.removed).toEqual(['LD_AUDIT', 'NODE_PATH']);
    expect(first.withheld).toEqual(['AA_SECRET']);
    expect(first.reported).toEqual(['HTTPS_PROXY']);
  });

  test('never mutates its inputs', () => {
    const snapshot = JSON.stringify(options);
    const frozen: SanitizeEnvOptions = Object.freeze({
      ...options,
      inherited: Object.freeze({ ...options.inherited }),
      requested: Object.freeze({ ...options.requested }),
      set: Object.freeze({ ...options.set }),
    });
    sanitizeEnv(frozen);
    sanitizeEnv(options);
    expect(JSON.stringify(options)).toBe(snapshot);
  });

  test('the env is a null-prototype object of strings, safe for any variable name', () => {
    // JSON.parse makes `__proto__` an own property, as a hostile request body would.
    const inherited = JSON.parse('{"__proto__":"proto","constructor":"ctor"}') as Record<string, string>;
    const result = sanitizeEnv({ inherited, pty: true });
    expect(Object.getPrototypeOf(result.env)).toBeNull();
    expect(Object.keys(result.env)).toEqual(['TERM', '__proto__', 'constructor']);
    expect(result.env.__proto__).toBe('proto');
    expect(Object.values(result.env).every((value) => typeof value === 'string')).toBe(true);
  });

  test('works with process.env as the inherited environment', () => {
    const result = sanitizeEnv({ inherited: process.env });
    for (const [name, value] of Object.entries(result.env)) {
      expect(typeof value).toBe('string');
      expect(name).not.toMatch(/^(LD_|BASH_FUNC_|EXECGATE_SECRET_)/);
    }
  });
});

describe('options validation', () => {
  test.each<[string, unknown]>([
    ['options', null],
    ['inherited', { inherited: 'HOME=/h' }],
    ['requested', { inherited: {}, requested: [] }],
    ['mode', { inherited: {}, mode: 'strict' }],
    ['replace', { inherited: {}, replace: 'yes' }],
    ['pty', { inherited: {}, pty: 1 }],
    ['allowlist', { inherited: {}, allowlist: 'HOME' }],
    ['allowSecrets', { inherited: {}, allowSecrets: [''] }],
    ['strip', { inherited: {}, strip: [1] }],
    ['secretNamePatterns', { inherited: {}, secretNamePatterns: ['TOKEN'] }],
    ['secretValuePatterns', { inherited: {}, secretValuePatterns: [{}] }],
    ['path', { inherited: {}, path: '/bin\0' }],
    ['set', { inherited: {}, set: 'X=1' }],
    ['set', { inherited: {}, set: { 'A=B': '1' } }],
    ['set', { inherited: {}, set: { A: 1 } }],
  ])('an invalid `%s` throws EXECGATE_ERR_INVALID_OPTION', (option, options) => {
    let caught: unknown;
    try {
      sanitizeEnv(options as SanitizeEnvOptions);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ExecgateError);
    expect((caught as ExecgateError).code).toBe('EXECGATE_ERR_INVALID_OPTION');
    expect((caught as ExecgateError).message).toContain(`\`${option}\``);
  });

  test('an invalid set value is not echoed', () => {
    expect(() => sanitizeEnv({ inherited: {}, set: { TOKEN: `${ghToken}\0` } })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(ghToken) }),
    );
  });
});
