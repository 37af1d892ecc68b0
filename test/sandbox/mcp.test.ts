/*
 * The MCP server's bash tool runs in the sandbox too (a real SDK client against `execgate mcp`):
 * `cd` persists between calls, the gateway's environment and state stay out of reach, and a
 * server one call starts in the background answers the next call on localhost.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { serverEnv, startStdio, structured, textOf, type StdioServer } from '../mcp/helpers';
import { describeSandboxed } from './helpers';

jest.setTimeout(90_000);

const SECRET = 'mcp-sandbox-secret-Qw7rT5yU';

describeSandboxed('MCP bash tool in the sandbox', () => {
  const tmp = makeTempDir('execgate-sbx-mcp-');
  const home = join(tmp.dir, 'home');
  const launch = join(tmp.dir, 'launch');
  let server: StdioServer;

  beforeAll(async () => {
    mkdirSync(home);
    mkdirSync(launch);
    const policy = join(tmp.dir, 'policy.yaml');
    writeFileSync(policy, `version: 1\ncwd:\n  roots: [${launch}]\nsandbox:\n  mode: required\n`);
    server = await startStdio({ args: ['--policy', policy], cwd: launch, env: serverEnv(home, { EXECGATE_SECRET_MCP_PROBE: SECRET }) });
  });
  afterAll(async () => {
    await server.close();
    rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
  });

  test('cd persists between calls inside the writable root', async () => {
    const first = await server.bash('mkdir -p sub/deeper && cd sub/deeper && echo moved');
    expect(structured(first)).toMatchObject({ exit_code: 0, cwd: join(launch, 'sub', 'deeper') });
    expect(structured(await server.bash('pwd; touch here')).stdout).toBe(`${join(launch, 'sub', 'deeper')}\n`);
    await server.bash(`cd ${launch}`);
  });

  test('the server process environment and the state directory are out of reach', async () => {
    const result = await server.bash(`tr "\\0" "\\n" < /proc/$PPID/environ | grep -c MCP_PROBE; ls -A ${home} | wc -l; for f in /proc/[0-9]*/environ; do cat $f; done 2>/dev/null | grep -c ${SECRET.slice(0, 12)}`);
    expect(textOf(result)).not.toContain(SECRET);
    expect(structured(result).stdout).toBe('0\n0\n0\n');
  });

  test('a server started in the background is reachable from the next call on localhost', async () => {
    writeFileSync(join(launch, 'hello.txt'), 'HELLO-FROM-BG');
    const port = 20000 + Math.floor(Math.random() * 20000);
    await server.bash(`python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1`, { mode: 'background' });
    let body = '';
    for (let attempt = 0; attempt < 100 && body !== 'HELLO-FROM-BG'; attempt++) {
      body = structured(await server.bash(`curl -s --max-time 2 http://localhost:${port}/hello.txt`)).stdout;
      if (body !== 'HELLO-FROM-BG') await new Promise((r) => setTimeout(r, 300));
    }
    expect(body).toBe('HELLO-FROM-BG');
  });
});
