/*
 * Attacks on the file-system view kept from run to run (src/sandbox/view-cache.ts): a kept view
 * that no longer matches the host passes the gate (the gate checks the sandbox against the plan,
 * not the world), so each attack here compares what a run sees against what a run planned from
 * scratch sees, or looks for a hidden secret directly, with real bubblewrap:
 *   a. from the host, right after a run (within the clock's tick of its view, or just past the
 *      margin that lets a view be kept), a random change of what the view is made of: credential
 *      files made and removed (their directory there or not), a hidden directory swapped for a
 *      symlink (to a directory holding a key, to /proc/self, to the workspace, to a file) and
 *      back, removed and made again, the home's times set back after an entry was added, the
 *      workspace renamed; the run that follows (sync, PTY, background; cold and warm) must see
 *      exactly what a run with no kept view sees, and never a secret;
 *   b. from inside: a background run whose workspace is the home plants symlinks at hidden names
 *      (to /proc/self, to the workspace, to the state directory, to a hidden host directory) and
 *      takes them away again, thousands of times, in bursts with pauses long enough for views to
 *      be kept, while other runs start and look for the host's secrets;
 *   c. a policy reload that hides one more path between two runs of a kept view.
 * EXECGATE_VIEW_ATTACK_ROUNDS sets the host-side rounds (40 by default, half that for PTY and
 * background), EXECGATE_VIEW_ATTACK_SECONDS the attacker's time in b (15 s by default).
 */
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { clearViewCache, getViewCacheCounts } from '../../src/sandbox/view-cache';
import { baseEnv, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeHome, runIn, sandboxPolicy, type Mode } from './helpers';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const ROUNDS = Number(process.env.EXECGATE_VIEW_ATTACK_ROUNDS ?? 40);
const SECRET = /SECRET-[A-Z]+/;

