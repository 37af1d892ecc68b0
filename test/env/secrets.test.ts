import { isSecretName, isSecretValue, sanitizeEnv } from '../../src/env';
import { getNameWords, SECRET_VALUE_PATTERNS } from '../../src/env/secrets';

// Credential-shaped strings are assembled at run time so that no scanner mistakes this file for a leak.
const alnum = (length: number): string => 'aB3dE5gH7jK9'.repeat(Math.ceil(length / 12)).slice(0, length);
const upper = (length: number): string => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.repeat(2).slice(0, length);

describe('name words', () => {
  test.each<[string, string[]]>([
    ['GITHUB_TOKEN', ['GITHUB', 'TOKEN']],
    ['db.password', ['DB', 'PASSWORD']],
    ['my-api-key', ['MY', 'API', 'KEY']],
    ['apiKey', ['API', 'KEY']],
    ['APIKey', ['API', 'KEY']],
    ['P4PASSWD', ['P', '4', 'PASSWD']],
    ['KEYBOARD_LAYOUT', ['KEYBOARD', 'LAYOUT']],
    ['npm_config_//host/:_authToken', ['NPM', 'CONFIG', 'HOST', 'AUTH', 'TOKEN']],
    ['_', []],
  ])('%s -> %j', (name, words) => {
    expect(getNameWords(name)).toEqual(words);
  });
});

