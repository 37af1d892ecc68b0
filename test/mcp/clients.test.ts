/*
 * What clients nobody here wrote run into, with the official SDK client and a second client
 * library (@ai-sdk/mcp): progress that keeps a short client timeout waiting, 413 for an
 * oversized body, the deprecated HTTP+SSE transport, the 401 and OAuth-probe answers, bash line
 * numbers, and idle sessions reaped with their background processes.
 *
 * The server runs in this process (serveHttp) on 127.0.0.1 with a short progress interval.
 * Orderings are proven with marker files: a command waits for a file the test creates only
 * once the situation under test has happened.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMCPClient, type MCPClient } from '@ai-sdk/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { LoggingMessageNotificationSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { createGateway, type Gateway } from '../../src/gateway';
import { createMcpServer, serveHttp, type ExecgateMcpServer, type McpHttpServer } from '../../src/mcp';
import { makeTempDir, UNSANDBOXED_POLICY, UNSANDBOXED_POLICY_FILE } from '../helpers/tmp';
import { CLI, isAlive, requireBuild, serverEnv, startStdio, structured, textOf, waitFor } from './helpers';

const SECRET = 'clients-secret-Hq4pW8sN2vKe';
const TOKEN = 'test-token-0123456789abcdefXYZ';
const PROGRESS_MS = 100;
/** The request timeout of the SDK client in the progress test (its default is 60 s). */
const CLIENT_TIMEOUT = 2500;

