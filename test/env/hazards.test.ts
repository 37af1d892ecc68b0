import { HAZARD_CATEGORIES, isHazardName, isHazardValue, sanitizeEnv } from '../../src/env';
import { isReportedName, isSteeringName, TRUST_REDIRECT_CATEGORY } from '../../src/env/hazards';

const FORCED = new Set(['PAGER', 'GIT_PAGER', 'GIT_EDITOR', 'EDITOR']);

function strippedFrom(source: 'inherited' | 'requested', name: string, value = 'x'): boolean {
  const input = { [name]: value, KEEP_ME: '1' };
  const result = sanitizeEnv(
    source === 'inherited' ? { inherited: input, pty: true } : { inherited: { KEEP_ME: '1' }, requested: input, pty: true },
  );
  return result.removed.includes(name) && !(name in result.env) && result.env.KEEP_ME === '1';
}

describe('HAZARD_CATEGORIES', () => {
  test('has the categories of section 1, each with a one-line reason and names', () => {
    expect(HAZARD_CATEGORIES.map((entry) => entry.id)).toEqual([
      'dynamic-loader',
      'libc',
      'shell',
      'dotnet',
      'tls-config',
      'tool-config',
      'node',
      'python',
      'perl-ruby-php-lua',
      'java',
      'git',
      'pager-editor',
      'terminal',
      'kerberos',
      'execgate',
    ]);
    for (const entry of HAZARD_CATEGORIES) {
      expect(entry.why).toMatch(/^\S.*\.$/);
      expect(entry.why).not.toContain('\n');
      expect(entry.names.length).toBeGreaterThan(0);
      expect(new Set(entry.names).size).toBe(entry.names.length);
    }
  });

  test('is frozen', () => {
    expect(Object.isFrozen(HAZARD_CATEGORIES)).toBe(true);
    for (const entry of HAZARD_CATEGORIES) {
      expect(Object.isFrozen(entry)).toBe(true);
      expect(Object.isFrozen(entry.names)).toBe(true);
    }
  });

  const exactNames = HAZARD_CATEGORIES.flatMap((entry) =>
    entry.names.filter((name) => !name.endsWith('*')).map((name) => [entry.id, name] as const),
  );
  const prefixes = HAZARD_CATEGORIES.flatMap((entry) =>
    entry.names.filter((name) => name.endsWith('*')).map((name) => [entry.id, name.slice(0, -1)] as const),
  );

  test.each(exactNames)('%s: %s is stripped from the inherited and the requested env', (_id, name) => {
    expect(isHazardName(name)).toBe(true);
    expect(strippedFrom('inherited', name)).toBe(true);
    expect(strippedFrom('requested', name)).toBe(true);
  });

  test.each(prefixes)('%s: names under the prefix %s are stripped', (_id, prefix) => {
    for (const name of [prefix, `${prefix}X`, `${prefix}SOMETHING_ELSE`]) {
      expect(isHazardName(name)).toBe(true);
      expect(strippedFrom('inherited', name)).toBe(true);
      expect(strippedFrom('requested', name)).toBe(true);
    }
  });

  test('exact names are matched exactly and case-sensitively', () => {
    expect(isHazardName('ENV')).toBe(true);
    expect(isHazardName('ENVIRONMENT')).toBe(false);
    expect(isHazardName('MY_ENV')).toBe(false);
    expect(isHazardName('env')).toBe(false);
    expect(isHazardName('ld_preload')).toBe(false);
    expect(isHazardName('PATH')).toBe(false);
    expect(isHazardName('HOME')).toBe(false);
    expect(isHazardName('NODE_ENV')).toBe(false);
    expect(isHazardName('PS5')).toBe(false);
    expect(isHazardName('GIT_AUTHOR_NAME')).toBe(false);
    expect(isHazardName('XLD_PRELOAD')).toBe(false);
  });
});

