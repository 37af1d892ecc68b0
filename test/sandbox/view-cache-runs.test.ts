/*
 * A kept file-system view (src/sandbox/view-cache.ts) in real sandboxed runs, sync, PTY and
 * background, with real bubblewrap: between two runs of a tight loop the host changes what the
 * view is made of, right after a run whose view was kept, and the next run must see the host as
 * it is now:
 *   a. a credential file of the built-in list is created, its directory missing before
 *      (~/.aws/credentials) or there already (~/.ssh/id_ed25519): not visible;
 *   b. a hidden directory is swapped for a symlink (to a directory holding a key) and back:
 *      neither the name nor the symlink's target is visible;
 *   c. a hidden directory is removed and made again, with a new file: not visible;
 *   d. a new entry appears in a covered directory (the home, holding a hidden file): a plain one
 *      is there inside, a credential file is not;
 *   e. the workspace is renamed away and a new one made, and the home (an ancestor of the
 *      workspace) is renamed and a symlink left at its name: the run works in the new
 *      workspace, and what is hidden stays hidden under the new names.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { getViewCacheCounts } from '../../src/sandbox/view-cache';
import { baseEnv } from '../helpers/tmp';
import { describeSandboxed, makeHome, MODES, runIn, sandboxPolicy, type Mode } from './helpers';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describeSandboxed('a kept file-system view follows the host between runs', () => {
  jest.setTimeout(300_000);
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

  const cases: Array<[Mode, number | undefined]> = [...MODES.map((mode): [Mode, number | undefined] => [mode, 0]), ['sync', undefined]];
  test.each(cases)('%s runs (warm sandboxes: %s)', async (mode, warmSandboxes) => {
    const h = join(base.dir, 'home');
    const work = join(h, 'project');
    const elsewhere = join(base.dir, 'elsewhere');
    for (const dir of [work, elsewhere, join(h, '.gnupg')]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(h, '.git-credentials'), 'GIT-SECRET');
    writeFileSync(join(h, '.gnupg', 'key'), 'GPG-SECRET-0');
    writeFileSync(join(elsewhere, 'id_ed25519'), 'ELSEWHERE-SECRET');
    writeFileSync(join(work, 'marker'), 'OLD-WORKSPACE');
    gateway = createGateway({ policy: sandboxPolicy(), home: join(base.dir, 'state'), cwd: work, env: baseEnv({ HOME: h }), audit: false, ...(warmSandboxes === undefined ? {} : { warmSandboxes }) });
    const g = gateway;
    const run = async (command: string): Promise<string> => {
      const result = await runIn(g, mode, command);
      expect(result.sandboxed).toBe(true);
      return result.output;
    };
    // A run whose view is kept (nothing it depends on changed within the clock's tick), then
    // one that reuses it: the change that follows meets a kept view.
    let reuses = 0;
    const settle = async (): Promise<void> => {
      await sleep(80);
      await run('true');
      const before = getViewCacheCounts().reused;
      await run('true');
      reuses += getViewCacheCounts().reused - before;
    };
    const show = 'cat ~/.aws/credentials ~/.ssh/id_ed25519 ~/.gnupg/key ~/.git-credentials ~/.netrc ~/new-entry ' + `${elsewhere}/id_ed25519 ${h}-moved/.git-credentials marker 2>&1; ls -a ~ ~/.ssh ~/.gnupg 2>&1`;
    const secrets = /AWS-SECRET|SSH-SECRET|GPG-SECRET|GIT-SECRET|NETRC-SECRET/;

    await settle();
    expect(await run(show)).toContain('OLD-WORKSPACE');
    // a. a credential file, its directory missing before; then one whose directory is there
    await settle();
    mkdirSync(join(h, '.aws'));
    writeFileSync(join(h, '.aws', 'credentials'), 'AWS-SECRET');
    expect(await run(show)).not.toMatch(secrets);
    mkdirSync(join(h, '.ssh'));
    await settle();
    writeFileSync(join(h, '.ssh', 'id_ed25519'), 'SSH-SECRET-1');
    expect(await run(show)).not.toMatch(secrets);
    // b. the hidden directory swapped for a symlink to a directory holding a key, and back
    await settle();
    renameSync(join(h, '.ssh'), join(base.dir, 'ssh-away'));
    symlinkSync(elsewhere, join(h, '.ssh'));
    const swapped = await run(show);
    expect(swapped).not.toMatch(secrets);
    expect(swapped).not.toContain('ELSEWHERE-SECRET'); // the symlink's target is hidden
    await settle();
    rmSync(join(h, '.ssh'));
    renameSync(join(base.dir, 'ssh-away'), join(h, '.ssh'));
    const back = await run(show);
    expect(back).not.toMatch(secrets);
    expect(back).toContain('ELSEWHERE-SECRET'); // no symlink leads there now: not hidden any more
    // c. a hidden directory removed and made again
    await settle();
    rmSync(join(h, '.gnupg'), { recursive: true });
    mkdirSync(join(h, '.gnupg'));
    writeFileSync(join(h, '.gnupg', 'key'), 'GPG-SECRET-2');
    expect(await run(show)).not.toMatch(secrets);
    // d. new entries in the covered home: a plain file is there, a credential file is not
    await settle();
    writeFileSync(join(h, 'new-entry'), 'NEW-ENTRY-VISIBLE');
    writeFileSync(join(h, '.netrc'), 'NETRC-SECRET');
    const seen = await run(show);
    expect(seen).toContain('NEW-ENTRY-VISIBLE');
    expect(seen).not.toMatch(secrets);
    // e. the workspace renamed away and a new one made; then the home renamed, a symlink at its name
    await settle();
    renameSync(work, `${work}-old`);
    mkdirSync(work);
    writeFileSync(join(work, 'marker'), 'NEW-WORKSPACE');
    const moved = await run(`${show}; echo written > out`);
    expect(moved).toContain('NEW-WORKSPACE');
    expect(moved).not.toContain('OLD-WORKSPACE');
    expect(moved).not.toMatch(secrets);
    expect(readFileSync(join(work, 'out'), 'utf8')).toBe('written\n');
    await settle();
    renameSync(h, `${h}-moved`);
    symlinkSync(`${h}-moved`, h);
    const renamed = await run(`${show}; echo again > out`);
    expect(renamed).toContain('NEW-WORKSPACE');
    expect(renamed).not.toMatch(secrets);
    expect(readFileSync(join(`${h}-moved`, 'project', 'out'), 'utf8')).toBe('again\n');
    // The loop did meet kept views (cold runs plan every run; a warm gateway plans ahead).
    if (warmSandboxes === 0) expect(reuses).toBeGreaterThan(5);
  });
});
