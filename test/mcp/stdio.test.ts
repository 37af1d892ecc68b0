/*
 * `execgate mcp` over stdio, driven by the official SDK client: every scenario of seed 001 and
 * the seed 002 behaviours (modes, truncation, description with the directory, background).
 */
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { makeTempDir } from '../helpers/tmp';
import { isAlive, isGroupAlive, serverEnv, startStdio, structured, textOf, waitFor, type StdioServer } from './helpers';

const SECRET = 'mcp-secret-Zq8vR2kT9wLx';
const MARKER_PREFIX = '__EXECGATE_CWD_';

describe('execgate mcp over stdio', () => {
  const tmp = makeTempDir('execgate-mcp-stdio-');
  const home = join(tmp.dir, 'home');
  const launch = join(tmp.dir, 'launch');
  const policy = join(tmp.dir, 'policy.yaml');
  let server: StdioServer;
  let listChanged = 0;

  beforeAll(async () => {
    mkdirSync(home);
    mkdirSync(launch);
    writeFileSync(policy, [
      'version: 1',
      // These tests move between directories under /tmp, which a sandbox makes private, and
      // follow pids from the host; test/sandbox covers MCP runs in the sandbox.
      'sandbox:',
      '  mode: off',
      'rules:',
      '  default: allow',
      '  list:',
      '    - id: no-rm',
      '      action: deny',
      '      command: [rm]',
      '      reason: Removing files is not allowed here.',
      '',
    ].join('\n'));
    // No --workdir: the session starts where the server was launched (seed 001).
    server = await startStdio({
      args: ['--policy', policy],
      cwd: launch,
      env: serverEnv(home, { EXECGATE_SECRET_MCP_TOKEN: SECRET }),
      clientName: 'stdio-test',
    });
    server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
  });

  afterAll(async () => {
    await server?.close();
    tmp.cleanup();
  });

  test('lists bash and the process tools; the bash description names the working directory', async () => {
    const { tools } = await server.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['bash', 'process_status', 'process_output', 'process_write', 'process_kill', 'process_list']);
    const bash = tools.find((tool) => tool.name === 'bash')!;
    expect(bash.description).toContain(`Current working directory: ${launch}`);
    expect(bash.inputSchema.required).toEqual(['command']);
    expect(Object.keys(bash.inputSchema.properties ?? {})).toEqual(['command', 'timeout', 'mode']);
    expect(bash.outputSchema?.required).toEqual(expect.arrayContaining(['stdout', 'stderr', 'exit_code', 'cwd']));
  });

  test('the first pwd is the launch directory (no --workdir)', async () => {
    const result = await server.bash('pwd');
    expect(structured(result).stdout).toBe(`${launch}\n`);
  });

  test('echo hello: stdout, empty stderr, exit code 0', async () => {
    const result = await server.bash('echo hello');
    expect(result.isError).toBeFalsy();
    expect(structured(result)).toMatchObject({ stdout: 'hello\n', stderr: '', exit_code: 0, timed_out: false, truncated: false });
    expect(textOf(result)).toBe('hello\n');
  });

  test('echo err >&2: stderr', async () => {
    const result = await server.bash('echo err >&2');
    expect(structured(result)).toMatchObject({ stdout: '', stderr: 'err\n', exit_code: 0 });
  });

  test('exit 42 is a result with exit_code 42, not a tool error', async () => {
    const result = await server.bash('exit 42');
    expect(result.isError).toBeFalsy();
    expect(structured(result).exit_code).toBe(42);
    expect(textOf(result)).toContain('exit code: 42');
  });

  test('cd persists across calls; the description follows and the client is told', async () => {
    const before = listChanged;
    const moved = await server.bash('cd /tmp');
    expect(structured(moved).cwd).toBe('/tmp');
    const result = await server.bash('pwd');
    expect(structured(result).stdout).toBe('/tmp\n');
    expect(await waitFor(() => listChanged > before, 20_000)).toBe(true);
    const { tools } = await server.client.listTools();
    expect(tools.find((tool) => tool.name === 'bash')!.description).toContain('Current working directory: /tmp');
  });

  test('a command that calls exit still reports where it went, with its own exit code', async () => {
    const result = await server.bash('cd /usr && exit 3');
    expect(structured(result)).toMatchObject({ exit_code: 3, cwd: '/usr' });
    expect(structured(await server.bash('pwd')).stdout).toBe('/usr\n');
    await server.bash(`cd ${launch}`);
  });

  test('a directory whose name holds newlines is tracked whole, and nothing of the block leaks into stdout', async () => {
    const made = await server.bash(`mkdir -p ${launch}/nl && cd ${launch}/nl && mkdir -p $'a\\nb\\n' && cd $'a\\nb\\n' && echo in`);
    expect(structured(made)).toMatchObject({ exit_code: 0, stdout: 'in\n', cwd: `${launch}/nl/a\nb\n` });
    const pwd = await server.bash('pwd; echo end');
    expect(structured(pwd).stdout).toBe(`${launch}/nl/a\nb\n\nend\n`);
    expect(structured(pwd).cwd).toBe(`${launch}/nl/a\nb\n`);
    await server.bash(`cd ${launch}`);
  });

  test('the sentinel is stripped, and never shown even when the command looks for it', async () => {
    const result = await server.bash('echo hello; trap -p; printf "no newline"');
    expect(textOf(result)).not.toContain(MARKER_PREFIX);
    expect(structured(result).stdout.startsWith('hello\n')).toBe(true);
    expect(structured(result).stdout.endsWith('no newline')).toBe(true);
    expect(structured(result).cwd).toBe(launch);
  });

  test('printed fake sentinels cannot move the working directory', async () => {
    const fake = `${MARKER_PREFIX}${'0'.repeat(32)}__`;
    const attempts = [
      `printf '\\n${fake}\\n/etc\\n'`,
      `printf '\\n${fake}\\n/etc\\n'; kill -9 $$`,
      // A marker of the right shape but not this call's (each call draws a fresh one).
      `printf '\\n%s\\n/etc\\n' "${MARKER_PREFIX}deadbeefdeadbeefdeadbeefdeadbeef__"; exit 0`,
    ];
    for (const command of attempts) {
      const result = await server.bash(command);
      expect(structured(result).cwd).toBe(launch);
    }
    expect(structured(await server.bash('pwd')).stdout).toBe(`${launch}\n`);
  });

  test('timeout 3 with sleep 300: returns after the timeout, timed_out, the process group is gone, cwd unchanged', async () => {
    const result = await server.bash('cd /tmp; echo $$; echo partial; sleep 300', { timeout: 3 });
    expect(result.isError).toBeFalsy();
    const out = structured(result);
    expect(out.timed_out).toBe(true);
    expect(out.stdout).toContain('partial');
    expect(textOf(result)).toMatch(/timed out/);
    const pid = Number(out.stdout.split('\n')[0]);
    expect(pid).toBeGreaterThan(1);
    expect(await waitFor(() => !isAlive(pid) && !isGroupAlive(pid), 20_000)).toBe(true);
    // Killed before it finished: the cd does not count (seed 001).
    expect(out.cwd).toBe(launch);
    expect(structured(await server.bash('pwd')).stdout).toBe(`${launch}\n`);
  });

  test('a secret reference is resolved and its value masked; the raw value is in no response', async () => {
    const result = await server.bash('echo "token=<<secret:mcp-token>>"; test "<<secret:mcp-token>>" = "$(printf %s "<<secret:mcp-token>>")" && echo same');
    expect(structured(result).stdout).toBe('token=[REDACTED:secret:mcp-token]\nsame\n');
    expect(server.seen.join('\n')).not.toContain(SECRET);
  });

  test('output over 128 KB: the middle is cut, the first and last 4 KB kept, with a notice and the full file', async () => {
    const result = await server.bash("printf 'FIRST-LINE\\n'; head -c 300000 /dev/zero | tr '\\0' x; printf '\\nLAST-LINE\\n'");
    const text = textOf(result);
    expect(text.startsWith('FIRST-LINE\n')).toBe(true);
    expect(text.endsWith('LAST-LINE\n')).toBe(true);
    expect(text).toMatch(/execgate cut \d+ bytes from the middle/);
    expect(Buffer.byteLength(text)).toBeLessThan(8 * 1024 + 400);
    const out = structured(result);
    expect(out.truncated).toBe(true);
    expect(out.stdout.startsWith('FIRST-LINE\n')).toBe(true);
    const file = out.full_output_path as string;
    expect(existsSync(file)).toBe(true);
    const full = readFileSync(file, 'utf8');
    expect(full).toContain('LAST-LINE');
    expect(full.length).toBeGreaterThan(300000);
    expect(full).not.toContain(MARKER_PREFIX);
  });

  test('output just under 128 KB comes back whole', async () => {
    const result = await server.bash("head -c 130000 /dev/zero | tr '\\0' y");
    expect(structured(result).truncated).toBe(false);
    expect(structured(result).stdout).toBe('y'.repeat(130000));
  });

  test('output just over 128 KB is cut too, and its full output kept', async () => {
    const result = await server.bash("head -c 133000 /dev/zero | tr '\\0' z; echo; echo tail-end");
    const out = structured(result);
    expect(out.truncated).toBe(true);
    expect(textOf(result).endsWith('tail-end\n')).toBe(true);
    const full = readFileSync(out.full_output_path as string, 'utf8');
    expect(full.startsWith(`${'z'.repeat(133000)}\ntail-end\n`)).toBe(true);
    expect(full).not.toContain(MARKER_PREFIX);
  });

  test('timeouts: 120 s by default, 30 s in mode default, 15 min in mode slow, and timeout wins over mode', async () => {
    const cases: Array<[Record<string, unknown>, number]> = [
      [{}, 120_000],
      [{ mode: 'default' }, 30_000],
      [{ mode: 'slow' }, 900_000],
      [{ mode: 'slow', timeout: 2 }, 2_000],
      [{ timeout: 7 }, 7_000],
    ];
    for (const [extra, timeout] of cases) {
      const command = `echo timeout-case-${timeout}`;
      await server.bash(command, extra);
      const records = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
      const request = records.reverse().find((record) => record.event === 'exec.request' && record.command === command);
      expect(request).toMatchObject({ timeout, actor: expect.stringMatching(/^mcp:stdio-test\/[0-9a-f-]{36}$/) });
    }
  });

  test('the audit log shows the command as given, never the prologue', async () => {
    const log = readFileSync(join(home, 'audit.log'), 'utf8');
    expect(log).toContain('"command":"echo hello"');
    expect(log).not.toContain("2>/dev/null' EXIT");
    expect(log).not.toContain(SECRET);
  });

  test('a policy denial is an isError result with the coded line', async () => {
    const result = await server.bash('rm -rf /nonexistent-execgate-dir');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^EXECGATE_ERR_POLICY_DENIED: .*Removing files is not allowed here/);
  });

  test('invalid arguments are an isError result', async () => {
    const missing = await server.call('bash', {});
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/^EXECGATE_ERR_TOOL_ARGS_INVALID: .*command/);
    const badMode = await server.bash('true', { mode: 'fast' });
    expect(badMode.isError).toBe(true);
  });

  test('a tracked directory that disappears falls back to the starting directory', async () => {
    const doomed = join(tmp.dir, 'doomed');
    mkdirSync(doomed);
    expect(structured(await server.bash(`cd ${doomed}`)).cwd).toBe(realpathSync(doomed));
    await server.bash(`rmdir ${doomed}`);
    const failed = await server.bash('pwd');
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toMatch(/^EXECGATE_ERR_CWD_NOT_FOUND: .*reset to/);
    expect(structured(await server.bash('pwd')).stdout).toBe(`${launch}\n`);
  });

  describe('background processes', () => {
    let id: string;
    let pid: number;

    test('mode background returns the process id and output file at once', async () => {
      const result = await server.bash('echo ready; read a; echo "got $a"; read b; echo "got $b"; sleep 300', { mode: 'background' });
      const out = structured(result);
      expect(out.process_id).toMatch(/^run_/);
      expect(existsSync(out.output_path)).toBe(true);
      expect(textOf(result)).toContain(out.process_id);
      expect(textOf(result)).toContain(out.output_path);
      id = out.process_id;
      pid = out.pid;
      expect(isAlive(pid)).toBe(true);
    });

    test('process_status and process_output page through the output', async () => {
      expect(await waitFor(async () => structured(await server.call('process_output', { id })).text.includes('ready'), 20_000)).toBe(true);
      const status = await server.call('process_status', { id });
      expect(structured(status)).toMatchObject({ id, state: 'running', pid });
      const first = structured(await server.call('process_output', { id, offset: 0, length: 3 }));
      expect(first).toMatchObject({ text: 'rea', offset: 0, next_offset: 3, eof: false });
      const rest = structured(await server.call('process_output', { id, offset: first.next_offset }));
      expect(rest.text).toBe('dy\n');
    });

    test('process_write answers a read prompt; a secret written is masked in the output', async () => {
      const wrote = await server.call('process_write', { id, data: 'world\n' });
      expect(wrote.isError).toBeFalsy();
      expect(await waitFor(async () => structured(await server.call('process_output', { id })).text.includes('got world'), 20_000)).toBe(true);
      await server.call('process_write', { id, data: '<<secret:mcp-token>>\n' });
      // Masked under the first label the value was registered with (the withheld variable's).
      expect(await waitFor(async () => /got \[REDACTED:[^\]]+\]\n/.test(structured(await server.call('process_output', { id })).text), 20_000)).toBe(true);
      expect(server.seen.join('\n')).not.toContain(SECRET);
    });

    test('process_list shows the session\'s processes', async () => {
      const list = structured(await server.call('process_list'));
      expect(list.processes.map((p: { id: string }) => p.id)).toContain(id);
    });

    test('another session cannot see or touch them', async () => {
      const other = await startStdio({ args: ['--workdir', '/tmp'], cwd: launch, env: serverEnv(home) });
      try {
        expect(structured(await other.bash('pwd')).stdout).toBe('/tmp\n');
        for (const [name, args] of [['process_status', { id }], ['process_output', { id }], ['process_kill', { id }], ['process_write', { id, data: 'x\n' }]] as const) {
          const result = await other.call(name, args);
          expect(result.isError).toBe(true);
          expect(textOf(result)).toMatch(/^EXECGATE_ERR_BACKGROUND_NOT_FOUND: /);
        }
        expect(structured(await other.call('process_list')).processes).toEqual([]);
      } finally {
        await other.close();
      }
      expect(isAlive(pid)).toBe(true);
    });

    test('a process that ends: process_status can wait for it, process_output reaches eof', async () => {
      const started = structured(await server.bash('sleep 0.2; echo done; exit 3', { mode: 'background' }));
      const status = structured(await server.call('process_status', { id: started.process_id, wait: 10 }));
      expect(status).toMatchObject({ state: 'exited', exit_code: 3 });
      const output = structured(await server.call('process_output', { id: started.process_id }));
      expect(output.eof).toBe(true);
      expect(output.text).toContain('done\n');
      expect(output.text).toContain('exit code 3');
    });

    test('process_kill stops it and its group', async () => {
      const result = await server.call('process_kill', { id });
      expect(structured(result)).toMatchObject({ id, state: 'killed' });
      expect(await waitFor(() => !isGroupAlive(pid), 20_000)).toBe(true);
      const status = await server.call('process_status', { id });
      expect(structured(status).output.text).toContain('got world');
    });
  });
});

