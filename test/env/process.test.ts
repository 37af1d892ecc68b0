/*
 * The sanitized environment against a real bash and a real node: each hazard below runs code in
 * the child when it gets through (the control run proves it), and none may get through.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sanitizeEnv } from '../../src/env';

const FLAGS = ['bash_env.flag', 'ps4.flag', 'func.flag', 'node.flag', 'pager.flag'];

// `$0` is node: a node child shows whether NODE_OPTIONS got through; `echo` may be an imported function.
const SCRIPT = 'echo ok; git --no-pager --version >/dev/null 2>&1; "$0" -e ""; env -0';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'execgate-env-'));
  writeFileSync(join(dir, 'bash_env.sh'), `touch ${JSON.stringify(join(dir, 'bash_env.flag'))}\n`);
  writeFileSync(join(dir, 'evil.js'), `require('fs').writeFileSync(${JSON.stringify(join(dir, 'node.flag'))}, '');\n`);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function hostileEnv(): Record<string, string> {
  const flag = (name: string): string => JSON.stringify(join(dir, name));
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    LD_PRELOAD: join(dir, 'missing-evil.so'),
    BASH_ENV: join(dir, 'bash_env.sh'),
    ENV: join(dir, 'bash_env.sh'),
    SHELLOPTS: 'xtrace',
    PS4: `$(touch ${flag('ps4.flag')})`,
    'BASH_FUNC_echo%%': `() { touch ${flag('func.flag')}; }`,
    NODE_OPTIONS: '--require ./evil.js',
    GIT_SSH_COMMAND: `touch ${flag('git.flag')}`,
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'core.fsmonitor',
    GIT_CONFIG_VALUE_0: `touch ${flag('git.flag')}`,
    PAGER: `touch ${flag('pager.flag')}`,
    PYTHONPATH: dir,
    GITHUB_TOKEN: `ghp_${'aB3dE5gH7jK9'.repeat(3)}`,
    EXECGATE_SECRET_DEMO: 'demo-secret-value',
  };
}

function run(env: Record<string, string>): { env: Map<string, string>; stderr: string; status: number | null } {
  const result = spawnSync('bash', ['-c', SCRIPT, process.execPath], {
    cwd: dir,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20_000,
  });
  const childEnv = new Map<string, string>();
  const start = result.stdout.indexOf('ok\n');
  for (const entry of result.stdout.slice(start + 3).split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) childEnv.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return { env: childEnv, stderr: result.stderr, status: result.status };
}

test('control: the hostile environment does run code when passed through unsanitized', () => {
  const { stderr } = run(hostileEnv());
  const created = readdirSync(dir).filter((name) => name.endsWith('.flag'));
  // bash >= 4.4 ignores an inherited PS4 when running as root; SHELLOPTS still turns on xtrace.
  const expected = ['bash_env.flag', 'func.flag', 'node.flag', ...(process.getuid?.() === 0 ? [] : ['ps4.flag'])];
  expect(created).toEqual(expect.arrayContaining(expected));
  expect(stderr).toContain('LD_PRELOAD');
  expect(stderr).toContain('+ echo ok');
});

test('no hazard or secret reaches the child, and no code runs', () => {
  const hostile = hostileEnv();
  const sanitized = sanitizeEnv({ inherited: hostile });
  const child = run(sanitized.env);

  expect(child.status).toBe(0);
  expect(child.stderr).toBe('');
  for (const flag of [...FLAGS, 'git.flag']) expect(existsSync(join(dir, flag))).toBe(false);

  const leaked = Object.keys(hostile).filter((name) => !['PATH', 'HOME', 'PAGER'].includes(name) && child.env.has(name));
  expect(leaked).toEqual([]);
  expect([...child.env.keys()].filter((name) => name.startsWith('BASH_FUNC_'))).toEqual([]);
  expect(child.env.get('PAGER')).toBe('cat');
  expect(child.env.get('GIT_PAGER')).toBe('cat');
  expect(child.env.get('HOME')).toBe(dir);
  expect([...child.env.values()].some((value) => value.includes(hostile.GITHUB_TOKEN as string))).toBe(false);

  expect(sanitized.removed).toEqual([
    'BASH_ENV',
    'BASH_FUNC_echo%%',
    'ENV',
    'GIT_CONFIG_COUNT',
    'GIT_CONFIG_KEY_0',
    'GIT_CONFIG_VALUE_0',
    'GIT_SSH_COMMAND',
    'LD_PRELOAD',
    'NODE_OPTIONS',
    'PAGER',
    'PS4',
    'PYTHONPATH',
    'SHELLOPTS',
  ]);
  expect(sanitized.withheld).toEqual(['EXECGATE_SECRET_DEMO', 'GITHUB_TOKEN']);
});

test('the same holds when the hazards arrive in the request', () => {
  const hostile = hostileEnv();
  const sanitized = sanitizeEnv({ inherited: { PATH: hostile.PATH as string }, requested: hostile, replace: true });
  const child = run(sanitized.env);
  expect(child.status).toBe(0);
  expect(child.stderr).toBe('');
  for (const flag of [...FLAGS, 'git.flag']) expect(existsSync(join(dir, flag))).toBe(false);
  expect(child.env.has('LD_PRELOAD')).toBe(false);
  expect(child.env.has('NODE_OPTIONS')).toBe(false);
});
