/*
 * MCP transports under faults, with the SDK's own clients against the built `execgate mcp`:
 *   - stdio: garbage, truncated JSON, batches, an object id and a message of more than 10 MiB
 *     each get the JSON-RPC error the spec defines, the refusal is said on stderr, and the
 *     session goes on;
 *   - a client that goes away mid-call, on stdio (its pipes closed) and on HTTP (its connection
 *     dropped, no DELETE): the command it started is stopped, nothing is left running, the run's
 *     end is recorded and the audit chain verifies.
 */
import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI, serverEnv, startStdio, textOf, waitFor, type StdioServer } from '../mcp/helpers';
import { makeTempDir } from '../helpers/tmp';
import { findProcesses, readAudit, verifyAudit } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let workdir: string;

beforeEach(() => {
  tmp = makeTempDir('execgate-fault-mcp-');
  home = join(tmp.dir, 'home');
  workdir = join(tmp.dir, 'work');
  mkdirSync(home);
  mkdirSync(workdir);
});

afterEach(() => {
  tmp.cleanup();
});

function serverProcess(server: StdioServer): ChildProcess {
  return (server.transport as unknown as { _process: ChildProcess })._process;
}

describe('stdio: malformed input gets JSON-RPC errors and the session goes on', () => {
  // Raw pipes: an SDK client can send none of this, and drops answers whose id is null.
  let child: ChildProcessWithoutNullStreams;
  let stderr = '';
  let buffered = '';
  const seen: Array<Record<string, any>> = [];
  let dir: ReturnType<typeof makeTempDir>;

  beforeAll(() => {
    dir = makeTempDir('execgate-fault-mcp-');
    child = spawn(process.execPath, [CLI, 'mcp'], { cwd: dir.dir, env: serverEnv(join(dir.dir, 'home')), stdio: 'pipe' });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
        seen.push(JSON.parse(buffered.slice(0, newline)) as Record<string, any>);
        buffered = buffered.slice(newline + 1);
      }
    });
  });

  afterAll(async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin.end();
    await exited;
    dir.cleanup();
  });

  /** Send one raw line and wait for the answer it gets. */
  async function send(line: string | Buffer): Promise<Record<string, any>> {
    const before = seen.length;
    await new Promise<void>((resolve) => { if (child.stdin.write(line)) resolve(); else child.stdin.once('drain', () => resolve()); });
    expect(await waitFor(() => seen.length > before, 30_000)).toBe(true);
    return seen[before]!;
  }

  test.each([
    ['garbage', 'garbage{\n', -32700],
    ['truncated JSON', '{"jsonrpc":"2.0","id":1,"method":"ping"\n', -32700],
    ['an object id', '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n', -32600],
    ['no jsonrpc member', '{"id":5,"method":"ping"}\n', -32600],
    ['an empty batch', '[]\n', -32600],
  ])('%s gets its JSON-RPC error, with id null', async (_name, line, code) => {
    const answer = await send(line);
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: null, error: { code } });
  });

  test('a batch: one answer, an error for each request in it, none for its notification', async () => {
    const answer = await send('[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]\n');
    expect(Array.isArray(answer)).toBe(true);
    expect((answer as unknown as Array<Record<string, any>>).map((message) => [message.id, message.error?.code])).toEqual([['b1', -32600], ['b2', -32600]]);
  });

  test('a message of more than 10 MiB: refused under its id without being read whole; the session goes on', async () => {
    const big = Buffer.concat([
      Buffer.from('{"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo '),
      Buffer.alloc(11 * 1024 * 1024, 0x61),
      Buffer.from('"}},"jsonrpc":"2.0","id":"huge-1"}\n'),
    ]);
    const answer = await send(big);
    expect(answer).toMatchObject({ id: 'huge-1', error: { code: -32600, message: expect.stringMatching(/^EXECGATE_ERR_MCP_MESSAGE_TOO_LARGE: /) } });
    expect(await waitFor(() => /refused a message of \d+ bytes/.test(stderr), 10_000)).toBe(true);
    expect(stderr).not.toContain('aaaaaaaaaaaaaaaaaaaa');
    const init = await send(`${JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`);
    expect(init).toMatchObject({ id: 'init', result: { serverInfo: expect.anything() } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const call = await send(`${JSON.stringify({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'bash', arguments: { command: 'echo still here' } } })}\n`);
    expect(call.result.content[0].text).toBe('still here\n');
  });

  test('every refusal was said on stderr, none of the content', () => {
    expect(stderr).toMatch(/refused a line that is not JSON/);
    expect(stderr).toMatch(/refused a batch of 3 messages/);
    expect(stderr).not.toContain('garbage');
  });
});

