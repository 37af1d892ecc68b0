/*
 * The MCP `bash` tool on the one lifecycle and the one presenter: nothing a command started
 * survives its normal end, and past seed 002's budget the text and the structured streams are
 * all cut in the middle (no full copy of a large output in either view).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir, UNSANDBOXED_POLICY_FILE } from '../helpers/tmp';
import { isAlive, serverEnv, startStdio, structured, textOf, waitFor, type StdioServer } from './helpers';

const SECRET = 'mcp-lifecycle-secret-4f9Qw2';

describe('MCP bash: lifecycle and presentation', () => {
  const tmp = makeTempDir('execgate-mcp-life-');
  const home = join(tmp.dir, 'home');
  let server: StdioServer;

  beforeAll(async () => {
    mkdirSync(home);
    // Unsandboxed: the first test follows escaped processes from the host.
    server = await startStdio({ cwd: tmp.dir, env: serverEnv(home, { EXECGATE_SECRET_TOKEN: SECRET, EXECGATE_POLICY: UNSANDBOXED_POLICY_FILE }) });
  });
  afterAll(async () => {
    await server?.close();
    tmp.cleanup();
  });

  test('setsid, set -m and setsid -f children are ended after a normal exit', async () => {
    const pids = join(tmp.dir, 'pids');
    const result = await server.bash([
      'true <<secret:TOKEN>>',
      `setsid sleep 981 >/dev/null 2>&1 & echo $! >> ${pids}`,
      `(set -m; sleep 982 >/dev/null 2>&1 & echo $! >> ${pids})`,
      `setsid -f sh -c 'echo $$ >> ${pids}; exec sleep 983' >/dev/null 2>&1`,
      `while [ "$(wc -l < ${pids})" -lt 3 ]; do sleep 0.01; done; echo done`,
    ].join('; '));
    expect(structured(result)).toMatchObject({ exit_code: 0, timed_out: false });
    const escaped = readFileSync(pids, 'utf8').split(/\s+/).filter(Boolean).map(Number);
    expect(escaped).toHaveLength(3);
    expect(await waitFor(() => escaped.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
  }, 90_000);

  test('past 128 KB combined, text and structured stdout/stderr are each cut, naming one full-output file', async () => {
    // 100 KB on each stream: neither is over the budget alone, together they are.
    const result = await server.bash("head -c 102400 /dev/zero | tr '\\0' o; echo; head -c 102400 /dev/zero | tr '\\0' e >&2; echo END >&2");
    const data = structured(result);
    expect(data.truncated).toBe(true);
    expect(typeof data.full_output_path).toBe('string');
    const text = textOf(result);
    const total = Buffer.byteLength(text) + Buffer.byteLength(data.stdout) + Buffer.byteLength(data.stderr);
    // Three views of about 8 KB each, not two copies of 200 KB.
    expect(total).toBeLessThan(3 * (8 * 1024 + 512));
    for (const view of [text, data.stdout, data.stderr]) expect(view).toContain(`full output: ${data.full_output_path}`);
    expect(data.stdout.startsWith('o'.repeat(4096))).toBe(true);
    expect(data.stderr.endsWith('END\n')).toBe(true);
    expect(existsSync(data.full_output_path)).toBe(true);
    const file = readFileSync(data.full_output_path, 'utf8');
    expect(file).toContain('o'.repeat(102400));
    expect(file).toContain(`${'e'.repeat(102400)}END\n`);
  }, 90_000);
});
