/*
 * The MCP server's bash tool runs in the sandbox too (a real SDK client against `execgate mcp`):
 * `cd` persists between calls, the gateway's environment and state stay out of reach, and a
 * server one call starts in the background answers the next call on localhost.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

  test('a cd the next run could not work in is not followed: the host\'s temp directory, a directory outside the roots', async () => {
    // Inside the run /tmp is private: the directory can be made and entered there, and it
    // exists on the host too, where binding it in would expose whatever lives in it.
    for (const target of [tmp.dir, '/usr']) {
      const moved = await server.bash(`mkdir -p ${target} 2>/dev/null; cd ${target} && echo entered`);
      expect(structured(moved)).toMatchObject({ exit_code: 0, cwd: launch });
      expect(textOf(moved)).toContain(`the working directory stays \`${launch}\``);
      expect(structured(await server.bash('pwd')).stdout).toBe(`${launch}\n`);
    }
  });

  test('the server process environment and the state directory are out of reach', async () => {
    const result = await server.bash(`tr "\\0" "\\n" < /proc/$PPID/environ | grep -c MCP_PROBE; ls -A ${home} | wc -l; for f in /proc/[0-9]*/environ; do cat $f; done 2>/dev/null | grep -c ${SECRET.slice(0, 12)}`);
    expect(textOf(result)).not.toContain(SECRET);
    expect(structured(result).stdout).toBe('0\n0\n0\n');
  });

  test('the file tools mask what runs resolved: a value a run wrote into a file, or named a file after', async () => {
    const work = join(tmp.dir, 'files');
    mkdirSync(work);
    const other = 'mcp-never-resolved-Zx81Lm3q';
    const files = await startStdio({
      args: ['--tools', 'files', '--workdir', work],
      cwd: work,
      env: serverEnv(join(tmp.dir, 'files-home'), { EXECGATE_SECRET_MCP_PROBE: SECRET, EXECGATE_SECRET_OTHER: other }),
    });
    try {
      writeFileSync(join(work, 'planted.txt'), `other=${other}\n`);
      const wrote = await files.bash('echo "v=<<secret:mcp-probe>>" > f.txt; touch "n-<<secret:mcp-probe>>"; base64 -w0 f.txt > f.b64; echo done');
      expect(structured(wrote).stdout).toBe('done\n');
      const texts: string[] = [];
      for (const [name, args] of [
        ['read_file', { path: 'f.txt' }],
        ['read_file', { path: 'f.b64' }],
        ['read_file', { path: 'planted.txt' }],
        ['search_text', { pattern: 'v=', path: '.' }],
        ['list_dir', { path: '.' }],
        ['search_files', { pattern: 'n-*' }],
      ] as const) {
        const result = await files.call(name, args);
        texts.push(textOf(result));
        expect(textOf(result)).not.toContain(SECRET);
        expect(textOf(result)).not.toContain(other);
      }
      expect(texts[0]).toContain('v=[REDACTED:secret:mcp-probe]');
      expect(texts[1]).toContain('[REDACTED:secret:mcp-probe]');
      expect(texts[2]).toContain('other=[REDACTED:env:EXECGATE_SECRET_OTHER]');
      expect(texts[4]).toContain('n-[REDACTED:secret:mcp-probe]');
      // The file itself holds the value: nothing is rewritten on disk.
      expect(readFileSync(join(work, 'f.txt'), 'utf8')).toBe(`v=${SECRET}\n`);
    } finally {
      await files.close();
    }
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
