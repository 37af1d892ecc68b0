/*
 * Bad platforms and bad input. A helper that does not exist, and one that fails the way bwrap
 * does where user namespaces are refused (a real script at a policy-selected path): under
 * `auto` the run goes ahead unsandboxed and the result, the audit record and a warning say why;
 * under `required` the run is refused with a coded error and nothing runs. Plus a working
 * directory inside a hidden path, hidden paths that do not exist, and policy files.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPolicyFile } from '../../src/policy/load';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { describeSandboxed, makeGateway } from './helpers';

jest.setTimeout(120_000);

let tmp: ReturnType<typeof makeTempDir>;
let work: string;
let failing: string;

beforeEach(() => {
  tmp = makeTempDir('execgate-sbx-platform-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  // What bwrap prints where the kernel refuses unprivileged user namespaces.
  failing = join(tmp.dir, 'bwrap-refused');
  writeFileSync(failing, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n');
  chmodSync(failing, 0o755);
});
afterEach(() => rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));

function auditRecords(home: string): Array<Record<string, unknown>> {
  return readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe.each([
  ['a helper that is not installed', () => join(tmp.dir, 'no-such-bwrap'), /does not exist or is not executable/],
  ['a helper that cannot create namespaces', () => failing, /cannot create namespaces here: bwrap: setting up uid map: Permission denied/],
])('%s', (_name, helper, reason) => {
  test('auto: runs unsandboxed; the result, the audit record and a one-time warning say why', async () => {
    const warnings: string[] = [];
    const logger = { warn: (_obj: object, message: string) => { warnings.push(message); } };
    const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work, sandbox: { mode: 'auto', helper: helper() }, logger: logger as never });
    try {
      const first = await gateway.exec({ command: 'echo ran > ran.txt; echo ok' });
      await gateway.exec({ command: 'true' });
      expect(first.stdout).toBe('ok\n');
      expect(first.sandbox.sandboxed).toBe(false);
      expect(first.sandbox.reason).toMatch(reason);
      expect(existsSync(join(work, 'ran.txt'))).toBe(true);
      expect(warnings.filter((w) => w.includes('WITHOUT the OS sandbox'))).toHaveLength(1);
    } finally {
      await gateway.close();
    }
    const started = auditRecords(join(tmp.dir, 'state')).filter((r) => r.event === 'exec.started');
    expect(started).toHaveLength(2);
    expect(started[0]!.sandbox).toMatchObject({ sandboxed: false, mode: 'auto' });
    expect(String((started[0]!.sandbox as { reason: string }).reason)).toMatch(reason);
  });

  test('required: EXECGATE_ERR_SANDBOX_UNAVAILABLE, nothing runs, no reference is resolved', async () => {
    const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work, sandbox: { mode: 'required', helper: helper() } });
    let asked = 0;
    gateway.refs.set('secret', 'token', 'token-value-0123456789');
    const lookup = gateway.refs.resolveTokens.bind(gateway.refs);
    gateway.refs.resolveTokens = ((...args: Parameters<typeof lookup>) => { asked += 1; return lookup(...args); }) as typeof lookup;
    try {
      for (const mode of ['sync', 'pty', 'background'] as const) {
        await expect(gateway.exec({ command: 'echo <<secret:token>> > ran.txt', mode })).rejects.toMatchObject({
          code: 'EXECGATE_ERR_SANDBOX_UNAVAILABLE',
          message: expect.stringMatching(reason),
        });
      }
      expect(asked).toBe(0);
      expect(existsSync(join(work, 'ran.txt'))).toBe(false);
    } finally {
      await gateway.close();
    }
    const rejected = auditRecords(join(tmp.dir, 'state')).filter((r) => r.event === 'exec.rejected');
    expect(rejected.map((r) => r.code)).toEqual(Array(3).fill('EXECGATE_ERR_SANDBOX_UNAVAILABLE'));
  });
});

describeSandboxed('paths', () => {
  test('a working directory inside a hidden path is refused with EXECGATE_ERR_SANDBOX_PATH', async () => {
    const secretDir = join(tmp.dir, 'secrets', 'inner');
    mkdirSync(secretDir, { recursive: true });
    const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work, sandbox: { mode: 'required', filesystem: { hidden: [join(tmp.dir, 'secrets')], writable: [], readOnly: [] } } });
    try {
      await expect(gateway.exec({ command: 'touch x', cwd: secretDir })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_PATH' });
      expect(existsSync(join(secretDir, 'x'))).toBe(false);
      await expect(gateway.exec({ command: 'true', cwd: gateway.home })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_PATH' });
    } finally {
      await gateway.close();
    }
  });

  test('hidden paths that do not exist are skipped and listed; hidden wins over writable; readOnly inside a writable root', async () => {
    mkdirSync(join(work, 'private'));
    writeFileSync(join(work, 'private', 'key'), 'PRIVATE');
    mkdirSync(join(work, 'hooks'));
    const gateway = makeGateway({
      home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work,
      sandbox: { mode: 'required', filesystem: { hidden: [join(work, 'private'), join(tmp.dir, 'nope')], writable: [], readOnly: [join(work, 'hooks')] } },
    });
    try {
      const result = await gateway.exec({ command: 'cat private/key 2>&1; ls -A private | wc -l; touch hooks/pre-commit 2>&1 | grep -c Read-only; touch ok' });
      expect(result.stdout).not.toContain('PRIVATE');
      expect(result.stdout).toMatch(/^0\n1\n$/m);
      expect(existsSync(join(work, 'hooks', 'pre-commit'))).toBe(false);
      expect(existsSync(join(work, 'ok'))).toBe(true);
    } finally {
      await gateway.close();
    }
    const started = auditRecords(join(tmp.dir, 'state')).find((r) => r.event === 'exec.started') as { sandbox: Record<string, unknown> };
    expect(started.sandbox).toMatchObject({ sandboxed: true, mechanism: 'bubblewrap', namespaces: ['mount', 'pid', 'ipc', 'uts', 'user', 'net'] });
    expect(started.sandbox.skipped).toContain(join(tmp.dir, 'nope'));
    expect(started.sandbox.hidden).toEqual(expect.arrayContaining([join(work, 'private'), join(tmp.dir, 'state')]));
    // (execgate's own files join the list when the checkout lies under /tmp.)
    expect((started.sandbox.readOnly as string[]).filter((path) => path.startsWith(tmp.dir))).toEqual([join(work, 'hooks')]);
  });

  test('no resolved value is ever on the sandbox argv', async () => {
    const value = 'argv-probe-value-0123456789';
    const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work, sandbox: { mode: 'required' } });
    gateway.refs.set('secret', 'probe', value);
    try {
      const result = await gateway.exec({ command: 'cat /proc/1/cmdline | tr "\\0" " "; echo; echo <<secret:probe>> | rev' });
      expect(result.stdout).not.toContain(value);
      expect(result.stdout).toContain(value.split('').reverse().join(''));
    } finally {
      await gateway.close();
    }
  });
});

describe('policy files', () => {
  test('the sandbox section loads, `~` kept for the run, hidden accumulates over the built-in list', () => {
    writeFileSync(join(tmp.dir, 'p.yaml'), 'version: 1\nsandbox:\n  mode: required\n  network: open\n  filesystem:\n    hidden: [~/.mytool]\n    writable: [~/cache, /srv/x/../y]\n');
    const { policy } = loadPolicyFile(join(tmp.dir, 'p.yaml'), { homeDir: '/home/u' });
    expect(policy.sandbox.mode).toBe('required');
    // `open` in a policy file: the private namespace, every public host through the egress proxy.
    expect(policy.sandbox.network).toBe('none');
    expect(policy.network.mode).toBe('open');
    expect(policy.sandbox.filesystem.hidden).toEqual(expect.arrayContaining(['~/.ssh', '~/.aws', '~/.mytool']));
    expect(policy.sandbox.filesystem.writable).toEqual(['~/cache', '/srv/y']);
  });

  test('an unknown mode or a relative path is a coded policy error', () => {
    writeFileSync(join(tmp.dir, 'bad.yaml'), 'version: 1\nsandbox:\n  mode: maybe\n  filesystem:\n    hidden: [relative/path]\n');
    expect(() => loadPolicyFile(join(tmp.dir, 'bad.yaml'))).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_POLICY_INVALID' }));
  });

  test('the shipped default is auto, strict is required', () => {
    const shipped = join(__dirname, '..', '..', 'policies');
    expect(loadPolicyFile(join(shipped, 'default.yaml')).policy.sandbox.mode).toBe('auto');
    expect(loadPolicyFile(join(shipped, 'strict.yaml')).policy.sandbox.mode).toBe('required');
  });
});
