/*
 * Runs never write beside the credential files: a writable workspace that is the home directory,
 * or holds it, is refused (EXECGATE_ERR_WORKSPACE_HOLDS_HOME) when the gateway starts (library,
 * CLI, MCP) and when a reloaded policy would name one, and nothing runs. A project directory in
 * the home directory is the workspace that works: from there a run can neither plant a credential
 * path (`~/.ssh -> ~`), nor see a credential file the host replaces while it runs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { baseEnv, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeHome, sandboxPolicy } from './helpers';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

// The home directory lies outside every temp directory: a home in /tmp would be inside the run's
// own private /tmp, where what a run writes never reaches the host anyway.
let tmp: ReturnType<typeof makeHome>;
let home: string;
let project: string;
const open: Gateway[] = [];
beforeEach(() => {
  tmp = makeHome();
  home = join(tmp.dir, 'home', 'user');
  project = join(home, 'project');
  mkdirSync(project, { recursive: true });
  mkdirSync(join(home, '.aws'));
  writeFileSync(join(home, '.aws', 'credentials'), 'aws-key-material\n');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((g) => g.close()));
  tmp.cleanup();
});

function start(cwd: string, policy = sandboxPolicy({ network: 'none' })): Gateway {
  const g = createGateway({ policy, home: join(tmp.dir, 'state'), cwd, env: baseEnv({ HOME: home }), audit: false });
  open.push(g);
  return g;
}

describeSandboxed('a writable workspace that is or holds the home directory', () => {
  test.each([
    ['the home directory', () => home, {}],
    ['a directory that holds it', () => join(tmp.dir, 'home'), {}],
    ['a cwd.roots entry that is it', () => project, { cwd: { roots: ['~'] } }],
    ['a sandbox.filesystem.writable entry that holds it', () => project, { writable: ['~/..'] }],
  ] as const)('%s is refused when the gateway starts, with the path and the home directory named', (_what, cwd, change) => {
    const base = sandboxPolicy({ network: 'none', ...('writable' in change ? { filesystem: { hidden: sandboxPolicy().sandbox.filesystem.hidden, writable: [...change.writable], readOnly: [] } } : {}) });
    const policy = 'cwd' in change ? { ...base, cwd: { ...base.cwd, roots: change.cwd.roots.map((r) => r.replace('~', home)) } } : base;
    let thrown: unknown;
    try {
      start(cwd(), policy);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'EXECGATE_ERR_WORKSPACE_HOLDS_HOME', details: { home } });
    expect((thrown as Error).message).toMatch(/credential files live .*project directory.*cwd\.roots.*Nothing was run\.$/s);
  });

  test.each([
    ['~/.cargo', '.cargo', '.cargo/credentials.toml'],
    ['~/.config', '.config', '.config/gcloud'],
    ['~/.docker/', '.docker', '.docker/config.json'],
  ])('a sandbox.filesystem.writable entry %s that holds the directory of a credential path is refused', (entry, dir, credential) => {
    mkdirSync(join(home, dir), { recursive: true });
    const base = sandboxPolicy({ network: 'none' });
    const policy = { ...base, sandbox: { ...base.sandbox, filesystem: { ...base.sandbox.filesystem, writable: [entry] } } };
    expect(() => start(project, policy)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_WORKSPACE_HOLDS_HOME', details: expect.objectContaining({ holds: join(home, dir) }) }));
    expect(() => start(project, policy)).toThrow(new RegExp(`the credential path ${join(home, credential).replace(/[.]/g, '\\.')}`));
    // A directory below it that holds none is fine.
    mkdirSync(join(home, dir, 'cache'), { recursive: true });
    const below = { ...base, sandbox: { ...base.sandbox, filesystem: { ...base.sandbox.filesystem, writable: [join(home, dir, 'cache')] } } };
    expect(() => start(project, below)).not.toThrow();
  });

  test.each([['empty', ''], ['relative', 'rel/home'], ['another directory', '/srv/not-this-account']])('with HOME %s, the account\'s own home directory still counts', (_what, value) => {
    const account = userInfo().homedir;
    let thrown: unknown;
    try {
      const g = createGateway({ policy: sandboxPolicy({ network: 'none' }), home: join(tmp.dir, 'state'), cwd: account, env: { ...baseEnv(), HOME: value }, audit: false });
      open.push(g);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'EXECGATE_ERR_WORKSPACE_HOLDS_HOME', details: { home: realpathSync(account) } });
  });

  test('the CLI from the home directory refuses before anything runs; from a project directory it runs', () => {
    const marker = join(home, 'ran');
    const env = { ...baseEnv({ HOME: home, EXECGATE_HOME: join(tmp.dir, 'state') }), EXECGATE_KEYRING: 'off' };
    const refused = spawnSync(process.execPath, [CLI, 'run', '--', `touch ${marker}`], { cwd: home, env, encoding: 'utf8' });
    expect(refused.stderr).toContain('EXECGATE_ERR_WORKSPACE_HOLDS_HOME');
    expect(refused.status).not.toBe(0);
    expect(existsSync(marker)).toBe(false);
    const ran = spawnSync(process.execPath, [CLI, 'run', '--', 'echo ran-here; pwd'], { cwd: project, env, encoding: 'utf8' });
    expect({ status: ran.status, stdout: ran.stdout }).toEqual({ status: 0, stdout: `ran-here\n${project}\n` });
  });

  test('sandbox.mode off has no sandbox and no such refusal', async () => {
    const g = start(home, { ...sandboxPolicy(), sandbox: { ...sandboxPolicy().sandbox, mode: 'off' } });
    expect((await g.exec({ command: 'echo unsandboxed' })).stdout).toBe('unsandboxed\n');
  });

  test('a reloaded policy that would make the home directory writable is not loaded; the last good policy stays and runs go on', async () => {
    const conf = join(tmp.dir, 'conf');
    mkdirSync(conf);
    const file = join(conf, 'policy.yaml');
    writeFileSync(file, `version: 1\nsandbox: { mode: required, network: none }\ncwd: { roots: [${project}] }\n`);
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (_obj: object, msg: string) => warnings.push(msg), error: () => undefined, debug: () => undefined };
    const g = createGateway({ policyFile: file, home: join(tmp.dir, 'state'), cwd: project, env: baseEnv({ HOME: home }), logger } as Parameters<typeof createGateway>[0]);
    open.push(g);
    writeFileSync(file, `version: 1\nsandbox: { mode: required, network: none }\ncwd: { roots: ['~'] }\n`);
    expect(await g.reloadPolicy()).toBe(false);
    expect(warnings.join('\n')).toMatch(/was not reloaded.*is the home directory/);
    expect(g.policy.cwd.roots).toEqual([project]);
    const records = readFileSync(join(tmp.dir, 'state', 'audit.log'), 'utf8');
    expect(records).toMatch(/"event":"policy\.rejected".*"code":"EXECGATE_ERR_WORKSPACE_HOLDS_HOME"/);
    const run = await g.exec({ command: 'touch ~/planted 2>&1; echo next' });
    expect(run.stdout).toMatch(/Read-only file system\nnext\n$/);
    expect(existsSync(join(home, 'planted'))).toBe(false);
  });

  test('from a project directory a run can plant no credential path and never sees a credential file the host replaces while it runs', async () => {
    writeFileSync(join(home, '.git-credentials'), 'https://user:first-secret@example.com\n');
    const g = start(project);
    const plant = await g.exec({ command: 'ln -s ~ ~/.ssh 2>&1; ln -s /usr ~/.kube 2>&1; cat ~/.aws/credentials 2>&1; ls -A ~/.aws | wc -l; echo done' });
    expect(plant.stdout).not.toContain('aws-key-material');
    expect(plant.stdout).toMatch(/Read-only file system[\s\S]*Read-only file system[\s\S]*\n0\ndone\n$/);
    expect(existsSync(join(home, '.ssh'))).toBe(false);
    expect(existsSync(join(home, '.kube'))).toBe(false);
    // A run that keeps reading while the host saves the file anew by rename (git credential approve).
    const bg = await g.exec({ mode: 'background', command: 'while :; do echo tick; cat ~/.git-credentials 2>/dev/null; sleep 0.005; done' });
    for (let round = 0; round < 20; round++) {
      const next = join(home, `.git-credentials.tmp${round}`);
      writeFileSync(next, `https://user:renamed-secret-${round}@example.com\n`);
      renameSync(next, join(home, '.git-credentials'));
      await new Promise((done) => setTimeout(done, 10));
    }
    await g.background.kill(bg.id);
    expect(await waitFor(() => g.background.status(bg.id).state !== 'running', 10_000)).toBe(true);
    const output = g.background.status(bg.id).output.text;
    expect(output.split('tick').length).toBeGreaterThan(10);
    expect(output).not.toMatch(/secret/);
  });
});
