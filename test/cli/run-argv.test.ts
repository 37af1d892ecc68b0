/*
 * `execgate run -- WORDS...` through the real CLI: quoting survives, shell syntax in a word is
 * text, and reference tokens inside words still resolve to exactly their value.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { execgateAsync, execgateSync } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-cli-argv-'); });
afterEach(() => tmp.cleanup());

// A value that would break any naive pasting: spaces, quotes, $, ;, a backtick.
const TOKEN_VALUE = `tok-9f2c "q" 'x' $HOME; echo PWNED \`id\``;

describe('the curl header case', () => {
  // The server is on the host's loopback, which no sandboxed run reaches (its loopback is the
  // gateway's private one; the egress proxy refuses loopback addresses): these runs are unsandboxed.
  const openNetwork = (): Record<string, string> => {
    const policy = join(tmp.dir, 'open-network.yaml');
    writeFileSync(policy, 'version: 1\nsandbox:\n  mode: off\n');
    return { EXECGATE_POLICY: policy };
  };
  let server: Server;
  let seen: IncomingHttpHeaders[];
  let url: string;

  beforeEach(async () => {
    seen = [];
    server = createServer((request, response) => {
      seen.push(request.headers);
      response.end(`you sent: ${request.headers.authorization ?? '(nothing)'}\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1?a=1&b=2`;
  });
  afterEach(async () => { await new Promise((resolve) => server.close(resolve)); });

  test('several words: the header arrives whole, with the resolved value, and the echo is masked', async () => {
    const result = await execgateAsync(
      ['run', '--', 'curl', '-sS', '--noproxy', '*', '-H', 'Authorization: Bearer <<secret:api-token>>', url],
      { cwd: tmp.dir, env: { EXECGATE_SECRET_API_TOKEN: TOKEN_VALUE, ...openNetwork() } },
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.authorization).toBe(`Bearer ${TOKEN_VALUE}`);
    expect(result.stdout).toBe('you sent: Bearer [REDACTED:secret:api-token]\n');
  });

  test('one word: the shell command as written, its own quoting decides', async () => {
    const result = await execgateAsync(
      ['run', '--', `curl -sS --noproxy '*' -H "Authorization: Bearer <<secret:api-token>>" '${url}'`],
      { cwd: tmp.dir, env: { EXECGATE_SECRET_API_TOKEN: TOKEN_VALUE, ...openNetwork() } },
    );
    expect(result.status).toBe(0);
    expect(seen[0]?.authorization).toBe(`Bearer ${TOKEN_VALUE}`);
    expect(result.stdout).not.toContain('tok-9f2c');
  });
});

describe('several words are run exactly as given', () => {
  const run = (words: string[], env: Record<string, string> = {}) => execgateSync(['run', '--', ...words], { cwd: tmp.dir, env });

  test('`;` and `$` are text, quotes are kept, empty words survive', () => {
    const marker = join(tmp.dir, 'MARKER');
    const result = run(['printf', '[%s]\\n', 'a;b', `touch ${marker}`, '$HOME', '$(id)', `it's "quoted"`, '', '*']);
    expect(result.stdout).toBe(`[a;b]\n[touch ${marker}]\n[$HOME]\n[$(id)]\n[it's "quoted"]\n[]\n[*]\n`);
    expect(result.status).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  test('`echo a;b` as two words prints a;b and runs no `b`', () => {
    const result = run(['echo', 'a;b']);
    expect(result.stdout).toBe('a;b\n');
    expect(result.stderr).toBe('');
  });

  test('tokens inside words resolve to exactly the value, whatever it holds, and are masked', () => {
    const result = run(['sh', '-c', 'printf "%s" "$1" | sha256sum', 'sh', 'pre-<<secret:api-token>>-post'], { EXECGATE_SECRET_API_TOKEN: TOKEN_VALUE });
    const { createHash } = require('node:crypto') as typeof import('node:crypto');
    expect(result.stdout.split(' ')[0]).toBe(createHash('sha256').update(`pre-${TOKEN_VALUE}-post`).digest('hex'));
    expect(result.stdout).not.toContain('PWNED');
    const echoed = run(['printf', '%s|', '<<secret:api-token>>', 'x<<secret:api-token>>'], { EXECGATE_SECRET_API_TOKEN: TOKEN_VALUE });
    expect(echoed.stdout).toBe('[REDACTED:secret:api-token]|x[REDACTED:secret:api-token]|');
  });

  test('the audit log and --json keep the unresolved words', () => {
    const result = execgateSync(['run', '--json', '--', 'echo', 'a b', '<<secret:api-token>>'], { cwd: tmp.dir, env: { EXECGATE_SECRET_API_TOKEN: TOKEN_VALUE } });
    const json = JSON.parse(result.stdout) as { command: string; stdout: string };
    expect(json.command).toBe("echo 'a b' '<<secret:api-token>>'");
    expect(json.stdout).toBe('a b [REDACTED:secret:api-token]\n');
    expect(result.stdout).not.toContain('tok-9f2c');
  });

  test('one word keeps shell semantics: pipes and `;` work', () => {
    const result = run(['echo a;echo b | tr b c']);
    expect(result.stdout).toBe('a\nc\n');
  });
});

describe('arguments that are not UTF-8', () => {
  test('are refused with a coded error and status 2, nothing run, instead of being run as U+FFFD', () => {
    const marker = join(tmp.dir, 'ran');
    // bash writes the raw byte 0xff into the argument; Node alone would hand execgate U+FFFD.
    const result = require('node:child_process').spawnSync('/bin/bash', ['-c', `"$0" "$1" run -- "touch ${marker}; echo "$'\\xff'`, process.execPath, join(__dirname, '..', '..', 'dist', 'cli', 'main.js')], {
      cwd: tmp.dir,
      env: { PATH: process.env.PATH, HOME: tmp.dir, EXECGATE_HOME: join(tmp.dir, 'home'), EXECGATE_KEYRING: 'off' },
      encoding: 'utf8',
    }) as { status: number; stdout: string; stderr: string };
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_CLI_ARGV_ENCODING: Argument 3 is not valid UTF-8/);
    expect(existsSync(marker)).toBe(false);
    // Valid UTF-8 beyond ASCII goes through as it was typed.
    const fine = execgateSync(['run', '--', 'printf %s "é 世"'], { cwd: tmp.dir });
    expect(fine.status).toBe(0);
    expect(fine.stdout).toBe('é 世');
  });
});