describe('MCP clients: SDK and @ai-sdk/mcp', () => {
  const tmp = makeTempDir('execgate-mcp-clients-');
  const home = join(tmp.dir, 'home');
  const workdir = join(tmp.dir, 'work');
  let gateway: Gateway;
  let mcp: ExecgateMcpServer;
  let http: McpHttpServer;
  const closers: Array<() => Promise<unknown>> = [];

  function headers(token = TOKEN): Record<string, string> {
    return { Authorization: `Bearer ${token}` };
  }

  async function sdkClient(url = http.url, name = 'sdk-test'): Promise<Client> {
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: headers() } }));
    closers.push(() => client.close());
    return client;
  }

  async function aiClient(url = http.url, type: 'http' | 'sse' = 'http'): Promise<MCPClient> {
    const client = await createMCPClient({ transport: { type, url, headers: headers() }, name: 'ai-sdk-test' });
    closers.push(() => client.close());
    return client;
  }

  /** @ai-sdk/mcp's tool call, as an agent loop would make it. */
  async function aiBash(client: MCPClient, command: string, extra: Record<string, unknown> = {}): Promise<CallToolResult> {
    const tools = await client.tools();
    const bash = tools.bash as unknown as { execute: (args: unknown, options: unknown) => Promise<CallToolResult> };
    return bash.execute({ command, ...extra }, { toolCallId: 'call-1', messages: [] });
  }

  function marker(name: string): string {
    return join(tmp.dir, name);
  }

  beforeAll(async () => {
    mkdirSync(home);
    mkdirSync(workdir);
    // Commands here wait on marker files beside the work directory and print their pids for the
    // host to follow: the unsandboxed path (test/sandbox/mcp.test.ts covers MCP in the sandbox).
    gateway = createGateway({ policy: UNSANDBOXED_POLICY, home, cwd: workdir, env: serverEnv(home, { EXECGATE_SECRET_MCP_TOKEN: SECRET }) });
    mcp = createMcpServer({ gateway, workdir, progressInterval: PROGRESS_MS });
    http = await serveHttp(mcp, { port: 0, token: TOKEN, maxBodyBytes: 256 * 1024, sessionIdleTimeout: 0 });
  });

  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await http?.close();
    await gateway?.close();
    tmp.cleanup();
  });

  describe('progress for long calls', () => {
    test('SDK client with a short timeout and resetTimeoutOnProgress gets the result of a command that outlives it', async () => {
      const client = await sdkClient();
      const logged: unknown[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => { logged.push(notification.params); });
      const release = marker('progress-release');
      const progress: Progress[] = [];
      const started = Date.now();
      let releasedAt = 0;
      const call = client.callTool(
        { name: 'bash', arguments: { command: `echo step-1; echo "key=<<secret:mcp-token>>"; while [ ! -e ${release} ]; do sleep 0.05; done; echo done` } },
        undefined,
        {
          // 25 progress intervals: a loaded machine may delay a notification, not by that much.
          timeout: CLIENT_TIMEOUT,
          resetTimeoutOnProgress: true,
          onprogress: (update) => {
            progress.push(update);
            // Release the command only once it has run for twice the client's timeout.
            if (releasedAt === 0 && Date.now() - started > 2 * CLIENT_TIMEOUT) {
              releasedAt = progress.length;
              writeFileSync(release, '');
            }
          },
        },
      ) as Promise<CallToolResult>;
      const result = await call;
      expect(result.isError).toBeFalsy();
      expect(structured(result).stdout).toBe('step-1\nkey=[REDACTED:secret:mcp-token]\ndone\n');
      expect(releasedAt).toBeGreaterThan(0);
      // Strictly increasing progress values, messages with what was seen, never the secret.
      for (let index = 1; index < progress.length; index += 1) expect(progress[index]!.progress).toBeGreaterThan(progress[index - 1]!.progress);
      const messages = progress.map((update) => update.message ?? '');
      expect(messages.some((message) => /bytes, 2 lines of output; last: key=\[REDACTED:secret:mcp-token\]/.test(message))).toBe(true);
      expect(JSON.stringify(progress)).not.toContain(SECRET);
      expect(JSON.stringify(progress)).not.toContain('EXECGATE_CWD');
      // This client did not ask for log messages.
      expect(logged).toEqual([]);
    });

    test('a client that set a log level gets the same text as notifications/message (no progressToken needed)', async () => {
      const client = await sdkClient();
      const logged: Array<{ level: string; logger?: string; data: unknown }> = [];
      const release = marker('log-release');
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
        logged.push(notification.params);
        if (logged.length === 3) writeFileSync(release, '');
      });
      await client.setLoggingLevel('info');
      const result = (await client.callTool({ name: 'bash', arguments: { command: `echo logged-line; while [ ! -e ${release} ]; do sleep 0.05; done` } })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(logged.length).toBeGreaterThanOrEqual(3);
      expect(logged[2]).toEqual({ level: 'info', logger: 'execgate', data: expect.stringMatching(/^bash running for \d+ s; 12 bytes, 1 line of output; last: logged-line$/) });
    });

    test('control: the same client without resetTimeoutOnProgress gives up at its timeout (and the command is cancelled)', async () => {
      const client = await sdkClient();
      const release = marker('control-release');
      const pidFile = marker('control-pid');
      const call = client.callTool(
        { name: 'bash', arguments: { command: `echo $$ > ${pidFile}; while [ ! -e ${release} ]; do sleep 0.05; done` } },
        undefined,
        // Long enough for the server to have started the shell on a loaded machine (the test
        // follows its pid): a cancel that came first would leave no pid to follow.
        { timeout: 3000, onprogress: () => undefined },
      );
      await expect(call).rejects.toThrow(/timed out/i);
      // The SDK sends notifications/cancelled on timeout: the server stops the command.
      // Created by the shell before `echo` writes to it: wait for the whole line.
      expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 30_000)).toBe(true);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      expect(await waitFor(() => !isAlive(pid), 30_000)).toBe(true);
      writeFileSync(release, '');
    });

    test('stdio (`execgate mcp --progress-interval 0.1`): progress arrives while the command runs', async () => {
      const server = await startStdio({ args: ['--workdir', workdir, '--progress-interval', '0.1'], cwd: workdir, env: serverEnv(join(tmp.dir, 'stdio-home'), { EXECGATE_POLICY: UNSANDBOXED_POLICY_FILE }) });
      closers.push(() => server.close());
      const release = marker('stdio-release');
      const messages: string[] = [];
      const showsOutput = /^bash running for \d+ s; 8 bytes, 1 line of output; last: waiting$/;
      let releasedAt = -1;
      const result = (await server.client.callTool({ name: 'bash', arguments: { command: `echo waiting; while [ ! -e ${release} ]; do sleep 0.05; done; echo released` } }, undefined, {
        onprogress: (update) => {
          messages.push(update.message ?? '');
          // Released by the third notification or a later one that shows the output read so far
          // (on a loaded machine the first ones can come before the output is read): the command
          // cannot end before progress came.
          if (releasedAt < 0 && messages.length >= 3 && showsOutput.test(update.message ?? '')) {
            releasedAt = messages.length - 1;
            writeFileSync(release, '');
          }
        },
      })) as CallToolResult;
      expect(structured(result).stdout).toBe('waiting\nreleased\n');
      expect(releasedAt).toBeGreaterThanOrEqual(2);
      expect(messages[releasedAt]).toMatch(showsOutput);
    });

    test('a secret written in two halves, with progress sent in between, shows in no notification', async () => {
      const client = await sdkClient();
      const half = marker('secret-half');
      const messages: string[] = [];
      const beforeRest: string[] = [];
      const firstHalf = SECRET.slice(0, 10);
      const secondHalf = SECRET.slice(10);
      const result = (await client.callTool({
        name: 'bash',
        arguments: { command: `printf 'line one\\nkey=%s' ${firstHalf}; while [ ! -e ${half} ]; do sleep 0.05; done; printf '%s\\n' ${secondHalf}` },
      }, undefined, {
        timeout: 30_000,
        onprogress: (update) => {
          const message = update.message ?? '';
          messages.push(message);
          // Two notifications that saw output while only the first half was written, then the rest.
          if (/; last: /.test(message)) beforeRest.push(message);
          if (beforeRest.length === 2) writeFileSync(half, '');
        },
      })) as CallToolResult;
      // The value is known to the gateway (it is in the environment it resolves secrets from).
      expect(structured(result).stdout).toMatch(/^line one\nkey=\[REDACTED:[^\]]+\]\n$/);
      // The held-back half is not shown: the partial line is `key=` at most.
      for (const message of beforeRest.slice(0, 2)) expect(message).toMatch(/; last: (line one|key=)$/);
      for (const message of messages) expect(message).not.toContain(firstHalf);
    });

    test('process_status with wait sends progress too', async () => {
      const client = await sdkClient();
      const release = marker('wait-release');
      const started = (await client.callTool({ name: 'bash', arguments: { command: `while [ ! -e ${release} ]; do sleep 0.05; done`, mode: 'background' } })) as CallToolResult;
      const id = structured(started).process_id as string;
      const messages: string[] = [];
      const result = (await client.callTool({ name: 'process_status', arguments: { id, wait: 30 } }, undefined, {
        timeout: 20_000,
        onprogress: (update) => {
          messages.push(update.message ?? '');
          if (messages.length === 3) writeFileSync(release, '');
        },
      })) as CallToolResult;
      expect(structured(result).state).toBe('exited');
      expect(messages.slice(0, 3).every((message) => message.startsWith(`waiting for ${id} to end for`))).toBe(true);
    });

    test('@ai-sdk/mcp (no progress support, no default request timeout) gets the result of a call spanning many progress intervals', async () => {
      const client = await aiClient();
      const release = marker('ai-release');
      const timer = setTimeout(() => writeFileSync(release, ''), PROGRESS_MS * 10);
      const result = await aiBash(client, `while [ ! -e ${release} ]; do sleep 0.05; done; echo ai-done`);
      clearTimeout(timer);
      expect(structured(result).stdout).toBe('ai-done\n');
    });
  });

  describe('413 for an oversized request', () => {
    test('SDK client: a call over the limit is refused with 413 and the coded message; the session goes on', async () => {
      const client = await sdkClient();
      const call = client.callTool({ name: 'bash', arguments: { command: `echo ${'x'.repeat(300 * 1024)}` } });
      await expect(call).rejects.toMatchObject({ code: 413, message: expect.stringMatching(/EXECGATE_ERR_MCP_REQUEST_TOO_LARGE: .*at most 262144/) });
      const after = (await client.callTool({ name: 'bash', arguments: { command: 'echo still-here' } })) as CallToolResult;
      expect(structured(after).stdout).toBe('still-here\n');
    });

    test('raw: a 5 MB body gets a 413 JSON-RPC error, not a reset connection', async () => {
      const response = await fetch(http.url, {
        method: 'POST',
        headers: { ...headers(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'bash', arguments: { command: 'x'.repeat(5 * 1024 * 1024) } } }),
      });
      expect(response.status).toBe(413);
      const body = (await response.json()) as { jsonrpc: string; error: { code: number; message: string } };
      expect(body.jsonrpc).toBe('2.0');
      expect(body.error.code).toBe(-32600);
      expect(body.error.message).toMatch(/^EXECGATE_ERR_MCP_REQUEST_TOO_LARGE: /);
    });

    test('@ai-sdk/mcp: the oversized call rejects with the coded message', async () => {
      const client = await aiClient();
      await expect(aiBash(client, `echo ${'y'.repeat(300 * 1024)}`)).rejects.toThrow(/EXECGATE_ERR_MCP_REQUEST_TOO_LARGE|413/);
    });
  });

  describe('the deprecated HTTP+SSE transport', () => {
    test.each([['/mcp'], ['/sse']])('SDK SSEClientTransport at %s connects and runs a command', async (path) => {
      const url = new URL(http.url);
      url.pathname = path;
      const client = new Client({ name: 'sdk-legacy', version: '1.0.0' });
      await client.connect(new SSEClientTransport(url, {
        requestInit: { headers: headers() },
        eventSourceInit: {
          fetch: (input, init) => {
            const sent = new Headers(init?.headers);
            sent.set('Authorization', headers().Authorization);
            return fetch(input, { ...init, headers: sent });
          },
        },
      }));
      closers.push(() => client.close());
      const result = (await client.callTool({ name: 'bash', arguments: { command: 'echo legacy-ok' } })) as CallToolResult;
      expect(structured(result).stdout).toBe('legacy-ok\n');
    });

    test('closing a legacy SSE stream ends its session and kills its background processes', async () => {
      const url = new URL(http.url);
      url.pathname = '/sse';
      const client = new Client({ name: 'sdk-legacy-close', version: '1.0.0' });
      await client.connect(new SSEClientTransport(url, {
        requestInit: { headers: headers() },
        eventSourceInit: {
          fetch: (input, init) => {
            const sent = new Headers(init?.headers);
            sent.set('Authorization', headers().Authorization);
            return fetch(input, { ...init, headers: sent });
          },
        },
      }));
      const started = (await client.callTool({ name: 'bash', arguments: { command: 'sleep 600', mode: 'background' } })) as CallToolResult;
      const { pid } = structured(started) as { pid: number };
      expect(isAlive(pid)).toBe(true);
      const before = mcp.sessionCount;
      await client.close();
      expect(await waitFor(() => !isAlive(pid), 30_000)).toBe(true);
      expect(mcp.sessionCount).toBe(before - 1);
    });

    test('@ai-sdk/mcp in SSE mode connects and runs a command', async () => {
      const client = await aiClient(http.url, 'sse');
      const result = await aiBash(client, 'echo ai-legacy-ok');
      expect(structured(result).stdout).toBe('ai-legacy-ok\n');
    });
  });

  describe('401 and OAuth probes', () => {
    test('raw: 401 names what to send, with no resource_metadata; a wrong token is invalid_token', async () => {
      const none = await fetch(http.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
      expect(none.status).toBe(401);
      const challenge = none.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer realm="execgate", error_description="Send the header Authorization: Bearer <token>/);
      expect(challenge).not.toMatch(/resource_metadata|error="/);
      expect(((await none.json()) as { error: { message: string } }).error.message).toMatch(/^EXECGATE_ERR_MCP_UNAUTHORIZED: No `Authorization` header was sent/);

      const wrong = await fetch(http.url, { method: 'POST', headers: { ...headers('wrong-token-0123456789'), 'Content-Type': 'application/json' }, body: '{}' });
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    });

    test('raw: no OAuth metadata is published; the probed URLs answer with an OAuth error saying what to send', async () => {
      const origin = new URL(http.url).origin;
      for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
        const response = await fetch(`${origin}${path}`);
        expect(response.status).toBe(404);
        expect(((await response.json()) as { error_description: string }).error_description).toMatch(/no OAuth authorization server/);
      }
      const register = await fetch(`${origin}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
      expect(register.status).toBe(400);
      const body = (await register.json()) as { error: string; error_description: string };
      expect(body.error).toBe('invalid_client_metadata');
      expect(body.error_description).toMatch(/Authorization: Bearer <token>.*--header "Authorization: Bearer <token>"/);
    });

    test('SDK client with a wrong token and no auth provider: 401 with the coded message', async () => {
      const client = new Client({ name: 'sdk-wrong', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: headers('wrong-token-0123456789') } });
      await expect(client.connect(transport)).rejects.toMatchObject({ code: 401, message: expect.stringMatching(/EXECGATE_ERR_MCP_UNAUTHORIZED: The bearer token is not the one/) });
    });

    test('SDK client with an OAuth provider (as mcp-remote has): discovery ends at the answer that says which header to send', async () => {
      const provider: OAuthClientProvider = {
        redirectUrl: 'http://127.0.0.1:1/callback',
        clientMetadata: { redirect_uris: ['http://127.0.0.1:1/callback'], client_name: 'probe' },
        clientInformation: () => undefined,
        saveClientInformation: () => undefined,
        tokens: () => undefined,
        saveTokens: () => undefined,
        redirectToAuthorization: () => { throw new Error('no authorization server should be reached'); },
        saveCodeVerifier: () => undefined,
        codeVerifier: () => '',
      };
      const client = new Client({ name: 'sdk-oauth', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(http.url), { authProvider: provider });
      await expect(client.connect(transport)).rejects.toThrow(/execgate has no OAuth authorization server[\s\S]*Authorization: Bearer <token>/);
    });

    test('@ai-sdk/mcp with a wrong token: the error carries the coded message', async () => {
      const attempt = createMCPClient({ transport: { type: 'http', url: http.url, headers: headers('wrong-token-0123456789') } });
      await expect(attempt).rejects.toThrow(/EXECGATE_ERR_MCP_UNAUTHORIZED|401/);
    });
  });

  describe('command-line flags', () => {
    function cli(args: string[]): { status: number | null; stderr: string } {
      requireBuild();
      const run = spawnSync(process.execPath, [CLI, 'mcp', ...args], { env: serverEnv(home), encoding: 'utf8', input: '' });
      return { status: run.status, stderr: run.stderr };
    }

    test.each([
      [['--http', '--max-request-bytes', '12x'], /--max-request-bytes to be an integer of at least 1024, got `12x`/],
      [['--http', '--session-idle-timeout', '-1'], /--session-idle-timeout to be a number of at least 0, got `-1`/],
      [['--progress-interval', '0'], /--progress-interval to be a number of at least 0.01, got `0`/],
      [['--session-idle-timeout', '60'], /apply to --http only/],
      [['--no-legacy-sse'], /apply to --http only/],
    ])('execgate mcp %j is refused with a usage error', (args, message) => {
      const run = cli(args);
      expect(run.status).not.toBe(0);
      expect(run.stderr).toMatch(message);
    });
  });

  describe('mcp-remote (the stdio bridge desktop clients use for HTTP servers)', () => {
    function bridge(token: string): { client: Client; connected: Promise<void>; stderr: () => string } {
      const mcpHome = join(tmp.dir, `mcp-remote-${token.slice(0, 5)}`);
      mkdirSync(mcpHome, { recursive: true });
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [require.resolve('mcp-remote/dist/proxy.js'), http.url, '--header', `Authorization: Bearer ${token}`],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: mcpHome },
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
      const client = new Client({ name: 'via-mcp-remote', version: '1' });
      closers.push(() => client.close());
      return { client, connected: client.connect(transport), stderr: () => stderr };
    }

    test("with the token in --header: tools run, line numbers are the command's own", async () => {
      const { client, connected } = bridge(TOKEN);
      await connected;
      const result = (await client.callTool({ name: 'bash', arguments: { command: 'echo via-mcp-remote; nosuchcmd' } })) as CallToolResult;
      expect(structured(result).stdout).toBe('via-mcp-remote\n');
      expect(structured(result).stderr).toMatch(/line 1: nosuchcmd: command not found/);
    });

    test('with a wrong token: it stops at the answer naming the header to send (no authorization server is looked for past it)', async () => {
      const { connected, stderr } = bridge('wrong-token-0123456789');
      await expect(connected).rejects.toThrow();
      expect(await waitFor(() => /execgate has no OAuth authorization server[\s\S]*Authorization: Bearer <token>/.test(stderr()), 30_000)).toBe(true);
      expect(stderr()).not.toMatch(/HTTP 404/);
    });
  });

  describe("bash's own line numbers match the command", () => {
    test('SDK client: nosuchcmd on line 1 reports line 1, on line 3 line 3; a syntax error does not show the prologue', async () => {
      const client = await sdkClient();
      const first = (await client.callTool({ name: 'bash', arguments: { command: 'nosuchcmd' } })) as CallToolResult;
      expect(structured(first).stderr).toMatch(/line 1: nosuchcmd: command not found/);
      const third = (await client.callTool({ name: 'bash', arguments: { command: 'true\ntrue\nnosuchcmd' } })) as CallToolResult;
      expect(structured(third).stderr).toMatch(/line 3: nosuchcmd: command not found/);
      const lineno = (await client.callTool({ name: 'bash', arguments: { command: 'echo $LINENO\necho $LINENO' } })) as CallToolResult;
      expect(structured(lineno).stdout).toBe('1\n2\n');
      const syntax = (await client.callTool({ name: 'bash', arguments: { command: 'foo(' } })) as CallToolResult;
      expect(structured(syntax).stderr).toMatch(/line 1: `foo\('/);
      expect(textOf(syntax)).not.toMatch(/trap|cwd-marker|EXECGATE_CWD/);
      // The directory is still tracked.
      const moved = (await client.callTool({ name: 'bash', arguments: { command: `cd ${tmp.dir}` } })) as CallToolResult;
      expect(structured(moved).cwd).toBe(tmp.dir);
    });

    test('@ai-sdk/mcp: nosuchcmd on line 1 reports line 1', async () => {
      const client = await aiClient();
      const result = await aiBash(client, 'nosuchcmd');
      expect(structured(result).stderr).toMatch(/line 1: nosuchcmd: command not found/);
    });
  });

  describe('idle sessions are reaped', () => {
    let reapGateway: Gateway;
    let reapServer: McpHttpServer;
    const reaped: Array<{ sessionId: string; killed: string[] }> = [];
    const reapHome = join(tmp.dir, 'reap-home');

    beforeAll(async () => {
      mkdirSync(reapHome);
      reapGateway = createGateway({ policy: UNSANDBOXED_POLICY, home: reapHome, cwd: workdir, env: serverEnv(reapHome) });
      reapServer = await serveHttp(createMcpServer({ gateway: reapGateway, workdir }), {
        port: 0,
        token: TOKEN,
        sessionIdleTimeout: 1500,
        legacySse: false,
        onSessionReaped: (info) => reaped.push(info),
      });
    });

    afterAll(async () => {
      await reapServer?.close();
      await reapGateway?.close();
    });

    async function expectReaped(sessionId: string, processId: string, pid: number): Promise<void> {
      expect(await waitFor(() => reaped.some((entry) => entry.sessionId === sessionId), 20_000)).toBe(true);
      expect(reaped.find((entry) => entry.sessionId === sessionId)!.killed).toEqual([processId]);
      expect(await waitFor(() => !isAlive(pid), 30_000)).toBe(true);
      const audit = readFileSync(join(reapHome, 'audit.log'), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(audit.some((record) => record.event === 'background.kill' && record.runId === processId && String(record.actor).endsWith(`/${sessionId}`))).toBe(true);
      expect(reapServer.sessionIds).not.toContain(sessionId);
    }

    test('SDK client: the session and its background process are gone after the idle time; the next call gets 404', async () => {
      const client = new Client({ name: 'sdk-idle', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(reapServer.url), { requestInit: { headers: headers() } });
      await client.connect(transport);
      closers.push(() => client.close());
      const started = (await client.callTool({ name: 'bash', arguments: { command: 'sleep 600', mode: 'background' } })) as CallToolResult;
      const { process_id: processId, pid } = structured(started) as { process_id: string; pid: number };
      expect(isAlive(pid)).toBe(true);
      await expectReaped(transport.sessionId!, processId, pid);
      await expect(client.callTool({ name: 'bash', arguments: { command: 'true' } })).rejects.toMatchObject({ code: 404, message: expect.stringMatching(/EXECGATE_ERR_MCP_SESSION_NOT_FOUND/) });
    });

    test('a session with a call under way is not reaped', async () => {
      const client = new Client({ name: 'sdk-busy', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(reapServer.url), { requestInit: { headers: headers() } });
      await client.connect(transport);
      closers.push(() => client.close());
      const release = marker('busy-release');
      const running = marker('busy-running');
      const before = reaped.length;
      const call = client.callTool({ name: 'bash', arguments: { command: `touch ${running}; while [ ! -e ${release} ]; do sleep 0.05; done; echo busy-done` } }) as Promise<CallToolResult>;
      expect(await waitFor(() => existsSync(running), 30_000)).toBe(true);
      // A reap pass as if long past the idle time, while the call is under way.
      await reapServer.reapIdle(Date.now() + 60_000);
      writeFileSync(release, '');
      const result = await call;
      expect(structured(result).stdout).toBe('busy-done\n');
      expect(reaped.slice(before).map((entry) => entry.sessionId)).not.toContain(transport.sessionId);
    });

    test('@ai-sdk/mcp: its session and background process are reaped too', async () => {
      const client = await aiClient(reapServer.url);
      const started = await aiBash(client, 'sleep 600', { mode: 'background' });
      const { process_id: processId, pid } = structured(started) as { process_id: string; pid: number };
      const entry = await waitFor(() => reaped.some((item) => item.killed.includes(processId)), 20_000);
      expect(entry).toBe(true);
      const { sessionId } = reaped.find((item) => item.killed.includes(processId))!;
      await expectReaped(sessionId, processId, pid);
    });

    test('with legacy SSE turned off, an event-stream GET gets 405 naming Streamable HTTP', async () => {
      const response = await fetch(reapServer.url, { headers: { ...headers(), Accept: 'text/event-stream' } });
      expect(response.status).toBe(405);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/^EXECGATE_ERR_MCP_TRANSPORT_UNSUPPORTED: This server speaks Streamable HTTP only/);
    });
  });
});
