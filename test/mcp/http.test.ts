/*
 * `execgate mcp --http` with the official SDK client over Streamable HTTP, plus raw requests for
 * what a client would never send: no token, a wrong one, a foreign Host or Origin.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { makeTempDir } from '../helpers/tmp';
import { CLI, isAlive, requireBuild, serverEnv, structured, textOf, waitFor } from './helpers';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

interface HttpClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  bash(command: string, extra?: Record<string, unknown>): Promise<CallToolResult>;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}

describe('execgate mcp --http', () => {
  const tmp = makeTempDir('execgate-mcp-http-');
  const home = join(tmp.dir, 'home');
  const workdir = join(tmp.dir, 'work');
  let child: ChildProcessWithoutNullStreams;
  let stderr = '';
  let url: string;
  let port: number;
  let token: string;
  const clients: HttpClient[] = [];

  async function connect(name: string): Promise<HttpClient> {
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(transport);
    await client.listTools();
    const call = async (tool: string, args: Record<string, unknown> = {}): Promise<CallToolResult> =>
      (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
    const connected = { client, transport, call, bash: (command: string, extra: Record<string, unknown> = {}) => call('bash', { command, ...extra }) };
    clients.push(connected);
    return connected;
  }

  beforeAll(async () => {
    requireBuild();
    mkdirSync(home);
    mkdirSync(workdir);
    // No EXECGATE_MCP_TOKEN: the server generates one and prints it once.
    child = spawn(process.execPath, [CLI, 'mcp', '--http', '--port', '0', '--workdir', workdir], { env: serverEnv(home), stdio: 'pipe' });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    const ready = await waitFor(() => /bearer token[^\n]*: (\S+)\n/.test(stderr), 60_000);
    if (!ready) throw new Error(`the server did not start: ${stderr}`);
    url = /listening on (http:\S+)/.exec(stderr)![1]!;
    port = Number(new URL(url).port);
    token = /bearer token[^\n]*: (\S+)\n/.exec(stderr)![1]!;
  });

  afterAll(async () => {
    for (const { client } of clients) await client.close().catch(() => undefined);
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    tmp.cleanup();
  });

  test('listens on loopback at /mcp; the generated token is printed once, to stderr', () => {
    expect(url).toBe(`http://127.0.0.1:${port}/mcp`);
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(stderr.split(token).length - 1).toBe(1);
  });

  test('the basic calls work through the SDK client', async () => {
    const a = await connect('http-a');
    const { tools } = await a.client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('bash');
    expect(tools.find((tool) => tool.name === 'bash')!.description).toContain(`Current working directory: ${workdir}`);
    expect(structured(await a.bash('pwd')).stdout).toBe(`${workdir}\n`);
    const failed = await a.bash('exit 42');
    expect(failed.isError).toBeFalsy();
    expect(structured(failed).exit_code).toBe(42);
    expect(structured(await a.bash('cd /tmp')).cwd).toBe('/tmp');
    expect(structured(await a.bash('pwd')).stdout).toBe('/tmp\n');
  });

  test('two sessions keep separate working directories', async () => {
    const [a] = clients;
    const b = await connect('http-b');
    expect(structured(await b.bash('pwd')).stdout).toBe(`${workdir}\n`);
    expect(structured(await b.bash('cd /usr')).cwd).toBe('/usr');
    expect(structured(await a!.bash('pwd')).stdout).toBe('/tmp\n');
    expect(structured(await b.bash('pwd')).stdout).toBe('/usr\n');
  });

  test('no token and a wrong token get 401', async () => {
    const body = JSON.stringify(INITIALIZE);
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const none = await fetch(url, { method: 'POST', headers, body });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await none.json()) as { error: { message: string } }).error.message).toMatch(/^EXECGATE_ERR_MCP_UNAUTHORIZED: /);
    const wrong = await fetch(url, { method: 'POST', headers: { ...headers, Authorization: `Bearer ${token.slice(0, -1)}x` }, body });
    expect(wrong.status).toBe(401);
    const scheme = await fetch(url, { method: 'POST', headers: { ...headers, Authorization: `Basic ${token}` }, body });
    expect(scheme.status).toBe(401);
    const good = await fetch(url, { method: 'POST', headers: { ...headers, Authorization: `Bearer ${token}` }, body });
    expect(good.status).toBe(200);
    const session = good.headers.get('mcp-session-id');
    await good.body?.cancel();
    if (session) await fetch(url, { method: 'DELETE', headers: { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session } });
  });

  function rawRequest(headers: Record<string, string>): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const body = JSON.stringify(INITIALIZE);
      const req = request({
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        setHost: false,
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`, ...headers },
      }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => { text += chunk.toString(); });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  test('a foreign Host header is refused, even with the right token (DNS rebinding)', async () => {
    const rebound = await rawRequest({ Host: `evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.message).toMatch(/^EXECGATE_ERR_MCP_HOST_REFUSED: /);
    expect((await rawRequest({ Host: `127.0.0.1:${port + 1}` })).status).toBe(403);
    // No Host at all: node's HTTP parser already answers 400 (HTTP/1.1 requires one).
    expect([400, 403]).toContain((await rawRequest({})).status);
  });

  test('a foreign Origin is refused; the server\'s own origin is fine', async () => {
    const foreign = await rawRequest({ Host: `localhost:${port}`, Origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    const own = await rawRequest({ Host: `localhost:${port}`, Origin: `http://localhost:${port}` });
    expect(own.status).toBe(200);
  });

  test('an unknown session id gets 404', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`, 'Mcp-Session-Id': 'no-such-session' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^EXECGATE_ERR_MCP_SESSION_NOT_FOUND: /);
  });

  test('sessions cannot see each other\'s processes; closing a session kills its background processes', async () => {
    const [a, b] = clients;
    const startedA = structured(await a!.bash('sleep 300', { mode: 'background' }));
    const startedB = structured(await b!.bash('sleep 300', { mode: 'background' }));
    expect(isAlive(startedA.pid)).toBe(true);
    expect(isAlive(startedB.pid)).toBe(true);
    const peek = await b!.call('process_status', { id: startedA.process_id });
    expect(peek.isError).toBe(true);
    expect(textOf(peek)).toMatch(/^EXECGATE_ERR_BACKGROUND_NOT_FOUND: /);
    expect(structured(await b!.call('process_list')).processes.map((p: { id: string }) => p.id)).toEqual([startedB.process_id]);

    // DELETE ends the session: its process is killed before the answer; the other one runs on.
    await a!.transport.terminateSession();
    expect(await waitFor(() => !isAlive(startedA.pid), 20_000)).toBe(true);
    expect(isAlive(startedB.pid)).toBe(true);
    const kill = await b!.call('process_kill', { id: startedB.process_id });
    expect(structured(kill).state).toBe('killed');
  });

  test('SIGTERM closes the server and kills every background process', async () => {
    const [, b] = clients;
    const started = structured(await b!.bash('sleep 300', { mode: 'background' }));
    expect(isAlive(started.pid)).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await waitFor(() => !isAlive(started.pid), 20_000)).toBe(true);
  });
});

describe('execgate mcp --http refuses to start unsafely', () => {
  const tmp = makeTempDir('execgate-mcp-http-refuse-');
  afterAll(() => tmp.cleanup());

  function run(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
    requireBuild();
    const result = spawnSync(process.execPath, [CLI, 'mcp', '--http', ...args], { env: serverEnv(tmp.dir, env), encoding: 'utf8', timeout: 10_000 });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  test('a non-loopback address needs --allow-remote', () => {
    const refused = run(['--host', '0.0.0.0', '--port', '0']);
    expect(refused.status).toBe(125);
    expect(refused.stderr).toMatch(/EXECGATE_ERR_MCP_REMOTE_REFUSED: /);
  });

  test('a short EXECGATE_MCP_TOKEN is refused', () => {
    const refused = run(['--port', '0'], { EXECGATE_MCP_TOKEN: 'tinytok9' });
    expect(refused.status).toBe(125);
    expect(refused.stderr).toMatch(/EXECGATE_ERR_MCP_TOKEN_INVALID: /);
    expect(refused.stderr).not.toContain('tinytok9');
  });
});
