/*
 * The working-directory race (race-scene.ts) through a real MCP client: the bash tool, and the
 * file tools with a flipper beside them.
 */
import { readdirSync } from 'node:fs';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startStdio, textOf, type StdioServer } from '../mcp/helpers';
import { describeSandboxed } from './helpers';
import { addStateKeys, expectNoSecret, flipCommand, inLanes, makeScene, RUNS, type Scene, TIMEOUT, victimCommand, whileFlipping } from './race-scene';

describeSandboxed('the working-directory race, from inside execgate: MCP', () => {
  let scene: Scene;
  beforeEach(() => {
    scene = makeScene();
  });
  afterEach(() => {
    scene.cleanup();
  });

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
      await whileFlipping(scene, () => inLanes(RUNS, async (i) => {
        const victim = scene.victims[i % 2]!;
        const result: CallToolResult = await server.bash(`cd ${victim} 2>/dev/null && { ${command}; }`);
        const text = textOf(result);
        expectNoSecret(scene, JSON.stringify(result));
        if (text.includes('victim-done')) ran += 1;
        // Refused before anything ran (the session's directory flipped under it), or the `cd` failed inside.
        else expect(text).toMatch(/^EXECGATE_ERR_(SANDBOX_MISMATCH|SANDBOX_PATH|SANDBOX_FAILED|INVALID_CWD|CWD_NOT_FOUND)|\[exit code: 1\]/m);
      }));
      expect(ran).toBeGreaterThan(RUNS / 10);
      for (const text of server.seen) expectNoSecret(scene, text);
    } finally {
      await server.close();
    }
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
      await whileFlipping(scene, () => inLanes(RUNS, async (i) => {
        const read = await server.call('read_file', { path: i % 2 ? 'w/c/marker.key' : 'w/l/b/marker.key' });
        expectNoSecret(scene, JSON.stringify(read));
        const wrote = await server.call('write_file', { path: i % 2 ? 'w/c/planted-write' : 'w/a/b/planted-write', content: 'x' });
        if (!wrote.isError) answered += 1;
        expectNoSecret(scene, JSON.stringify(wrote));
      }));
      expect(answered).toBeGreaterThan(0);
      // Nothing the file tools wrote reached the state directory.
      expect(readdirSync(scene.state).filter((name) => name.startsWith('planted'))).toEqual([]);
    } finally {
      await server.close();
    }
  }, TIMEOUT);
});
