/*
 * What a CLI start loads: `execgate run -- true` with the embedded default policy (sandboxed where
 * bubblewrap runs, its traffic through the egress proxy) loads neither AWS's signer (@smithy, loaded
 * with the first request signed again) nor node-forge (the interception CA's, loaded when a run
 * intercepts), and it did go through the proxy when the sandbox ran.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { CLI } from './helpers';

jest.setTimeout(60_000);

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-cli-start-'); });
afterEach(() => tmp.cleanup());

test('a default-policy run loads no AWS signer and no node-forge', () => {
  const hook = join(tmp.dir, 'hook.js');
  writeFileSync(hook, "process.on('exit', () => { const loaded = Object.keys(require.cache).map((p) => /node_modules\\/(@smithy\\/[^/]+|node-forge)\\//.exec(p)).filter(Boolean).map((m) => m[1]); process.stderr.write('LOADED:' + [...new Set(loaded)].sort().join(',') + '\\n'); });\n");
  const result = spawnSync(process.execPath, ['-r', hook, CLI, 'run', '--', 'printf "%s" "${HTTP_PROXY:+proxied}"'], {
    cwd: tmp.dir, encoding: 'utf8', timeout: 30_000, env: baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home') }),
  });
  expect(result.status).toBe(0);
  if (checkPlatform(undefined).ok) expect(result.stdout).toBe('proxied');
  expect(result.stderr).toBe('LOADED:\n');
});