describe('execgate mcp options', () => {
  const tmp = makeTempDir('execgate-mcp-opts-');
  afterAll(() => tmp.cleanup());

  test('--no-bash: no bash tool (nor process tools); --tools files offers the file tools', async () => {
    writeFileSync(join(tmp.dir, 'note.txt'), 'file tool content\n');
    // (The state directory apart from the workdir: the file tools, like runs, see it as empty.)
    const server = await startStdio({ args: ['--no-bash', '--tools', 'files', '--workdir', tmp.dir], cwd: tmp.dir, env: serverEnv(join(tmp.dir, 'state')) });
    try {
      const names = (await server.client.listTools()).tools.map((tool) => tool.name);
      expect(names).not.toContain('bash');
      expect(names).not.toContain('process_status');
      expect(names).toEqual(expect.arrayContaining(['read_file', 'write_file', 'list_dir']));
      const read = await server.call('read_file', { path: 'note.txt' });
      expect(read.isError).toBeFalsy();
      expect(textOf(read)).toContain('file tool content');
      const outside = await server.call('read_file', { path: '/etc/passwd' });
      expect(outside.isError).toBe(true);
      expect(textOf(outside)).toMatch(/^EXECGATE_ERR_PATH_OUTSIDE_ROOT: /);
    } finally {
      await server.close();
    }
  });

  test('--disable-tools hides the named tools; an unknown name is a usage error', async () => {
    // The state directory (and the audit log in it) is not the workspace: that refuses the start.
    const server = await startStdio({ args: ['--disable-tools', 'process_write,process_kill'], cwd: tmp.dir, env: serverEnv(tmp.dir, { EXECGATE_HOME: join(tmp.dir, '.execgate') }) });
    try {
      const names = (await server.client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(['bash', 'process_status', 'process_output', 'process_list']);
    } finally {
      await server.close();
    }
    const { spawnSync } = await import('node:child_process');
    const { CLI } = await import('./helpers');
    const refused = spawnSync(process.execPath, [CLI, 'mcp', '--disable-tools', 'nope'], { env: serverEnv(tmp.dir), encoding: 'utf8', input: '' });
    expect(refused.status).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/EXECGATE_ERR_CLI_USAGE: Cannot disable unknown tool `nope`/);
  });

  test('stdout carries the protocol only; closing stdin ends the server promptly', async () => {
    const { spawn } = await import('node:child_process');
    const { CLI } = await import('./helpers');
    const child = spawn(process.execPath, [CLI, 'mcp', '--workdir', tmp.dir], { env: serverEnv(tmp.dir, { EXECGATE_HOME: join(tmp.dir, '.execgate') }), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const send = (message: object): void => { child.stdin.write(`${JSON.stringify(message)}\n`); };
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(await waitFor(() => stdout.includes('"id":1'), 30_000)).toBe(true);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bash', arguments: { command: 'echo to-stdout; echo to-stderr >&2' } } });
    expect(await waitFor(() => stdout.includes('"id":2'), 30_000)).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.stdin.end();
    expect(await exited).toBe(0);
    for (const line of stdout.trim().split('\n')) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    expect(stderr).toContain('execgate mcp: serving on stdio');
  });
});
