/*
 * A host that replaces a file by rename(2) (git's credential store, `sed -i`, editors' saves, npm
 * and docker login, the audit log's rotation) detaches every mount on that file's name in the
 * runs already started. These tests do it from the host side, round after round, while a
 * background run of the gateway loops reading and writing, with real bubblewrap:
 *   1. a hidden credential file in a directory no run can write is absent inside (its directory
 *      is a tmpfs of the run's own), so no rename uncovers it;
 *   2. an audit log in a subdirectory of the workspace is hidden with its whole directory, through
 *      rotations; one at the workspace's root refuses the gateway's start;
 *   3. a policy file in the workspace that a run could have written after the host replaced it is
 *      refused on reload, the policy in force staying;
 *   4. a PTY run whose sandbox cannot be set up (its working directory renamed away meanwhile)
 *      answers with the setup error, not after the 60 s set-up bound.
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { baseEnv } from '../helpers/tmp';
import { describeSandboxed, makeHome, sandboxPolicy } from './helpers';

const ROUNDS = Number(process.env.EXECGATE_RENAME_ROUNDS ?? 25);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Outside the temp directories: every run has a private /tmp and /var/tmp, where nothing of the
 * host's is. The user's home, else this checkout, else a directory of the system (as root); a CI
 * machine's home can itself be a temp directory.
 */
/** Replaces `file` as git's credential store and editors do: a new file, renamed over it. */
function replace(file: string, text: string): void {
  writeFileSync(`${file}.tmp-save`, text, { mode: 0o600 });
  renameSync(`${file}.tmp-save`, file);
}

async function stopBackground(gateway: Gateway, id: string): Promise<string> {
  await gateway.background.kill(id).catch(() => undefined);
  for (let i = 0; i < 100; i++) {
    const status = gateway.background.status(id);
    if (status.state !== 'running') return status.output.text;
    await sleep(50);
  }
  return gateway.background.status(id).output.text;
}