describe('one representative per category', () => {
  const representatives: Array<[string, string, string]> = [
    ['dynamic-loader', 'LD_PRELOAD', '/tmp/evil.so'],
    ['libc', 'GCONV_PATH', '.'],
    ['libc', 'GLIBC_TUNABLES', 'glibc.tune.hwcaps=x'],
    ['shell', 'BASH_ENV', '/tmp/evil.sh'],
    ['shell', 'BASH_FUNC_ls%%', '() { evil; }'],
    ['node', 'NODE_OPTIONS', '--require ./evil.js'],
    ['python', 'PYTHONWARNINGS', 'ignore::evil.Warning'],
    ['perl-ruby-php-lua', 'PERL5OPT', '-Mevil'],
    ['java', 'JAVA_TOOL_OPTIONS', '-javaagent:evil.jar'],
    ['git', 'GIT_CONFIG_COUNT', '1'],
    ['pager-editor', 'LESSOPEN', '|evil %s'],
    ['terminal', 'TERMINFO', '/tmp/evil'],
    ['kerberos', 'KRB5_CONFIG', '/tmp/krb5.conf'],
  ];

  test.each(representatives)('%s: %s', (id, name, value) => {
    const category = HAZARD_CATEGORIES.find((entry) => entry.id === id);
    expect(category).toBeDefined();
    const result = sanitizeEnv({ inherited: { [name]: value, HOME: '/home/u' }, requested: { [name]: value } });
    expect(result.removed).toEqual([name]);
    expect(result.withheld).toEqual([]);
    expect(result.env.HOME).toBe('/home/u');
    if (!FORCED.has(name)) expect(name in result.env).toBe(false);
  });
});

describe('function-definition values', () => {
  test.each(['() { :; }', '() {  echo pwned; }', ' () { x; }', '(){ x; }', '( ) {'])('%j is a hazard value', (value) => {
    expect(isHazardValue(value)).toBe(true);
  });

  test.each(['()', '() x', 'echo () { x; }', 'f() { x; }', '{ () }', ''])('%j is not', (value) => {
    expect(isHazardValue(value)).toBe(false);
  });

  test('any variable holding one is removed, inherited or requested', () => {
    const result = sanitizeEnv({
      inherited: { MY_FUNC: '() { touch /tmp/x; }', OK: 'fine' },
      requested: { OTHER: '() { :; }' },
    });
    expect(result.removed).toEqual(['MY_FUNC', 'OTHER']);
    expect(result.env.OK).toBe('fine');
  });
});

describe('strip option', () => {
  test('adds exact names and prefixes to the hazards, case-sensitively', () => {
    const result = sanitizeEnv({
      inherited: { CUSTOM_HOOK: 'a', MYTOOL_PLUGIN: 'b', MYTOOL_PLUGIN_DIR: 'c', custom_hook: 'd', KEEP: 'e' },
      strip: ['CUSTOM_HOOK', 'MYTOOL_*'],
    });
    expect(result.removed).toEqual(['CUSTOM_HOOK', 'MYTOOL_PLUGIN', 'MYTOOL_PLUGIN_DIR']);
    expect(result.env.custom_hook).toBe('d');
    expect(result.env.KEEP).toBe('e');
  });
});

describe('hazard wins over secret', () => {
  test('a hazardous, secret-looking variable is removed, not withheld', () => {
    const result = sanitizeEnv({
      inherited: {
        LD_PRELOAD: 'ghp_0123456789abcdefghijABCDEFGHIJ012345',
        GIT_ASKPASS: 'x',
        BASH_FUNC_SECRET_TOKEN: '() { x; }',
      },
      allowSecrets: ['*'],
    });
    expect(result.removed).toEqual(['BASH_FUNC_SECRET_TOKEN', 'GIT_ASKPASS', 'LD_PRELOAD']);
    expect(result.withheld).toEqual([]);
    expect(result.passedSecrets).toEqual([]);
  });
});

