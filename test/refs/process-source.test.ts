/*
 * Credential-process sources (`secrets.sources`): real programs (bash scripts standing in for
 * `op`, `vault`, `gh`) run by the gateway, their answers cached until they expire, and every way
 * a program can misbehave (hangs, fails, floods, writes bytes that are not text) failing the
 * request closed with a coded error that names the source and never a value. Then the same
 * source from the library (sandboxed runs, background input), the CLI and a real MCP client,
 * with no code: values resolve, and no argv, audit record, result or error holds one.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createGateway } from '../../src/gateway';
import { ExecgateError } from '../../src/errors';
import { createProcessSources, type ProcessSourceCall, type ProcessSourceSpec } from '../../src/refs/sources/process';
import { loadPolicyFile } from '../../src/policy/load';
import { expectNoLeak } from '../helpers/leak';
import { baseEnv, isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { startStdio, serverEnv, structured, textOf } from '../mcp/helpers';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const VALUE = 'op-token-7f3a9c2e5b1d8046';

let tmp: ReturnType<typeof makeTempDir>;
/** The gateways' workspace (runs write there); source programs live beside it, in `bin`. */
let work: string;
beforeEach(() => {
  tmp = makeTempDir('execgate-process-source-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  mkdirSync(join(tmp.dir, 'bin'));
});
afterEach(() => tmp.cleanup());

/** A program at `bin/name` (or `where/name`) with `body` (bash); it counts its calls in `name.calls` and logs its argv. */
function program(name: string, body: string, where = join(tmp.dir, 'bin')): string {
  const path = join(where, name);
  writeFileSync(path, `#!/bin/bash\necho "$*" >> "${path}.argv"\necho x >> "${path}.calls"\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

function calls(path: string): number {
  return existsSync(`${path}.calls`) ? readFileSync(`${path}.calls`, 'utf8').split('\n').filter(Boolean).length : 0;
}

function spec(command: string[], more: Partial<ProcessSourceSpec> = {}): ProcessSourceSpec {
  return { name: 'manager', command, refs: ['secret:*'], format: 'text', timeoutMs: 5_000, maxAgeMs: 60_000, ...more };
}

function sources(specs: ProcessSourceSpec[], now?: () => number) {
  const recorded: ProcessSourceCall[] = [];
  const source = createProcessSources({ specs: () => specs, env: baseEnv(), cwd: tmp.dir, record: (call) => recorded.push(call), ...(now ? { now } : {}) });
  return { source, recorded };
}

async function failure(promise: unknown): Promise<ExecgateError> {
  try {
    await promise;
  } catch (error) {
    return error as ExecgateError;
  }
  throw new Error('expected the lookup to fail');
}

describe('a credential-process source', () => {
  test('answers with the program\'s output, passes the name as one argument, and keeps the value until maxAge', async () => {
    const op = program('op', `printf '%s\\n' "${VALUE}"`);
    let clock = 1_000_000;
    const { source, recorded } = sources([spec([op, 'read', 'op://Private/{name}/credential'], { maxAgeMs: 10_000 })], () => clock);
    await expect(source.lookup('secret', 'gh-token', { runId: 'run_1' })).resolves.toEqual({ found: true, value: VALUE, source: 'manager' });
    expect(readFileSync(`${op}.argv`, 'utf8')).toBe('read op://Private/gh-token/credential\n');
    clock += 5_000;
    await source.lookup('secret', 'gh-token');
    expect(calls(op)).toBe(1); // kept
    clock += 3_000; // 8 s of 10: less than a quarter of its life left, asked again
    await source.lookup('secret', 'gh-token');
    expect(calls(op)).toBe(2);
    expect(recorded).toEqual([
      expect.objectContaining({ source: 'manager', reference: '<<secret:gh-token>>', runId: 'run_1', outcome: 'found' }),
      expect.objectContaining({ outcome: 'found' }),
    ]);
    expectNoLeak(JSON.stringify(recorded), [VALUE]);
  });

  test('a JSON answer\'s expiry wins over maxAge, and a value already expired fails closed', async () => {
    let clock = Date.parse('2026-11-27T00:00:00Z');
    const vault = program('vault', `case "$1" in
      short) printf '{"value":"%s","expiresIn":100}' "${VALUE}";;
      iso) printf '{"value":"%s","Expiration":"2026-11-27T00:10:00Z"}' "${VALUE}";;
      old) printf '{"value":"%s","expiresAt":1000}' "${VALUE}";;
      none) printf '{"value":null}';;
    esac`);
    const { source, recorded } = sources([spec([vault, '{name}'], { format: 'json', maxAgeMs: 3_600_000 })], () => clock);
    await expect(source.lookup('secret', 'short')).resolves.toMatchObject({ found: true, value: VALUE });
    clock += 50_000;
    await source.lookup('secret', 'short');
    expect(calls(vault)).toBe(1);
    clock += 30_000; // 80 s of 100: asked again
    await source.lookup('secret', 'short');
    expect(calls(vault)).toBe(2);
    await source.lookup('secret', 'iso');
    expect(recorded.at(-1)).toMatchObject({ outcome: 'found', expiresAt: '2026-11-27T00:10:00.000Z' });
    const expired = await failure(source.lookup('secret', 'old'));
    expect(expired.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(expired.message).toMatch(/already expired/);
    await expect(source.lookup('secret', 'none')).resolves.toEqual({ found: false });
    expect(recorded.map((call) => call.outcome)).toEqual(['found', 'found', 'found', 'failed', 'not-found']);
  });

  test('no output is "not found"; only the references it names are asked of it', async () => {
    const empty = program('empty', 'exit 0');
    const { source } = sources([spec([empty, '{name}'], { refs: ['secret:team/*'] })]);
    await expect(source.lookup('secret', 'other')).resolves.toEqual({ found: false });
    expect(calls(empty)).toBe(0);
    await expect(source.lookup('secret', 'team/db')).resolves.toEqual({ found: false });
    expect(readFileSync(`${empty}.argv`, 'utf8')).toBe('team/db\n');
  });

  test('a program that hangs is killed with everything it started, within its timeout', async () => {
    const pidFile = join(tmp.dir, 'child.pid');
    const hang = program('hang', `sleep 300 & echo $! > ${pidFile}; wait`);
    const { source, recorded } = sources([spec([hang], { timeoutMs: 400 })]);
    const started = Date.now();
    const error = await failure(source.lookup('secret', 'anything'));
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(error.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(error.message).toMatch(/manager source .* could not resolve <<secret:anything>>: it did not finish within 400 ms/);
    const child = Number(readFileSync(pidFile, 'utf8'));
    expect(await waitFor(() => !isAlive(child), 3_000)).toBe(true);
    expect(recorded).toEqual([expect.objectContaining({ outcome: 'failed', reason: expect.stringMatching(/timeout/) })]);
  });

  test('a failing program: its stderr\'s first line is quoted, its stdout never', async () => {
    const fail = program('fail', `printf '%s' "${VALUE}"; echo "[ERROR] not signed in: run op signin" >&2; echo second >&2; exit 3`);
    const { source } = sources([spec([fail])]);
    const error = await failure(source.lookup('secret', 'gh'));
    expect(error.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(error.message).toContain('it exited with status 3: [ERROR] not signed in: run op signin');
    expect(error.message).not.toContain('second');
    expectNoLeak(JSON.stringify({ message: error.message, details: error.details }), [VALUE]);
  });

  test.each([
    ['floods its output', 'head -c 200000 /dev/zero | tr "\\0" a', /more than 64 KiB/],
    ['writes bytes that are not UTF-8', "printf 'abc\\377\\376def'", /not UTF-8/],
    ['writes a NUL', "printf 'abc\\0def-value'", /NUL/],
    ['is not there', null, /could not be started \(ENOENT\)/],
  ])('a program that %s fails closed', async (_what, body, reason) => {
    const path = body === null ? join(tmp.dir, 'missing') : program('bad', body);
    const { source } = sources([spec([path])]);
    const error = await failure(source.lookup('secret', 'x'));
    expect(error.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(error.message).toMatch(reason);
  });

  test('JSON that is not the form said fails closed', async () => {
    const bad = program('badjson', `case "$1" in a) echo 'not json';; b) echo '{"value":42}';; c) echo '{"value":"v-1234567890","expiresAt":"soon"}';; esac`);
    const { source } = sources([spec([bad, '{name}'], { format: 'json' })]);
    expect((await failure(source.lookup('secret', 'a'))).message).toMatch(/not JSON/);
    expect((await failure(source.lookup('secret', 'b'))).message).toMatch(/`value` is a number/);
    expect((await failure(source.lookup('secret', 'c'))).message).toMatch(/expiry/);
  });

  test('a value asked for again before it expires stays in use when the program now fails', async () => {
    const flaky = program('flaky', `if [ "$(wc -l < "$0.calls")" -gt 1 ]; then echo down >&2; exit 1; fi; echo "${VALUE}"`);
    let clock = 0;
    const { source, recorded } = sources([spec([flaky], { maxAgeMs: 100_000 })], () => clock);
    await source.lookup('secret', 'k');
    clock = 90_000; // inside the refresh window
    await expect(source.lookup('secret', 'k')).resolves.toMatchObject({ found: true, value: VALUE });
    expect(recorded.map((call) => call.outcome)).toEqual(['found', 'failed']);
    clock = 100_001; // expired: the failure now fails the request
    expect((await failure(source.lookup('secret', 'k'))).code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
  });

  test('concurrent uses of one reference share one call', async () => {
    const slow = program('slow', `sleep 0.3; echo "${VALUE}"`);
    const { source } = sources([spec([slow])]);
    const answers = await Promise.all(Array.from({ length: 5 }, () => source.lookup('secret', 'k')));
    expect(answers.every((answer) => answer.found)).toBe(true);
    expect(calls(slow)).toBe(1);
  });
});

describe('secrets.sources in a policy', () => {
  function policyFile(body: string): string {
    const path = join(tmp.dir, 'policy.yaml');
    writeFileSync(path, `version: 1\n${body}`);
    return path;
  }

  test.each([
    ['a built-in name', `secrets:\n  sources:\n    - { name: vault, command: [x], refs: ['secret:*'] }\n`, /name of a built-in source/],
    ['a repeated name', `secrets:\n  sources:\n    - { name: a, command: [x], refs: ['secret:*'] }\n    - { name: a, command: [y], refs: ['secret:*'] }\n`, /named `a`/],
    ['a decrypt reference', `secrets:\n  sources:\n    - { name: a, command: [x], refs: ['decrypt:*'] }\n`, /answers `secret:` references only/],
    ['no time limit', `secrets:\n  sources:\n    - { name: a, command: [x], refs: ['secret:*'], timeout: 0 }\n`, /needs a time limit/],
  ])('refuses %s with a coded error', (_what, body, message) => {
    const result = spawnSync(process.execPath, [CLI, 'policy', 'check', policyFile(body)], { encoding: 'utf8', env: baseEnv() as NodeJS.ProcessEnv });
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(message);
    expect(() => loadPolicyFile(join(tmp.dir, 'policy.yaml'))).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_POLICY_SOURCE_INVALID' }));
  });

  /** `op read op://Private/NAME/credential` as JSON: `gh-short` lives one second, the others an hour. */
  function setUp(): { policy: string; op: string; home: string } {
    const op = program('op', `case "$2" in *gh-short*) life=1;; *) life=3600;; esac; printf '{"value":"%s","expiresIn":%d}' "${VALUE}" "$life"`);
    const policy = policyFile(`secrets:\n  sources:\n    - name: onepassword\n      command: [${op}, read, "op://Private/{name}/credential"]\n      refs: ["secret:gh-*"]\n      format: json\n`);
    return { policy, op, home: join(tmp.dir, 'home') };
  }

  function auditText(home: string): string {
    return readdirSync(home).filter((name) => /^audit(\.[0-9T:-]+)?\.log$/.test(name)).map((name) => readFileSync(join(home, name), 'utf8')).join('');
  }

  test('library: a sandboxed run gets the value, the result and the audit log do not; background input asks again once it expired', async () => {
    const { policy, op, home } = setUp();
    const gateway = createGateway({ home, env: baseEnv(), cwd: work, policyFile: policy });
    try {
      const result = await gateway.exec({ command: 'printf %s <<secret:gh-token>> | wc -c; echo <<secret:gh-token>>' });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe(`${VALUE.length}\n[REDACTED:secret:gh-token]\n`);
      expect(result.refs).toEqual([expect.objectContaining({ ref: '<<secret:gh-token>>', found: true, source: 'onepassword' })]);
      // A name its patterns do not cover is not asked of it.
      const other = await gateway.exec({ command: 'echo <<secret:npm-token>>' });
      expect(other.refs).toEqual([expect.objectContaining({ found: false })]);
      expect(calls(op)).toBe(1);

      const background = await gateway.exec({ command: 'cat', mode: 'background' });
      await gateway.background.write(background.id, 'first <<secret:gh-token>>\n');
      expect(calls(op)).toBe(1); // kept: it lives an hour
      await gateway.background.write(background.id, 'short <<secret:gh-short>>\n');
      expect(calls(op)).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // gh-short has expired
      await gateway.background.write(background.id, 'again <<secret:gh-short>>\n');
      expect(calls(op)).toBe(3);
      await gateway.background.kill(background.id);
      const argv = readFileSync(`${op}.argv`, 'utf8');
      expect(argv).toBe(['gh-token', 'gh-short', 'gh-short'].map((name) => `read op://Private/${name}/credential\n`).join(''));
      const audit = auditText(home);
      const records = audit.split('\n').filter(Boolean).map((line) => JSON.parse(line)).filter((record) => record.event === 'secret.source');
      expect(records).toEqual([
        expect.objectContaining({ source: 'onepassword', reference: '<<secret:gh-token>>', outcome: 'found', runId: result.id }),
        expect.objectContaining({ source: 'onepassword', reference: '<<secret:gh-short>>', outcome: 'found', runId: background.id }),
        expect.objectContaining({ source: 'onepassword', reference: '<<secret:gh-short>>', outcome: 'found', runId: background.id }),
      ]);
      expectNoLeak(audit, [VALUE]);
      expectNoLeak(JSON.stringify(result), [VALUE]);
    } finally {
      await gateway.close();
    }
  });

  test('a program a run could have written is never started: in the workspace, by a relative path, or through a relative PATH entry', async () => {
    const planted = program('op', `echo "${VALUE}"`, work);
    const home = join(tmp.dir, 'home');
    const cases = [
      [planted, /lies in a directory runs can write/],
      ['./op', /is a relative path/],
      ['op', /is not on the gateway's PATH/], // PATH below holds `.` and the workspace only as relative entries
    ] as const;
    for (const [command, reason] of cases) {
      const policy = policyFile(`secrets:\n  sources:\n    - { name: planted, command: ["${command}"], refs: ["secret:*"] }\n`);
      const gateway = createGateway({ home, env: { ...baseEnv(), PATH: `.:work:${baseEnv().PATH}` }, cwd: work, policyFile: policy });
      try {
        const error = await gateway.exec({ command: 'echo <<secret:tok>>' }).then(() => undefined, (caught: ExecgateError) => caught);
        expect(error?.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
        expect(error?.message).toMatch(reason);
      } finally {
        await gateway.close();
      }
    }
    expect(calls(planted)).toBe(0);
  });

  test('CLI and MCP use it with no code; a failing source fails the run closed and names itself', async () => {
    const { policy, op, home } = setUp();
    const env = { ...serverEnv(home), EXECGATE_POLICY: policy };
    const run = spawnSync(process.execPath, [CLI, 'run', '--', 'printf %s <<secret:gh-token>> | wc -c'], { cwd: work, encoding: 'utf8', env });
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(String(VALUE.length));
    const explain = spawnSync(process.execPath, [CLI, 'policy', 'explain', '--json', '--', 'echo <<secret:gh-token>>'], { cwd: work, encoding: 'utf8', env });
    expect(JSON.parse(explain.stdout).sources).toEqual([{ reference: '<<secret:gh-token>>', source: 'onepassword', command: [op, 'read', 'op://Private/gh-token/credential'] }]);

    const server = await startStdio({ cwd: work, env });
    try {
      const result = await server.bash('echo <<secret:gh-token>>');
      expect(structured(result).exit_code).toBe(0);
      expect(textOf(result)).toContain('[REDACTED:secret:gh-token]');
      expectNoLeak(server.seen.join('\n'), [VALUE]);
    } finally {
      await server.close();
    }

    writeFileSync(op, `#!/bin/bash\necho "${VALUE}"; echo "session expired" >&2; exit 1\n`);
    // A new CLI process: nothing kept from the runs above.
    const broken = spawnSync(process.execPath, [CLI, 'run', '--', 'echo <<secret:gh-token>> > ran'], { cwd: work, encoding: 'utf8', env });
    expect(broken.status).not.toBe(0);
    expect(broken.stderr).toContain('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(broken.stderr).toContain('onepassword source');
    expect(broken.stderr).toContain('session expired');
    expect(existsSync(join(work, 'ran'))).toBe(false);
    expectNoLeak(broken.stdout + broken.stderr + auditText(home), [VALUE]);
  });
});
