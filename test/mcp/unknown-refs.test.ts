/*
 * Why 5, over MCP: a reference no source knows is named in the text the agent reads and in the
 * structured result, with the known names close to it, and it reaches the command as its text
 * (unquoted too: no heredoc warning from bash).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { serverEnv, startStdio, structured, textOf, type StdioServer } from './helpers';

const tmp = makeTempDir('execgate-mcp-unknown-');
let server: StdioServer;

beforeAll(async () => {
  const home = join(tmp.dir, 'home');
  mkdirSync(home);
  server = await startStdio({ cwd: tmp.dir, env: serverEnv(home, { EXECGATE_SECRET_GITHUB_TOKEN: 'ghp-value-1234567890' }) });
});
afterAll(async () => {
  await server.close();
  tmp.cleanup();
});

test('the bash tool says which reference no source knew, and what was meant', async () => {
  const result = await server.bash('echo <<secret:gihtub-token>>');
  const text = textOf(result);
  expect(text).toBe('<<secret:gihtub-token>>\n[execgate: no secret source knows <<secret:gihtub-token>>; it was passed on as written (did you mean <<secret:github-token>>?)]');
  expect(text).not.toContain('here-document');
  expect(structured(result)).toMatchObject({ exit_code: 0, unknown_refs: [{ ref: '<<secret:gihtub-token>>', did_you_mean: ['<<secret:github-token>>'] }] });
});

test('a known reference alone adds nothing', async () => {
  const result = await server.bash('echo <<secret:github-token>>');
  expect(textOf(result)).toBe('[REDACTED:secret:github-token]\n');
  expect(structured(result)).not.toHaveProperty('unknown_refs');
});