describeSandboxed('host renames do not uncover what runs must not see or write', () => {
  jest.setTimeout(240_000);
  let home: { dir: string; cleanup: () => void };
  let gateway: Gateway | undefined;
  beforeEach(() => {
    home = makeHome();
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
    home.cleanup();
  });

  test('1. hidden credential files outside the workspace stay absent through host renames', async () => {
    const h = home.dir;
    writeFileSync(join(h, '.git-credentials'), 'https://u:CRED-0@example.com\n', { mode: 0o600 });
    writeFileSync(join(h, '.npmrc'), '//registry/:_authToken=NPM-0\n', { mode: 0o600 });
    writeFileSync(join(h, '.bashrc'), 'BASHRC-VISIBLE\n');
    mkdirSync(join(h, 'project'));
    gateway = createGateway({ policy: sandboxPolicy(), home: join(h, '.execgate'), cwd: join(h, 'project'), env: baseEnv({ HOME: h }), audit: false });
    const first = await gateway.exec({ command: 'ls -a ~; cat ~/.bashrc; touch ~/planted 2>/dev/null && echo WROTE-HOME' });
    expect(first.stdout).toContain('BASHRC-VISIBLE');
    expect(first.stdout).toContain('project');
    expect(first.stdout).not.toMatch(/\.git-credentials|\.npmrc|WROTE-HOME/);
    expect(first.sandbox).toMatchObject({ sandboxed: true });
    const bg = await gateway.exec({ mode: 'background', command: 'while :; do echo loop; cat ~/.git-credentials ~/.npmrc 2>/dev/null; ls -a ~ | grep -E "credentials|npmrc"; sleep 0.02; done' });
    const secrets: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      secrets.push(`CRED-${round}-x`, `NPM-${round}-x`);
      replace(join(h, '.git-credentials'), `https://u:CRED-${round}-x@example.com\n`);
      replace(join(h, '.npmrc'), `//registry/:_authToken=NPM-${round}-x\n`);
      await sleep(60);
    }
    const output = await stopBackground(gateway, bg.id);
    expect(output.split('loop').length).toBeGreaterThan(ROUNDS / 2); // it did loop throughout
    for (const secret of ['CRED-0', 'NPM-0', ...secrets]) expect(output).not.toContain(secret);
    expect(output).not.toMatch(/credentials|npmrc/);
    const later = await gateway.exec({ command: 'cat ~/.git-credentials 2>&1; ls -a ~' });
    expect(later.stdout).not.toContain('CRED-');
    expect(readdirSync(h)).not.toContain('planted');
  });

  test('2. an audit log in a workspace subdirectory stays hidden and whole through rotations; at the root it is refused', async () => {
    const h = home.dir;
    const ws = join(h, 'ws');
    mkdirSync(join(ws, 'logs'), { recursive: true });
    const env = baseEnv({ HOME: h });
    expect(() => createGateway({ policy: sandboxPolicy(), home: join(h, 'state'), cwd: ws, env, audit: { path: join(ws, 'audit.log') } }))
      .toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_IN_WORKSPACE' }));
    gateway = createGateway({ policy: sandboxPolicy(), home: join(h, 'state'), cwd: ws, env, audit: { path: join(ws, 'logs', 'audit.log'), maxBytes: 4000 } });
    const bg = await gateway.exec({ mode: 'background', command: 'while :; do echo loop; cat logs/audit.log logs/audit.log.* 2>/dev/null | head -c 200; ls logs; : > logs/audit.log 2>/dev/null && echo TRUNCATED; echo "{\\"pid\\":1,\\"host\\":\\"x\\"}" > logs/audit.log.lock 2>/dev/null && echo PLANTED; sleep 0.02; done' });
    for (let round = 1; round <= ROUNDS; round++) {
      // Each run adds records; the small maxBytes rotates the log (a rename) every few runs.
      const run = await gateway.exec({ command: `echo round-${round}` });
      expect(run.stdout.trim()).toBe(`round-${round}`);
    }
    const output = await stopBackground(gateway, bg.id);
    expect(output.split('loop').length).toBeGreaterThan(2);
    // What the run wrote went to its own empty tmpfs: the host's log, rotated files and lock are untouched.
    expect(output).not.toMatch(/exec\.request|"seq"|round-/);
    const files = readdirSync(join(ws, 'logs'));
    expect(files.filter((f) => f.startsWith('audit.log.') && !f.includes('.lock')).length).toBeGreaterThan(0); // it did rotate
    // The lock, if there, is the gateway's own lease (a link naming this process), never the planted file.
    if (files.includes('audit.log.lock')) expect(readlinkSync(join(ws, 'logs', 'audit.log.lock'))).toMatch(new RegExp(`^execgate-lock:1:${process.pid}:`));
    const all = files.filter((f) => f.startsWith('audit.log') && !f.includes('.lock')).map((f) => readFileSync(join(ws, 'logs', f), 'utf8')).join('');
    expect(all).toContain(`round-${ROUNDS}`);
  });

  test('3. a policy file in the workspace changed while a run that could write it lived is not loaded', async () => {
    const h = home.dir;
    const ws = join(h, 'ws');
    mkdirSync(ws);
    const file = join(ws, 'policy.yaml');
    writeFileSync(file, 'version: 1\nsandbox: { mode: required }\n');
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (_obj: object, msg: string) => warnings.push(msg), error: () => undefined, debug: () => undefined };
    gateway = createGateway({ policyFile: file, home: join(h, 'state'), cwd: ws, env: baseEnv({ HOME: h }), logger } as Parameters<typeof createGateway>[0]);
    // Watching such a file says so (the reloads below are explicit, so the watcher stops at once).
    gateway.watchPolicy({ signal: false, debounceMs: 60_000 })();
    expect(warnings.join('\n')).toContain('policy.yaml');
    const bg = await gateway.exec({ mode: 'background', command: 'while :; do echo loop; printf "version: 1\\nsandbox: { mode: off }\\n" > policy.yaml 2>/dev/null && echo REWROTE; sleep 0.01; done' });
    let refused = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      replace(file, `version: 1\nsandbox: { mode: required }\n# saved ${round}\n`);
      await sleep(40);
      if (!(await gateway.reloadPolicy())) refused += 1;
      expect(gateway.policy.sandbox.mode).toBe('required');
    }
    expect(refused).toBe(ROUNDS);
    const output = await stopBackground(gateway, bg.id);
    expect(output).toContain('REWROTE'); // the host's rename did let the run write the file
    const sandboxed = await gateway.exec({ command: 'echo still' });
    expect(sandboxed.sandbox).toMatchObject({ sandboxed: true });
    // Saved again once no run that could write it is alive: loaded.
    await sleep(20);
    replace(file, 'version: 1\nsandbox: { mode: required }\n# reviewed\n');
    expect(await gateway.reloadPolicy()).toBe(true);
  });

  test('4. a PTY run whose sandbox set-up fails answers with the set-up error, promptly', async () => {
    const h = home.dir;
    const ws = join(h, 'ws');
    mkdirSync(join(ws, 'a', 'b'), { recursive: true });
    gateway = createGateway({ policy: sandboxPolicy(), home: join(h, 'state'), cwd: ws, env: baseEnv({ HOME: h }), audit: false, warmSandboxes: 0 });
    const bg = await gateway.exec({ mode: 'background', command: 'while :; do echo loop; sleep 0.05; done' });
    const outcomes: Record<string, number> = {};
    let flips = 0;
    let flipping = true;
    const flipper = (async () => {
      while (flipping) {
        try {
          renameSync(join(ws, 'a'), join(ws, 'a-away'));
          await sleep(1);
          renameSync(join(ws, 'a-away'), join(ws, 'a'));
          flips += 1;
        } catch { /* a run's own view; the host's rename raced nothing */ }
        await sleep(2);
      }
    })();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const started = Date.now();
        const outcome = await gateway.exec({ command: 'echo hi', mode: 'pty', cwd: join(ws, 'a', 'b'), timeout: 10_000 })
          .then(() => 'ok', (error: { code?: string }) => error.code ?? 'error');
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        // A bound on a hang (the set-up bound is 60 s), not a speed.
        expect(Date.now() - started).toBeLessThan(30_000);
      }
    } finally {
      flipping = false;
      await flipper;
    }
    expect(flips).toBeGreaterThan(0);
    await stopBackground(gateway, bg.id);
    expect(Object.values(outcomes).reduce((a, b) => a + b, 0)).toBe(ROUNDS);
  });
});