test('stdio: a client that goes away mid-call: its command is stopped, its end recorded, the server says why it stops', async () => {
  const marker = `fault-marker-${randomBytes(6).toString('hex')}`;
  const server = await startStdio({ cwd: workdir, env: serverEnv(home) });
  const child = serverProcess(server);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void server.bash(`sleep 120; echo ${marker}`).catch(() => undefined);
  expect(await waitFor(() => findProcesses(marker).length > 0, 30_000)).toBe(true);
  // The client dies: its ends of the pipes close, no shutdown is said.
  child.stdin!.destroy();
  child.stdout!.destroy();
  await exited;
  expect(await waitFor(() => findProcesses(marker).length === 0, 15_000)).toBe(true);
  expect(server.stderr()).toMatch(/stopping: the client closed its end \(stdin\)/);
  const finished = readAudit(home).filter((record) => record.event === 'exec.finished' && String(record.command).includes(marker));
  expect(finished).toHaveLength(1);
  expect(finished[0]).toMatchObject({ killed: true });
  expect(verifyAudit(home, workdir).ok).toBe(true);
});

test('HTTP: a client whose connection drops mid-call (no DELETE): its command is stopped, the server serves on', async () => {
  const marker = `fault-marker-${randomBytes(6).toString('hex')}`;
  const token = randomBytes(24).toString('hex');
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [CLI, 'mcp', '--http', '--port', '0', '--workdir', workdir], {
    env: serverEnv(home, { EXECGATE_MCP_TOKEN: token }),
    stdio: 'pipe',
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
  const client = new Client({ name: 'fault-test', version: '1.0.0' });
  try {
    expect(await waitFor(() => /listening on (http:\S+)/.test(stderr), 60_000)).toBe(true);
    const url = new URL(/listening on (http:\S+)/.exec(stderr)![1]!);
    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await client.connect(transport);
    // The call on a connection of its own, which the client then drops.
    const call = request(url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': transport.sessionId!,
        'Mcp-Protocol-Version': transport.protocolVersion ?? '2025-06-18',
      },
    });
    call.on('error', () => { /* dropped on purpose */ });
    call.end(JSON.stringify({ jsonrpc: '2.0', id: 'dropped-1', method: 'tools/call', params: { name: 'bash', arguments: { command: `sleep 120; echo ${marker}` } } }));
    expect(await waitFor(() => findProcesses(marker).length > 0, 30_000)).toBe(true);
    call.destroy();
    expect(await waitFor(() => findProcesses(marker).length === 0, 15_000)).toBe(true);
    // The session and the server are still there.
    const result = await client.callTool({ name: 'bash', arguments: { command: 'echo served' } });
    expect(textOf(result as never)).toBe('served\n');
    expect(await waitFor(() => readAudit(home).some((record) => record.event === 'exec.finished' && String(record.command).includes(marker)), 15_000)).toBe(true);
    expect(readAudit(home).find((record) => record.event === 'exec.finished' && String(record.command).includes(marker))).toMatchObject({ killed: true });
  } finally {
    await client.close().catch(() => undefined);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  expect(verifyAudit(home, workdir).ok).toBe(true);
});
