/*
 * The working-directory race, run from inside execgate as an agent would run it, on every
 * surface: library (cold and warm), PTY, the MCP bash tool, separate `execgate run` processes,
 * and the MCP file tools. The state directory sits inside the workspace (`EXECGATE_HOME` in the
 * project; a workspace may not be the home directory itself, EXECGATE_ERR_WORKSPACE_HOLDS_HOME). Background runs of the same gateway swap an ancestor
 * of the victims' working directory between a directory and a symlink, as fast as
 * renameat2(RENAME_EXCHANGE) allows (500 µs one way, 50 µs the other): one symlink leads straight
 * to the state directory, one to a directory under the host's /tmp holding a symlink to it
 * (planted on the host by the test: a run cannot plant it, which one run tries). The
 * victims try every name the state directory could be reached under. 0 reads, on every surface.
 *
 * `EXECGATE_RACE_RUNS` sets the runs per surface (default 300 here: a regression to a race that
 * wins 1 run in 100 fails this with 95 % certainty); `npm run race` runs 2,000 per surface.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createGateway, type Gateway } from '../../src/gateway';
import { execgateAsync } from '../cli/helpers';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { startStdio, textOf, type StdioServer } from '../mcp/helpers';
import { describeSandboxed, sandboxPolicy } from './helpers';

const RUNS = Number(process.env.EXECGATE_RACE_RUNS ?? 300);
/** PTY runs and separate CLI processes cost several times a library run: fewer of them in the suite's short version. */
const PTY_RUNS = process.env.EXECGATE_RACE_RUNS ? RUNS : 100;
const CLI_RUNS = process.env.EXECGATE_RACE_RUNS ? RUNS : 100;
/** A bound on a hang, not a speed: a loaded machine runs a PTY run in a fraction of a second. */
const TIMEOUT = Math.max(RUNS, PTY_RUNS, CLI_RUNS) * 2_000;
const FIXTURE = join(__dirname, 'fixtures', 'flipper.py');
/** Refusals that are fine: the race made the run's directory vanish, or the sandbox not match its plan. */
const REFUSALS = new Set(['EXECGATE_ERR_SANDBOX_MISMATCH', 'EXECGATE_ERR_SANDBOX_PATH', 'EXECGATE_ERR_SANDBOX_FAILED', 'EXECGATE_ERR_INVALID_CWD', 'EXECGATE_ERR_CWD_NOT_FOUND']);

interface Scene {
  readonly dir: string;
  /** The workspace: the gateway's working directory. */
  readonly home: string;
  /** The runs' `~`, beside the workspace. */
  readonly user: string;
  /** The state directory, inside the workspace. */
  readonly state: string;
  /** What must never come back. */
  readonly secrets: string[];
  /** The planted directory under the host's /tmp. */
  readonly planted: string;
  /** The victims' working directories (below the names that flip). */
  readonly victims: string[];
  /** Flipper commands: [A, B] pairs relative to home. */
  readonly flips: Array<[string, string]>;
  /** The flipper program, in the workspace (every run sees it there). */
  readonly flipper: string;
  cleanup(): void;
}

/** The command that starts flipper `index` of the scene, writing its swap count where `swaps` reads it. */
function flipCommand(scene: Scene, index: number): string {
  const [a, b] = scene.flips[index]!;
  return `exec python3 ${scene.flipper} ${a} ${b} 0.0005 0.00005 ${join(scene.home, `.flips-${index}`)}`;
}

/** How many swaps each flipper has made so far. */
function swaps(scene: Scene): number[] {
  return scene.flips.map((_, index) => {
    try {
      return Number(readFileSync(join(scene.home, `.flips-${index}`), 'utf8'));
    } catch {
      return -1;
    }
  });
}

/** The flippers are going: each has swapped, and swaps on while `during` runs. */
async function whileFlipping(scene: Scene, during: () => Promise<void>): Promise<void> {
  expect(await waitFor(() => swaps(scene).every((n) => n >= 0), 30_000)).toBe(true);
  const before = swaps(scene);
  await during();
  const after = swaps(scene);
  for (let i = 0; i < before.length; i++) expect(after[i]).toBeGreaterThan(before[i]!);
}