describe('trust and traffic redirects (section 2)', () => {
  test('are kept and reported', () => {
    const inherited = {
      HTTPS_PROXY: 'http://proxy.example:3128',
      http_proxy: 'http://proxy.example:3128',
      No_Proxy: 'localhost',
      SSL_CERT_FILE: '/etc/ssl/cert.pem',
      DOCKER_HOST: 'unix:///var/run/docker.sock',
      KUBECONFIG: '/home/u/.kube/config',
      SSH_AUTH_SOCK: '/run/user/1000/ssh-agent',
      npm_config_registry: 'https://registry.example',
      NPM_CONFIG_CACHE: '/tmp/npm',
      PIP_INDEX_URL: 'https://pypi.example/simple',
      UNRELATED: 'x',
    };
    const result = sanitizeEnv({ inherited });
    expect(result.reported).toEqual([
      'DOCKER_HOST',
      'HTTPS_PROXY',
      'KUBECONFIG',
      'NPM_CONFIG_CACHE',
      'No_Proxy',
      'PIP_INDEX_URL',
      'SSH_AUTH_SOCK',
      'SSL_CERT_FILE',
      'http_proxy',
      'npm_config_registry',
    ]);
    for (const name of result.reported) expect(result.env[name]).toBe(inherited[name as keyof typeof inherited]);
    expect(result.removed).toEqual([]);
    expect(result.withheld).toEqual([]);
  });

  test('every exact name of the category is reported', () => {
    for (const name of TRUST_REDIRECT_CATEGORY.names) {
      const concrete = name.endsWith('*') ? `${name.slice(0, -1)}x` : name;
      expect(isReportedName(concrete)).toBe(true);
      expect(sanitizeEnv({ inherited: { [concrete]: 'plain' } }).reported).toEqual([concrete]);
    }
  });

  test('a redirect that carries a credential is withheld instead', () => {
    const result = sanitizeEnv({
      inherited: {
        HTTPS_PROXY: 'http://user:hunter2@proxy.example:3128',
        npm_config__authToken: 'abc',
        'npm_config_//registry.example/:_authToken': 'abc',
      },
    });
    expect(result.withheld).toEqual(['HTTPS_PROXY', 'npm_config_//registry.example/:_authToken', 'npm_config__authToken']);
    expect(result.reported).toEqual([]);
  });
});

describe('invalid names and values', () => {
  test('are dropped and reported as removed', () => {
    const requested: Record<string, string> = Object.create(null);
    requested[''] = 'empty name';
    requested['A=B'] = 'equals in name';
    requested['NUL\0NAME'] = 'nul in name';
    requested.NUL_VALUE = 'a\0b';
    requested.GOOD = 'ok';
    const result = sanitizeEnv({ inherited: {}, requested });
    expect(result.removed).toEqual(['', 'A=B', 'NUL\0NAME', 'NUL_VALUE']);
    expect(Object.keys(result.env).filter((name) => !FORCED.has(name))).toEqual(['GOOD']);
  });

  test('a non-string value that slipped past validation is removed', () => {
    const requested = { NUMBER: 42, OBJ: {} } as unknown as Record<string, string>;
    expect(sanitizeEnv({ inherited: {}, requested }).removed).toEqual(['NUMBER', 'OBJ']);
  });
});

describe('steering names (what a restricted command text may not set)', () => {
  test.each([
    'PATH', 'HOME', 'SHELL', 'XDG_CONFIG_HOME', 'XDG_DATA_DIRS', 'GIT_DIR', 'GIT_CONFIG_COUNT', 'GIT_TRACE', 'BASH_ENV', 'LD_PRELOAD', 'NODE_OPTIONS',
    'HTTPS_PROXY', 'https_proxy', 'SSL_CERT_FILE', 'MANPATH', 'GOPATH', 'CARGO_HOME', 'GNUPGHOME', 'KUBECONFIG', 'DOCKER_CONFIG', 'WGETRC', 'MAVEN_OPTS',
    'AWS_CONFIG_FILE', 'GOOGLE_APPLICATION_CREDENTIALS_FILE', 'ZDOTDIR', 'PYTHONSTARTUP',
  ])('%s steers', (name) => {
    expect(isSteeringName(name)).toBe(true);
  });

  test.each(['LANG', 'LC_ALL', 'TZ', 'GH_TOKEN', 'GITHUB_TOKEN', 'NPM_TOKEN', 'CI', 'NODE_ENV', 'DEBUG', 'TERM', 'X', 'path'])('%s does not', (name) => {
    expect(isSteeringName(name)).toBe(false);
  });
});
