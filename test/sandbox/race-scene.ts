/*
 * The working-directory race (race.test.ts, race-mcp.test.ts, race-cli.test.ts), run from inside
 * execgate as an agent would run it, on every surface: library (cold and warm), PTY, the MCP bash
 * tool, separate `execgate run` processes, and the MCP file tools. One file per group of surfaces,
 * so that the suite's workers run them side by side; each surface has a scene of its own. The
 * state directory sits inside the workspace (`EXECGATE_HOME` in the project; a workspace may not
 * be the home directory itself, EXECGATE_ERR_WORKSPACE_HOLDS_HOME). Background runs of the same
 * gateway swap an ancestor of the victims' working directory between a directory and a symlink, as fast as
 * renameat2(RENAME_EXCHANGE) allows (500 µs one way, 50 µs the other): one symlink leads straight
 * to the state directory, one to a directory under the host's /tmp holding a symlink to it
 * (planted on the host by the test: a run cannot plant it, which one run tries). The
 * victims try every name the state directory could be reached under. 0 reads, on every surface.
 *
 * `EXECGATE_RACE_RUNS` sets the runs per surface (default 300 here: a regression to a race that
 * wins 1 run in 100 fails this with 95 % certainty); `npm run race` runs 2,000 per surface.
 * Victims are independent of each other: two are in flight at a time (`inLanes`), the count per
 * surface unchanged, while the flippers swap on beside them.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { sandboxPolicy } from './helpers';

export const RUNS = Number(process.env.EXECGATE_RACE_RUNS ?? 300);
/** PTY runs and separate CLI processes cost several times a library run: fewer of them in the suite's short version. */
export const PTY_RUNS = process.env.EXECGATE_RACE_RUNS ? RUNS : 100;
export const CLI_RUNS = process.env.EXECGATE_RACE_RUNS ? RUNS : 100;
/** A bound on a hang, not a speed: a loaded machine runs a PTY run in a fraction of a second. */
export const TIMEOUT = Math.max(RUNS, PTY_RUNS, CLI_RUNS) * 2_000;
const FIXTURE = join(__dirname, 'fixtures', 'flipper.py');
/** Refusals that are fine: the race made the run's directory vanish, or the sandbox not match its plan. */
export const REFUSALS = new Set(['EXECGATE_ERR_SANDBOX_MISMATCH', 'EXECGATE_ERR_SANDBOX_PATH', 'EXECGATE_ERR_SANDBOX_FAILED', 'EXECGATE_ERR_INVALID_CWD', 'EXECGATE_ERR_CWD_NOT_FOUND']);

export interface Scene {
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
export function flipCommand(scene: Scene, index: number): string {
  const [a, b] = scene.flips[index]!;
  return `exec python3 ${scene.flipper} ${a} ${b} 0.0005 0.00005 ${join(scene.home, `.flips-${index}`)}`;
}

/** How many swaps each flipper has made so far. */
export function swaps(scene: Scene): number[] {
  return scene.flips.map((_, index) => {
    try {
      return Number(readFileSync(join(scene.home, `.flips-${index}`), 'utf8'));
    } catch {
      return -1;
    }
  });
}

/** The flippers are going: each has swapped, and swaps on while `during` runs. */
export async function whileFlipping(scene: Scene, during: () => Promise<void>): Promise<void> {
  expect(await waitFor(() => swaps(scene).every((n) => n >= 0), 30_000)).toBe(true);
  const before = swaps(scene);
  await during();
  const after = swaps(scene);
  for (let i = 0; i < before.length; i++) expect(after[i]).toBeGreaterThan(before[i]!);
}

export function makeScene(): Scene {
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
export function addStateKeys(scene: Scene): void {
  for (const name of ['audit.key', 'vault.key']) {
    const path = join(scene.state, name);
    if (existsSync(path)) scene.secrets.push(readFileSync(path, 'utf8').trim());
  }
}

/** Every name under which the state directory could show up from the victim's directory. */
export function victimCommand(scene: Scene): string {
  return [
    'cat marker.key audit.key vault.key ../marker.key ../b/marker.key 2>/dev/null',
    `cat ${scene.state}/marker.key ${scene.state}/audit.key ${scene.state}/vault.key 2>/dev/null`,
    `cat ${scene.planted}/b/marker.key ${scene.home}/w/l/b/marker.key ${scene.home}/w/s/marker.key 2>/dev/null`,
    'for f in /tmp/*/marker.key /tmp/*/*/marker.key /tmp/*/*/*/marker.key; do cat "$f" 2>/dev/null; done',
    'echo victim-done',
  ].join('; ');
}

export function expectNoSecret(scene: Scene, text: string): void {
  for (const secret of scene.secrets) {
    if (text.includes(secret)) throw new Error(`a victim read the state directory: ${text.slice(0, 500)}`);
  }
}

export interface Tally {
  ran: number;
  refused: number;
}

export function tally(): Tally {
  return { ran: 0, refused: 0 };
}

/** A victim that threw: a refusal (counted), or a real failure (rethrown). */
export function refused(t: Tally, error: unknown): void {
  const code = (error as { code?: string }).code;
  if (code === undefined || !REFUSALS.has(code)) throw error;
  t.refused += 1;
}

export function libraryGateway(scene: Scene, warmSandboxes: number): Gateway {
  return createGateway({
    policy: sandboxPolicy({ network: 'none' }),
    home: scene.state,
    cwd: scene.home,
    env: baseEnv({ HOME: scene.user }),
    warmSandboxes,
  });
}

export async function startFlippers(gateway: Gateway, scene: Scene): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < scene.flips.length; index++) {
    const started = await gateway.exec({ command: flipCommand(scene, index), cwd: scene.home, mode: 'background', timeout: 0 });
    ids.push(started.id);
  }
  return ids;
}

/** `runs` victims, `lanes` of them in flight at a time; `victim(i)` runs for every i in 0..runs-1 exactly once. */
export async function inLanes(runs: number, victim: (i: number) => Promise<void>, lanes = 2): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < runs) await victim(next++);
  }));
}
