/*
 * Special files answered with coded errors, never a hang. "Does not hang" is proved by each
 * test finishing at all (jest's per-test timeout, generous, is the bound), never by timing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { Vault } from '../../src/stores';
import { getSpecialKind } from '../../src/fs/special';
import { loadPolicyFile } from '../../src/policy/load';
import { baseEnv, makeTempDir } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
let tmp: ReturnType<typeof makeTempDir>;

beforeEach(() => { tmp = makeTempDir(); });
afterEach(() => tmp.cleanup());

function mkfifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

describe('special files are refused before they are opened', () => {
  test('classification: FIFO, device, /proc, /sys, links into /proc; ordinary paths pass', () => {
    expect(getSpecialKind(mkfifo(join(tmp.dir, 'fifo')))).toMatch(/FIFO/);
    expect(getSpecialKind('/dev/zero')).toMatch(/\/dev/);
    expect(getSpecialKind('/proc/nope')).toBe('a file under /proc');
    expect(getSpecialKind('/sys/kernel')).toBe('a file under /sys');
    symlinkSync('/proc/self', join(tmp.dir, 'link'));
    expect(getSpecialKind(join(tmp.dir, 'link', 'environ'))).toBe('a file under /proc');
    writeFileSync(join(tmp.dir, 'plain'), 'x');
    expect(getSpecialKind(join(tmp.dir, 'plain'))).toBeUndefined();
    expect(getSpecialKind(join(tmp.dir, 'missing', 'deeper'))).toBeUndefined();
  });

  test('EXECGATE_HOME under /proc: the gateway refuses with a coded error', () => {
    expect(() => createGateway({ env: baseEnv({ EXECGATE_HOME: '/proc/nope' }) })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_SPECIAL_FILE' }));
  }, 120_000);

  test('EXECGATE_HOME=/proc/nope through the CLI: a coded error, non-zero exit, no hang', () => {
    const result = spawnSync(process.execPath, [CLI, 'run', '--', 'true'], {
      env: baseEnv({ EXECGATE_HOME: '/proc/nope' }) as NodeJS.ProcessEnv,
      encoding: 'utf8',
      timeout: 50_000,
    });
    expect(result.signal).toBeNull();
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('EXECGATE_ERR_SPECIAL_FILE');
  }, 120_000);

  test('a FIFO as the policy file: refused as not a regular file', () => {
    const fifo = mkfifo(join(tmp.dir, 'policy.yaml'));
    expect(() => loadPolicyFile(fifo, { cwd: tmp.dir, homeDir: tmp.dir })).toThrow(/it is a FIFO \(named pipe\), not a regular file/);
    expect(() => loadPolicyFile(fifo, { cwd: tmp.dir, homeDir: tmp.dir })).toThrow(expect.objectContaining({ code: expect.stringMatching(/^EXECGATE_ERR_POLICY_/) }));
  }, 120_000);

  test('a FIFO as vault.json: VAULT reads answer EXECGATE_ERR_SPECIAL_FILE', async () => {
    const home = join(tmp.dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    mkfifo(join(home, 'vault.json'));
    await expect(new Vault({ home, env: {}, keyring: false }).get('secret', 'x')).rejects.toMatchObject({ code: 'EXECGATE_ERR_SPECIAL_FILE' });
  }, 120_000);

  test('vault.json -> /dev/zero: a coded error, not a RangeError', async () => {
    const home = join(tmp.dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    symlinkSync('/dev/zero', join(home, 'vault.json'));
    await expect(new Vault({ home, env: {}, keyring: false }).get('secret', 'x')).rejects.toMatchObject({ code: 'EXECGATE_ERR_SPECIAL_FILE' });
  }, 120_000);
});
