/*
 * The working-directory race (race-scene.ts) from separate `execgate run` processes, each a
 * gateway of its own.
 */
import { execgateAsync } from '../cli/helpers';
import { describeSandboxed } from './helpers';
import { addStateKeys, CLI_RUNS, expectNoSecret, flipCommand, makeScene, type Scene, TIMEOUT, victimCommand, whileFlipping } from './race-scene';

describeSandboxed('the working-directory race, from inside execgate: separate CLI processes', () => {
  let scene: Scene;
  beforeEach(() => {
    scene = makeScene();
  });
  afterEach(() => {
    scene.cleanup();
  });

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
});