function makeScene(): Scene {
  const tmp = makeTempDir('execgate-race-');
  const home = join(tmp.dir, 'home');
  const state = join(home, '.execgate');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  const user = join(tmp.dir, 'user');
  mkdirSync(user);
  const marker = randomBytes(24).toString('hex');
  writeFileSync(join(state, 'marker.key'), `${marker}\n`, { mode: 0o600 });
  // A directory under the host's /tmp with a symlink to the state directory in it.
  const planted = join(realpathSync(tmpdir()), `execgate-race-p-${randomBytes(4).toString('hex')}`);
  mkdirSync(planted);
  symlinkSync(state, join(planted, 'b'));
  const w = join(home, 'w');
  mkdirSync(join(w, 'a', 'b'), { recursive: true });
  mkdirSync(join(w, 'c'), { recursive: true });
  symlinkSync(planted, join(w, 'l'));
  symlinkSync(state, join(w, 's'));
  const flipper = join(home, 'flipper.py');
  copyFileSync(FIXTURE, flipper);
  return {
    flipper,
    dir: tmp.dir,
    home,
    user,
    state,
    secrets: [marker],
    planted,
    victims: [join(w, 'a', 'b'), join(w, 'c')],
    flips: [['w/a', 'w/l'], ['w/c', 'w/s']],
    cleanup: () => {
      rmSync(planted, { recursive: true, force: true });
      tmp.cleanup();
    },
  };
}

/** The keys the gateway itself keeps there (audit key, vault key) are secrets too. */
function addStateKeys(scene: Scene): void {
  for (const name of ['audit.key', 'vault.key']) {
    const path = join(scene.state, name);
    if (existsSync(path)) scene.secrets.push(readFileSync(path, 'utf8').trim());
  }
}

/** Every name under which the state directory could show up from the victim's directory. */
function victimCommand(scene: Scene): string {
  return [
    'cat marker.key audit.key vault.key ../marker.key ../b/marker.key 2>/dev/null',
    `cat ${scene.state}/marker.key ${scene.state}/audit.key ${scene.state}/vault.key 2>/dev/null`,
    `cat ${scene.planted}/b/marker.key ${scene.home}/w/l/b/marker.key ${scene.home}/w/s/marker.key 2>/dev/null`,
    'for f in /tmp/*/marker.key /tmp/*/*/marker.key /tmp/*/*/*/marker.key; do cat "$f" 2>/dev/null; done',
    'echo victim-done',
  ].join('; ');
}

function expectNoSecret(scene: Scene, text: string): void {
  for (const secret of scene.secrets) {
    if (text.includes(secret)) throw new Error(`a victim read the state directory: ${text.slice(0, 500)}`);
  }
}

interface Tally {
  ran: number;
  refused: number;
}

function tally(): Tally {
  return { ran: 0, refused: 0 };
}

/** A victim that threw: a refusal (counted), or a real failure (rethrown). */
function refused(t: Tally, error: unknown): void {
  const code = (error as { code?: string }).code;
  if (code === undefined || !REFUSALS.has(code)) throw error;
  t.refused += 1;
}

function libraryGateway(scene: Scene, warmSandboxes: number): Gateway {
  return createGateway({
    policy: sandboxPolicy({ network: 'none' }),
    home: scene.state,
    cwd: scene.home,
    env: baseEnv({ HOME: scene.user }),
    warmSandboxes,
  });
}

async function startFlippers(gateway: Gateway, scene: Scene): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < scene.flips.length; index++) {
    const started = await gateway.exec({ command: flipCommand(scene, index), cwd: scene.home, mode: 'background', timeout: 0 });
    ids.push(started.id);
  }
  return ids;
}