/** A small deterministic generator, so that a failing round can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

async function outcome(gateway: Gateway, mode: Mode, command: string): Promise<string> {
  try {
    const result = await runIn(gateway, mode, command);
    expect(result.sandboxed).toBe(true);
    return result.output.replace(/\r\n/g, '\n');
  } catch (error) {
    return `error ${(error as { code?: string }).code ?? String(error)}`;
  }
}

describeSandboxed('attacks on a kept file-system view', () => {
  jest.setTimeout(120_000);
  let base: { dir: string; cleanup: () => void };
  let gateway: Gateway | undefined;
  beforeEach(() => {
    base = makeHome();
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
    base.cleanup();
  });

  const cases: Array<[string, number, Mode[]]> = [
    ['cold, sync', 0, ['sync']],
    ['cold, PTY and background', 0, ['pty', 'background']],
    ['warm, sync', 1, ['sync']],
  ];
  test.each(cases)('a. host changes right after a run meet no stale view (%s)', async (_name, warmSandboxes, modes) => {
    const h = join(base.dir, 'home');
    const work = join(h, 'project');
    const elsewhere = join(base.dir, 'elsewhere');
    for (const dir of [work, elsewhere]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(elsewhere, 'id_rsa'), 'ELSEWHERE-KEY');
    writeFileSync(join(base.dir, 'lone-file'), 'LONE-FILE');
    writeFileSync(join(work, 'marker'), 'WORKSPACE');
    gateway = createGateway({ policy: sandboxPolicy(), home: join(base.dir, 'state'), cwd: work, env: baseEnv({ HOME: h }), audit: false, warmSandboxes });
    const g = gateway;
    const show = `cd ${work} 2>/dev/null; cat marker ~/.ssh/id_rsa ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/.git-credentials ~/.config/gh/hosts.yml ${elsewhere}/id_rsa ${base.dir}/lone-file ~/plain 2>&1; ls -a ~ ~/.ssh ~/.aws ~/.config 2>&1; echo end`;
    const rnd = random(0x5eed + warmSandboxes * 7 + modes.length);
    let counter = 0;
    const secret = (): string => `SECRET-${'ABCDEFGH'[counter++ % 8]}`;
    const clear = (path: string): void => rmSync(path, { recursive: true, force: true });
    const mutations: Array<[string, () => void]> = [
      ['~/.ssh/id_rsa made (directory there or not)', () => { if (lstatSync(join(h, '.ssh'), { throwIfNoEntry: false })?.isDirectory() !== true) clear(join(h, '.ssh')); mkdirSync(join(h, '.ssh'), { recursive: true }); writeFileSync(join(h, '.ssh', 'id_rsa'), secret()); }],
      ['~/.ssh made, empty', () => { clear(join(h, '.ssh')); mkdirSync(join(h, '.ssh')); }],
      ['~/.ssh removed', () => clear(join(h, '.ssh'))],
      ['~/.ssh removed and made again with a key', () => { clear(join(h, '.ssh')); mkdirSync(join(h, '.ssh')); writeFileSync(join(h, '.ssh', 'id_ed25519'), secret()); }],
      ['~/.ssh a symlink to a directory holding a key', () => { clear(join(h, '.ssh')); symlinkSync(elsewhere, join(h, '.ssh')); }],
      ['~/.ssh a symlink to /proc/self', () => { clear(join(h, '.ssh')); symlinkSync('/proc/self', join(h, '.ssh')); }],
      ['~/.ssh a symlink to the workspace', () => { clear(join(h, '.ssh')); symlinkSync(work, join(h, '.ssh')); }],
      ['~/.netrc a symlink to a file elsewhere', () => { clear(join(h, '.netrc')); symlinkSync(join(base.dir, 'lone-file'), join(h, '.netrc')); }],
      ['~/.aws/credentials made, ~/.aws new', () => { clear(join(h, '.aws')); mkdirSync(join(h, '.aws')); writeFileSync(join(h, '.aws', 'credentials'), secret()); }],
      ['~/.aws removed', () => clear(join(h, '.aws'))],
      ['~/.netrc made', () => { clear(join(h, '.netrc')); writeFileSync(join(h, '.netrc'), secret()); }],
      ['~/.netrc removed', () => clear(join(h, '.netrc'))],
      ['~/.git-credentials made, the home\'s times set back', () => {
        const before = lstatSync(h);
        writeFileSync(join(h, '.git-credentials'), secret());
        utimesSync(h, before.atime, before.mtime);
      }],
      ['~/.git-credentials removed', () => clear(join(h, '.git-credentials'))],
      ['~/.config/gh/hosts.yml made, ~/.config there', () => { mkdirSync(join(h, '.config'), { recursive: true }); clear(join(h, '.config', 'gh')); mkdirSync(join(h, '.config', 'gh')); writeFileSync(join(h, '.config', 'gh', 'hosts.yml'), secret()); }],
      ['~/.config/gh a file', () => { mkdirSync(join(h, '.config'), { recursive: true }); clear(join(h, '.config', 'gh')); writeFileSync(join(h, '.config', 'gh'), secret()); }],
      ['~/.config removed', () => clear(join(h, '.config'))],
      ['a plain entry in the (covered) home', () => writeFileSync(join(h, 'plain'), `PLAIN-${counter++}`)],
      ['the workspace renamed away and made again', () => { clear(`${work}-old`); renameSync(work, `${work}-old`); mkdirSync(work); writeFileSync(join(work, 'marker'), `WORKSPACE-${counter++}`); }],
    ];
    const before = getViewCacheCounts();
    const log: string[] = [];
    const rounds = modes.includes('sync') && warmSandboxes === 0 ? ROUNDS : Math.ceil(ROUNDS / 2);
    for (let round = 0; round < rounds; round++) {
      const [name, mutate] = mutations[Math.floor(rnd() * mutations.length)]!;
      mutate();
      log.push(name);
      // Within the tick of the last view (no pause), or past the margin that lets a view be kept.
      const pause = rnd() < 0.5 ? 0 : Math.floor(rnd() * 120);
      if (pause > 0) await sleep(pause);
      const mode = modes[round % modes.length]!;
      const seen = await outcome(g, mode, show);
      expect({ round, after: name, seen }).not.toMatchObject({ seen: expect.stringMatching(SECRET) });
      clearViewCache();
      const fresh = await outcome(g, mode, show);
      expect({ round, after: log.slice(-3), seen }).toEqual({ round, after: log.slice(-3), seen: fresh });
      // A second run on what the fresh one kept (when it was kept), compared too.
      if (rnd() < 0.3) expect(await outcome(g, mode, show)).toEqual(fresh);
    }
    const after = getViewCacheCounts();
    // The loop met kept views: some were reused, some dropped for a change (not a vacuous test).
    if (warmSandboxes === 0) {
      expect(after.reused - before.reused).toBeGreaterThan(3);
      expect(after.dropped - before.dropped).toBeGreaterThan(3);
    }
  });

  test('b. a background run planting symlinks at hidden names in its workspace, thousands of times, while runs start', async () => {
    const h = join(base.dir, 'home');
    const work = join(h, 'project');
    const hostKeys = join(base.dir, 'keys'); // a host directory the policy hides
    const state = join(base.dir, 'state');
    const audit = join(base.dir, 'audit');
    for (const dir of [work, hostKeys, audit, join(h, '.ssh'), join(work, 'keys')]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(hostKeys, 'id_rsa'), 'SECRET-HOSTKEY');
    writeFileSync(join(h, '.ssh', 'id_rsa'), 'SECRET-HOMEKEY');
    writeFileSync(join(work, '.env'), 'SECRET-DOTENV');
    writeFileSync(join(work, 'keys', 'deploy'), 'SECRET-DEPLOY');
    // Hidden names inside the workspace: two the host filled, and some the run plants symlinks at.
    const planted = ['l1', 'sub/l2', 'sub/deeper/l3'].map((name) => join(work, name));
    const hidden = ['~/.ssh', hostKeys, join(work, '.env'), join(work, 'keys'), ...planted];
    gateway = createGateway({
      policy: sandboxPolicy({ filesystem: { hidden, writable: [], readOnly: [] } }),
      home: state, cwd: work, env: baseEnv({ HOME: h }), audit: { path: join(audit, 'audit.log') }, warmSandboxes: 1,
    });
    const g = gateway;
    await g.exec({ command: 'true', mode: 'sync' });
    writeFileSync(join(state, 'planted-secret'), 'SECRET-STATE');
    const seconds = Number(process.env.EXECGATE_VIEW_ATTACK_SECONDS ?? 15);
    const targets = ['/proc/self', '/proc/self/root', work, h, join(h, '.ssh'), state, audit, hostKeys, join(work, 'keys'), join(work, '.env'), '/proc/1/root' + hostKeys, '..', '.'];
    // Bursts of about two seconds, a look, then a pause long enough for views to be kept.
    const attacker = `end=$((SECONDS + ${seconds})); n=0; while [ $SECONDS -lt $end ]; do b=$((SECONDS + 2)); while [ $SECONDS -lt $b ]; do n=$((n+1)); i=$n;
      for t in ${targets.map((t) => `'${t}'`).join(' ')}; do
        mkdir -p sub/deeper 2>/dev/null
        ln -sfn "$t" l1.new && mv -Tf l1.new l1; ln -sfn "$t" sub/l2; ln -sfn "$t" sub/deeper/l3
        mv .env env.moved 2>/dev/null; mv keys keys.moved 2>/dev/null; mv sub sub.moved 2>/dev/null && mv sub.moved sub
        rm -rf l1 sub/l2 2>/dev/null; [ $((i % 3)) = 0 ] && rm -rf sub
      done; done
      for d in l1 sub/l2 sub/deeper/l3; do for f in id_rsa deploy planted-secret audit.log .env .ssh/id_rsa keys/deploy; do timeout 1 cat "$d/$f" 2>/dev/null; done; done | grep -ao 'SECRET-[A-Z]*' >> found
      cat .env keys/deploy ${state}/planted-secret ${audit}/audit.log 2>/dev/null | grep -ao 'SECRET-[A-Z]*' >> found
      sleep 1; done; echo "churned $n"`;
    const started = await g.exec({ command: attacker, mode: 'background' });
    const names = ['id_rsa', 'deploy', 'planted-secret', 'audit.log', '.env', '.ssh/id_rsa', 'keys/deploy'];
    const look = `(cat ${hostKeys}/id_rsa ~/.ssh/id_rsa ${state}/planted-secret ${audit}/audit.log .env keys/deploy; for d in l1 sub/l2 sub/deeper/l3; do for f in ${names.join(' ')}; do timeout 1 cat "$d/$f"; done; done) 2>&1 | grep -ao 'SECRET-[A-Z]*'; true`;
    let runs = 0;
    const failed: string[] = [];
    const reused = getViewCacheCounts().reused;
    const modes: Mode[] = ['sync', 'sync', 'pty', 'background'];
    while (g.background.get(started.id).state === 'running' && runs < 3000) {
      const mode = modes[runs % modes.length]!;
      try {
        const result = await runIn(g, mode, look);
        expect(result.output).not.toMatch(SECRET);
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === undefined) throw error;
        failed.push(code);
      }
      runs += 1;
    }
    expect(await waitFor(() => g.background.get(started.id).state !== 'running', 60_000)).toBe(true);
    const churned = readFileSync(g.background.get(started.id).outputPath, 'utf8');
    expect(readFileSync(join(work, 'found'), 'utf8')).toBe('');
    for (const file of ['.env', 'keys/deploy']) expect(readFileSync(join(work, file), 'utf8')).toMatch(SECRET); // not moved by the run
    // Runs did start meanwhile, most of them (a name swapped between plan and mount fails one run, said so).
    expect(runs).toBeGreaterThan(20);
    expect(failed.filter((code) => !/^EXECGATE_ERR_SANDBOX/.test(code))).toEqual([]);
    console.log(`view attack b: ${churned.trim()} rounds of the attacker, ${runs} runs beside it, ${failed.length} refused (${[...new Set(failed)].join(', ')}), ${getViewCacheCounts().reused - reused} kept views reused`);
  });

  test('c. a policy reload that hides one more path, between two runs of a kept view', async () => {
    const h = join(base.dir, 'home');
    const work = join(h, 'project');
    mkdirSync(work, { recursive: true });
    mkdirSync(join(h, 'private'));
    writeFileSync(join(h, 'private', 'token'), 'SECRET-PRIVATE');
    const file = join(base.dir, 'policy.yaml');
    writeFileSync(file, 'version: 1\nsandbox:\n  mode: required\n');
    gateway = createGateway({ policyFile: file, home: join(base.dir, 'state'), cwd: work, env: baseEnv({ HOME: h }), audit: false, warmSandboxes: 0 });
    const g = gateway;
    // Runs until one reuses a kept view (the first ones' directories were made within the margin).
    let reusedOne = false;
    for (let i = 0; i < 10 && !reusedOne; i++) {
      await sleep(80);
      const reused = getViewCacheCounts().reused;
      expect((await runIn(g, 'sync', 'cat ~/private/token')).output).toContain('SECRET-PRIVATE');
      reusedOne = getViewCacheCounts().reused > reused;
    }
    expect(reusedOne).toBe(true);
    writeFileSync(file, 'version: 1\nsandbox:\n  mode: required\n  filesystem:\n    hidden: ["~/private"]\n');
    expect(await g.reloadPolicy()).toBe(true);
    expect((await runIn(g, 'sync', 'cat ~/private/token 2>&1; true')).output).not.toMatch(SECRET);
  });
});
