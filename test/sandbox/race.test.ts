/*
 * The working-directory race (race-scene.ts) on the library surfaces: the control without a
 * sandbox, library runs cold and warm, PTY runs. race-mcp.test.ts and race-cli.test.ts run the
 * other surfaces.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { baseEnv } from '../helpers/tmp';
import { describeSandboxed, sandboxPolicy } from './helpers';
import { addStateKeys, expectNoSecret, inLanes, libraryGateway, makeScene, PTY_RUNS, refused, RUNS, type Scene, startFlippers, tally, TIMEOUT, victimCommand, whileFlipping } from './race-scene';

describeSandboxed('the working-directory race, from inside execgate: library and PTY', () => {
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
      await whileFlipping(scene, () => inLanes(runs, async (i) => {
        try {
          const result = await gateway.exec({ command, cwd: scene.victims[i % 2]!, mode });
          expectNoSecret(scene, result.output);
          t.ran += 1;
        } catch (error) {
          refused(t, error);
        }
      }));
      // The flippers ran the whole time, and victims did run (the rest were refused, coded).
      for (const id of flippers) expect(gateway.background.get(id)?.state).toBe('running');
      expect(t.ran).toBeGreaterThan(runs / 10);
      expect(t.ran + t.refused).toBe(runs);
      if (warmSandboxes > 0) expect(gateway.warmSandboxes!.warm).toBeGreaterThan(0);
    } finally {
      await gateway.close();
    }
  }, TIMEOUT);
});