describeSandboxed('the working-directory race, from inside execgate', () => {
  let scene: Scene;
  beforeEach(() => {
    scene = makeScene();
  });
  afterEach(() => {
    scene.cleanup();
  });

  test('the victims would see the state directory if anything let them (the control: no sandbox)', async () => {
    const gateway = createGateway({ policy: sandboxPolicy({ mode: 'off' }), home: scene.state, cwd: scene.home, env: baseEnv({ HOME: scene.user }) });
    try {
      for (const cwd of scene.victims) {
        const result = await gateway.exec({ command: victimCommand(scene), cwd });
        expect(result.stdout).toContain(scene.secrets[0]);
      }
    } finally {
      await gateway.close();
    }
  });

  test.each([
    ['library, cold', 0, 'sync'],
    ['library, warm', 1, 'sync'],
    ['PTY', 0, 'pty'],
  ] as const)('%s: 0 reads of the state directory', async (_name, warmSandboxes, mode) => {
    const runs = mode === 'pty' ? PTY_RUNS : RUNS;
    const gateway = libraryGateway(scene, warmSandboxes);
    try {
      // A run cannot plant a symlink under the host's /tmp: a working directory there is refused,
      // and by its name from the workspace it is the run's own private /tmp.
      await expect(gateway.exec({ command: `ln -s ${scene.state} planted-by-run`, cwd: scene.planted })).rejects.toMatchObject({ code: 'EXECGATE_ERR_SANDBOX_PATH' });
      const plant = await gateway.exec({ command: `mkdir -p ${scene.planted} && ln -s ${scene.state} ${scene.planted}/planted-by-run; echo "rc=$?"`, cwd: scene.home });
      expect(plant.output).toContain('rc=0');
      expect(existsSync(join(scene.planted, 'planted-by-run'))).toBe(false);
      addStateKeys(scene);
      const flippers = await startFlippers(gateway, scene);
      const t = tally();
      const command = victimCommand(scene);
      await whileFlipping(scene, async () => {
        for (let i = 0; i < runs; i++) {
          try {
            const result = await gateway.exec({ command, cwd: scene.victims[i % 2]!, mode });
            expectNoSecret(scene, result.output);
            t.ran += 1;
          } catch (error) {
            refused(t, error);
          }
        }
      });
      // The flippers ran the whole time, and victims did run (the rest were refused, coded).
      for (const id of flippers) expect(gateway.background.get(id)?.state).toBe('running');
      expect(t.ran).toBeGreaterThan(runs / 10);
      expect(t.ran + t.refused).toBe(runs);
      if (warmSandboxes > 0) expect(gateway.warmSandboxes!.warm).toBeGreaterThan(0);
    } finally {
      await gateway.close();
    }
  }, TIMEOUT);

  test('the MCP bash tool: 0 reads', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scene.user, EXECGATE_HOME: scene.state, LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off' };
    const server: StdioServer = await startStdio({ args: ['--workdir', scene.home], cwd: scene.home, env });
    try {
      addStateKeys(scene);
      for (let index = 0; index < scene.flips.length; index++) {
        const started = await server.bash(flipCommand(scene, index), { mode: 'background' });
        expect(started.isError).toBeFalsy();
      }
      const command = victimCommand(scene);
      let ran = 0;
      await whileFlipping(scene, async () => {
        for (let i = 0; i < RUNS; i++) {
          const victim = scene.victims[i % 2]!;
          const result: CallToolResult = await server.bash(`cd ${victim} 2>/dev/null && { ${command}; }`);
          const text = textOf(result);
          expectNoSecret(scene, JSON.stringify(result));
          if (text.includes('victim-done')) ran += 1;
          // Refused before anything ran (the session's directory flipped under it), or the `cd` failed inside.
          else expect(text).toMatch(/^EXECGATE_ERR_(SANDBOX_MISMATCH|SANDBOX_PATH|SANDBOX_FAILED|INVALID_CWD|CWD_NOT_FOUND)|\[exit code: 1\]/m);
        }
      });
      expect(ran).toBeGreaterThan(RUNS / 10);
      for (const text of server.seen) expectNoSecret(scene, text);
    } finally {
      await server.close();
    }
  }, TIMEOUT);

  test('separate `execgate run` processes: 0 reads', async () => {
    const env = { EXECGATE_HOME: scene.state, HOME: scene.user };
    // The flippers: detached background runs of one CLI process, in the workspace.
    for (let index = 0; index < scene.flips.length; index++) {
      const started = await execgateAsync(['run', '--mode', 'background', '--', flipCommand(scene, index)], { cwd: scene.home, env });
      expect(started.status).toBe(0);
    }
    addStateKeys(scene);
    const command = victimCommand(scene);
    let ran = 0;
    let refusedRuns = 0;
    try {
      await whileFlipping(scene, async () => {
        for (let i = 0; i < CLI_RUNS; i += 2) {
          // Two at a time: each is a gateway of its own whose workspace is the victim's directory.
          const results = await Promise.all([0, 1].map((k) => execgateAsync(['run', '--cwd', scene.victims[(i + k) % 2]!, '--', command], { cwd: scene.home, env })));
          for (const result of results) {
            expectNoSecret(scene, result.stdout + result.stderr);
            if (result.stdout.includes('victim-done')) ran += 1;
            else if (/EXECGATE_ERR_(SANDBOX_MISMATCH|SANDBOX_PATH|SANDBOX_FAILED|INVALID_CWD|CWD_NOT_FOUND|AUDIT_IN_WORKSPACE)/.test(result.stderr)) refusedRuns += 1;
            else throw new Error(`an unexpected result: ${result.status} ${result.stderr.slice(0, 400)}`);
          }
        }
      });
      // Each process is a gateway of its own whose workspace is the victim's directory, so its
      // bind mount has an ancestor the flippers rename: most of these runs are refused (the plan's
      // path check, bubblewrap's, or the mount check), never let through with the wrong mount.
      expect(ran).toBeGreaterThan(0);
    } finally {
      const running = async (): Promise<string[]> => (JSON.parse((await execgateAsync(['ps', '--json'], { cwd: scene.home, env })).stdout || '[]') as Array<{ id: string; state: string }>)
        .filter((line) => line.state === 'running').map((line) => line.id);
      for (const id of await running()) await execgateAsync(['kill', id], { cwd: scene.home, env });
      // Their supervisors write the end records into the state directory: gone before it is removed.
      for (let i = 0; i < 100 && (await running()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ran + refusedRuns).toBe(CLI_RUNS + (CLI_RUNS % 2));
  }, TIMEOUT);

  test('the MCP file tools, with a flipper beside them: 0 reads or writes', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scene.user, EXECGATE_HOME: scene.state, LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off' };
    const server: StdioServer = await startStdio({ args: ['--workdir', scene.home, '--tools', 'files'], cwd: scene.home, env });
    try {
      addStateKeys(scene);
      // Straight at it: the state directory inside the workdir does not exist for the file tools.
      const direct = await server.call('read_file', { path: '.execgate/marker.key' });
      expect(direct.isError).toBe(true);
      expectNoSecret(scene, JSON.stringify(direct));
      const listing = await server.call('list_dir', { path: '.execgate' });
      expect(textOf(listing)).not.toContain('marker.key');
      for (let index = 0; index < scene.flips.length; index++) {
        const started = await server.bash(flipCommand(scene, index), { mode: 'background' });
        expect(started.isError).toBeFalsy();
      }
      let answered = 0;
      await whileFlipping(scene, async () => {
        for (let i = 0; i < RUNS; i++) {
          const read = await server.call('read_file', { path: i % 2 ? 'w/c/marker.key' : 'w/l/b/marker.key' });
          expectNoSecret(scene, JSON.stringify(read));
          const wrote = await server.call('write_file', { path: i % 2 ? 'w/c/planted-write' : 'w/a/b/planted-write', content: 'x' });
          if (!wrote.isError) answered += 1;
          expectNoSecret(scene, JSON.stringify(wrote));
        }
      });
      expect(answered).toBeGreaterThan(0);
      // Nothing the file tools wrote reached the state directory.
      expect(readdirSync(scene.state).filter((name) => name.startsWith('planted'))).toEqual([]);
    } finally {
      await server.close();
    }
  }, TIMEOUT);
});