describe('secret-looking names', () => {
  test.each([
    'GITHUB_TOKEN',
    'OPENAI_API_KEY',
    'api_key',
    'apiKey',
    'APIKey',
    'MY_APIKEY',
    'db.password',
    'my-secret',
    'SECRET2',
    'P4PASSWD',
    'FTP_PASS',
    'GPG_PASSPHRASE',
    'AUTH',
    'SESSION_COOKIE',
    'SENTRY_DSN',
    'PRIVATE_KEY_PATH',
    'AWS_SHARED_CREDENTIALS_FILE',
    'REQUEST_SIGNATURE',
    'DATABASE_URL',
    'database_url',
    'REDIS_URL',
    'MONGODB_URI',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'AZURE_CLIENT_SECRET',
    'PGPASSWORD',
    'MYSQL_PWD',
    'SSHPASS',
    'EXECGATE_SECRET_GITHUB_TOKEN',
    'execgate_secret_x',
    'npm_config__auth',
    // Not exempt on purpose: the session bus reaches the OS keyring.
    'DBUS_SESSION_BUS_ADDRESS',
    'SESSION_MANAGER',
    // The exemptions are exact and case-sensitive.
    'xdg_session_type',
    'XDG_SESSION_TOKEN',
  ])('%s is secret-looking', (name) => {
    expect(isSecretName(name)).toBe(true);
  });

  const harmless = [
    'KEYBOARD_LAYOUT',
    'PWD',
    'OLDPWD',
    'TOKENIZERS_PARALLELISM',
    'PASSENGER_X',
    'PATH',
    'HOME',
    'LANG',
    'TERM',
    'SSH_TTY',
    'COLORTERM',
    'GIT_AUTHOR_NAME',
    'AUTHOR',
    'XAUTHORITY',
    'GNOME_KEYRING_CONTROL',
    'KEYTAB_DIR',
    'MONKEY_PATCH',
    'BYPASS_CACHE',
    'COMPASS_HOME',
    'SHLVL',
    'LS_COLORS',
    '_',
    'XDG_SESSION_ID',
    'XDG_SESSION_TYPE',
    'XDG_SESSION_CLASS',
    'XDG_SESSION_DESKTOP',
    'DESKTOP_SESSION',
    'TERM_SESSION_ID',
    'ITERM_SESSION_ID',
    'SSH_AUTH_SOCK',
  ];

  test.each(harmless)('%s is not', (name) => {
    expect(isSecretName(name)).toBe(false);
  });

  test('the false-positive list passes through sanitizeEnv untouched', () => {
    // Requested: an inherited `_` is never copied (sanitize.test.ts).
    const requested = Object.fromEntries(harmless.map((name) => [name, 'plain value']));
    const result = sanitizeEnv({ inherited: {}, requested });
    expect(result.withheld).toEqual([]);
    expect(result.removed).toEqual([]);
    for (const name of harmless) expect(result.env[name]).toBe('plain value');
  });

  test('exempt names are still subject to the value rules', () => {
    const result = sanitizeEnv({ inherited: { XDG_SESSION_ID: `ghp_${alnum(36)}` } });
    expect(result.withheld).toEqual(['XDG_SESSION_ID']);
  });

  test('DBUS_SESSION_BUS_ADDRESS is withheld from children by default and can be allowed', () => {
    const inherited = { DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1000/bus' };
    expect(sanitizeEnv({ inherited }).withheld).toEqual(['DBUS_SESSION_BUS_ADDRESS']);
    const allowed = sanitizeEnv({ inherited, allowSecrets: ['DBUS_SESSION_BUS_ADDRESS'] });
    expect(allowed.env.DBUS_SESSION_BUS_ADDRESS).toBe(inherited.DBUS_SESSION_BUS_ADDRESS);
  });
});

describe('secret-looking values', () => {
  // [rule id, positive, near miss]
  const cases: Array<[string, string, string]> = [
    ['aws-access-key-id', `AKIA${upper(16)}`, `AKIA${upper(15)}`],
    ['aws-access-key-id', `id=ASIA${upper(16)};`, `XAKIA${upper(16)}`],
    ['github-token', `ghp_${alnum(36)}`, `ghp_${alnum(35)}`],
    ['github-token', `token ghs_${alnum(36)}`, `ghx_${alnum(36)}`],
    ['github-fine-grained-token', `github_pat_${alnum(82)}`, `github_pat_${alnum(60)}`],
    ['slack-token', `xoxb-${'1234567890'}-abc`, `xoxz-${'1234567890'}-abc`],
    ['anthropic-key', `sk-ant-api03-${alnum(24)}`, `sk-ant-${alnum(10)}`],
    ['openai-style-key', `sk-proj-${alnum(24)}`, `sk-${alnum(19)}`],
    ['openai-style-key', `Bearer sk-${alnum(20)}`, `task-${alnum(30)}`],
    ['stripe-key', `sk_live_${alnum(10)}`, `sk_prod_${alnum(24)}`],
    ['stripe-key', `rk_test_${alnum(24)}`, `desk_test_${alnum(24)}`],
    ['npm-token', `npm_${alnum(36)}`, `npm_${alnum(35)}`],
    ['google-api-key', `AIza${alnum(35)}`, `AIza${alnum(34)}`],
    ['private-key-block', '-----BEGIN RSA PRIVATE KEY-----\nMIIE...', '-----BEGIN PUBLIC KEY-----\nMIIB...'],
    ['private-key-block', '-----BEGIN PRIVATE KEY-----', '-----BEGIN CERTIFICATE-----'],
    ['private-key-block', '-----BEGIN PGP PRIVATE KEY BLOCK-----', '-----BEGIN PGP PUBLIC KEY BLOCK-----'],
    [
      'jwt',
      ['eyJhbGciOiJIUzI1NiJ9', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', alnum(20)].join('.'),
      ['eyJhbGciOiJIUzI1NiJ9', 'eyJzdWIi', alnum(20)].join('.'),
    ],
    ['url-with-credentials', 'postgres://app:hunter2@db.example:5432/app', 'postgres://app@db.example:5432/app'],
    ['url-with-credentials', 'HTTPS://u:p@host.example', 'https://host.example:8080/a@b'],
  ];

  test.each(cases)('%s: %j matches, %j does not', (id, positive, nearMiss) => {
    const rule = SECRET_VALUE_PATTERNS.find((entry) => entry.id === id);
    expect(rule).toBeDefined();
    expect(rule?.pattern.test(positive)).toBe(true);
    expect(isSecretValue(positive)).toBe(true);
    expect(isSecretValue(nearMiss)).toBe(false);
  });

  test('every rule has a positive case above', () => {
    const covered = new Set(cases.map(([id]) => id));
    for (const { id } of SECRET_VALUE_PATTERNS) expect(covered.has(id)).toBe(true);
  });

  test('ordinary values are not secret-looking', () => {
    for (const value of [
      '/usr/local/bin:/usr/bin:/bin',
      'en_US.UTF-8',
      'xterm-256color',
      'rs=0:di=01;34:ln=01;36:mh=00:pi=40;33',
      'https://example.com/path?q=1',
      'git@github.com:owner/repo.git',
      'user@example.com',
      'risk-assessment-notes-for-the-quarter',
      '',
    ]) {
      expect(isSecretValue(value)).toBe(false);
    }
  });

  test('a secret-looking value is withheld whatever the name', () => {
    const result = sanitizeEnv({
      inherited: { CONFIG_BLOB: `x=${`sk-${alnum(30)}`}`, PLAIN: 'ok' },
      requested: { NOTE: `-----BEGIN OPENSSH PRIVATE KEY-----\n${alnum(40)}` },
    });
    expect(result.withheld).toEqual(['CONFIG_BLOB', 'NOTE']);
    expect(result.env.PLAIN).toBe('ok');
  });

  // No backtracking blow-up: the test finishing within jest's timeout is the proof (a
  // catastrophic pattern would run for minutes); how fast each rule is belongs in the bench.
  test('every rule stays linear on long adversarial values', () => {
    const size = 200_000;
    const values = [
      'eyJ'.repeat(size / 3),
      `eyJ${'a'.repeat(size)}`,
      `${'a'.repeat(size)}://${'b'.repeat(size)}`,
      `a://b:${'c:'.repeat(size / 2)}`,
      `-----BEGIN ${' '.repeat(size)}`,
      'sk-'.repeat(size / 3),
      'AKIA'.repeat(size / 4),
      'a'.repeat(size),
    ];
    expect(values.map((value) => isSecretValue(value))).toEqual([false, false, false, false, false, true, false, false]);
  }, 120_000);
});

describe('extra rules from options', () => {
  test('secretNamePatterns and secretValuePatterns withhold more; g and y flags do not make them stateful', () => {
    const options = {
      inherited: { INTERNAL_CFG: 'a', OTHER_CFG: 'b', NOTE: 'corp-XYZ-123', NOTE2: 'corp-XYZ-456', PLAIN: 'p' },
      secretNamePatterns: [/_CFG$/g],
      secretValuePatterns: [/corp-[A-Z]+-\d+/gy],
    };
    const first = sanitizeEnv(options);
    expect(first.withheld).toEqual(['INTERNAL_CFG', 'NOTE', 'NOTE2', 'OTHER_CFG']);
    expect(sanitizeEnv(options)).toEqual(first);
    expect(first.env.PLAIN).toBe('p');
  });
});
