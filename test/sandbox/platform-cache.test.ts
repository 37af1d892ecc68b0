/*
 * The platform check remembered in the state directory. A real bubblewrap behind a counting
 * wrapper (a policy-selected helper): the first check starts the probe and remembers the success;
 * a later check in a fresh process state takes it without a probe; a change to the helper file is
 * another key and probes again. A failure is never remembered. A forged success for a helper that
 * cannot create namespaces only makes a run fail closed (nothing run), drops the entry, and the
 * next check probes and says why, so that `auto` then runs unsandboxed as before.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkPlatform, forgetPlatformCheck, getPlatformKey, PLATFORM_CACHE_FILE } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { describeSandboxed, makeGateway } from './helpers';

jest.setTimeout(120_000);

let tmp: ReturnType<typeof makeTempDir>;
let state: string;
let counter: string;

/** A helper script that notes each start in `counter`, then is bubblewrap (or refuses, as bwrap does without user namespaces). */
function writeHelper(name: string, body: string): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, `#!/bin/sh\necho start >> '${counter}'\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

function starts(): number {
  return existsSync(counter) ? readFileSync(counter, 'utf8').split('\n').filter((l) => l === 'start').length : 0;
}

beforeEach(() => {
  tmp = makeTempDir('execgate-sbx-platform-cache-');
  state = join(tmp.dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  counter = join(tmp.dir, 'starts');
  forgetPlatformCheck();
});
afterEach(() => {
  forgetPlatformCheck();
  tmp.cleanup();
});

describeSandboxed('the platform check remembered in the state directory', () => {
  test('a success is remembered per helper and platform key; a changed helper is probed again', () => {
    const bwrap = checkPlatform().helper!;
    const helper = writeHelper('bwrap-counting', `exec '${bwrap}' "$@"`);
    expect(checkPlatform(helper, { stateDir: state })).toEqual({ ok: true, helper });
    expect(starts()).toBe(1);
    const remembered = JSON.parse(readFileSync(join(state, PLATFORM_CACHE_FILE), 'utf8')) as Record<string, string>;
    expect(remembered[helper]).toBe(getPlatformKey(helper));

    // A new process (the in-process answer forgotten): no probe.
    forgetPlatformCheck();
    expect(checkPlatform(helper, { stateDir: state })).toEqual({ ok: true, helper });
    expect(starts()).toBe(1);

    // Without the state directory, the probe runs as before.
    forgetPlatformCheck();
    expect(checkPlatform(helper).ok).toBe(true);
    expect(starts()).toBe(2);

    // The helper file changed (another mtime): another key, probed again, then remembered anew.
    const later = new Date(Date.now() + 60_000);
    utimesSync(helper, later, later);
    forgetPlatformCheck();
    expect(checkPlatform(helper, { stateDir: state }).ok).toBe(true);
    expect(starts()).toBe(3);
    forgetPlatformCheck();
    expect(checkPlatform(helper, { stateDir: state }).ok).toBe(true);
    expect(starts()).toBe(3);
  });

  test('a failure is not remembered: every check probes and gives the helper\'s own words', () => {
    const failing = writeHelper('bwrap-refused', 'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1');
    for (let i = 1; i <= 2; i++) {
      forgetPlatformCheck();
      const answer = checkPlatform(failing, { stateDir: state });
      expect(answer.ok).toBe(false);
      expect(answer.ok ? '' : answer.reason).toMatch(/cannot create namespaces here: bwrap: setting up uid map: Permission denied/);
      expect(starts()).toBe(i);
    }
    expect(existsSync(join(state, PLATFORM_CACHE_FILE))).toBe(false);
  });

  test('a file that is a symbolic link, or not JSON, is not read: the probe runs', () => {
    const bwrap = checkPlatform().helper!;
    const helper = writeHelper('bwrap-counting', `exec '${bwrap}' "$@"`);
    const elsewhere = join(tmp.dir, 'elsewhere.json');
    writeFileSync(elsewhere, JSON.stringify({ [helper]: getPlatformKey(helper) }), { mode: 0o600 });
    symlinkSync(elsewhere, join(state, PLATFORM_CACHE_FILE));
    expect(checkPlatform(helper, { stateDir: state }).ok).toBe(true);
    expect(starts()).toBe(1);
    rmSync(join(state, PLATFORM_CACHE_FILE));
    writeFileSync(join(state, PLATFORM_CACHE_FILE), 'not json');
    forgetPlatformCheck();
    expect(checkPlatform(helper, { stateDir: state }).ok).toBe(true);
    expect(starts()).toBe(2);
    // Replaced by a well-formed file with the entry.
    expect(JSON.parse(readFileSync(join(state, PLATFORM_CACHE_FILE), 'utf8'))).toEqual({ [helper]: getPlatformKey(helper) });
  });

  test('a forged success fails closed: the run is refused, nothing runs, the entry is dropped, and auto then runs unsandboxed saying why', async () => {
    const failing = writeHelper('bwrap-refused', 'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1');
    writeFileSync(join(state, PLATFORM_CACHE_FILE), JSON.stringify({ [failing]: getPlatformKey(failing) }), { mode: 0o600 });
    const work = join(tmp.dir, 'work');
    mkdirSync(work);
    const first = makeGateway({ home: state, env: baseEnv(), cwd: work, sandbox: { mode: 'auto', helper: failing, network: 'none' } });
    try {
      expect(starts()).toBe(0);
      await expect(first.exec({ command: 'echo ran > ran.txt' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_FAILED' });
      expect(existsSync(join(work, 'ran.txt'))).toBe(false);
    } finally {
      await first.close();
    }
    expect(JSON.parse(readFileSync(join(state, PLATFORM_CACHE_FILE), 'utf8'))).toEqual({});
    const probedBefore = starts();
    const second = makeGateway({ home: state, env: baseEnv(), cwd: work, sandbox: { mode: 'auto', helper: failing, network: 'none' } });
    try {
      const result = await second.exec({ command: 'echo ran > ran.txt; echo ok' });
      expect(starts()).toBe(probedBefore + 1);
      expect(result.stdout).toBe('ok\n');
      expect(result.sandbox.sandboxed).toBe(false);
      expect(result.sandbox.reason).toMatch(/cannot create namespaces here: bwrap: setting up uid map: Permission denied/);
    } finally {
      await second.close();
    }
    rmSync(join(work, 'ran.txt'));
  });
});
