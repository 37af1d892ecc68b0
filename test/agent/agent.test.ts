import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from '../../src/agent';
import { createGateway, type Gateway } from '../../src/gateway';
import { createDefaultToolRegistry } from '../../src/tools/defaults';
import { ToolRegistry } from '../../src/tools/registry';
import { defineSchema } from '../../src/tools/types';
import { makeTempDir } from '../helpers/tmp';
import { startFakeLlm, type FakeLlm } from './fake-llm';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
let registry: ToolRegistry;
let llm: FakeLlm | undefined;

const ECHO_HI = { id: 'call_1', name: 'run_bash', arguments: '{"command":"echo hi"}' };
const HI_RESULT = '{"stdout":"hi\\n","stderr":"","exit_code":0}';

beforeEach(() => {
  tmp = makeTempDir('execgate-agent-');
  // (HOME is the runner's: a workspace may not hold the home directory)
  gateway = createGateway({ home: join(tmp.dir, 'home'), env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/root', EXECGATE_KEYRING: 'off' }, cwd: tmp.dir });
  registry = createDefaultToolRegistry({ gateway, workdir: tmp.dir });
});
afterEach(async () => {
  await llm?.close();
  llm = undefined;
  await registry.close();
  await gateway.close();
  tmp.cleanup();
});

function makeAgent(extra: Partial<ConstructorParameters<typeof Agent>[0]> = {}): Agent {
  return new Agent({ model: 'fake-model', baseURL: llm!.baseURL, apiKey: 'test-key-not-real', toolRegistry: registry, clientOptions: { maxRetries: 0 }, ...extra });
}

function sessionFiles(): string[] {
  const dir = join(tmp.dir, 'home', 'sessions');
  return readdirSync(dir).map((name) => join(dir, name));
}

describe('seed 003: Agent delegates tool operations to registry', () => {
  test('Get tools returns enabled schemas', async () => {
    llm = await startFakeLlm([{ content: 'ok' }]);
    const agent = makeAgent();
    expect(agent.getTools()).toEqual(registry.getEnabledSchemas());
    expect(agent.getTools().map((t) => t.function.name)).not.toContain('run_bash');
    registry.enableTool('run_bash');
    registry.disableTool('write_file');
    const names = agent.getTools().map((t) => t.function.name);
    expect(names).toContain('run_bash');
    expect(names).not.toContain('write_file');
    // The model is offered exactly those.
    await agent.chat('hello');
    expect(llm.requests[0]!.body.tools!.map((t) => t.function.name)).toEqual(names);
  });

  test('Chat awaits tool execution via registry', async () => {
    llm = await startFakeLlm([
      { toolCalls: [ECHO_HI] },
      (request) => {
        const tool = request.body.messages.find((m) => m.role === 'tool');
        return { content: `The command printed: ${JSON.parse(String(tool?.content)).stdout.trim()}` };
      },
    ]);
    registry.enableTool('run_bash');
    const agent = makeAgent();
    const execute = jest.spyOn(registry, 'execute');
    await expect(agent.chat('Say hi with a shell')).resolves.toBe('The command printed: hi');

    expect(execute).toHaveBeenCalledWith('run_bash', { command: 'echo hi' });
    expect(llm.requests).toHaveLength(2);
    const first = llm.requests[0]!;
    expect(first.headers.authorization).toBe('Bearer test-key-not-real');
    expect(first.body).toMatchObject({ model: 'fake-model', messages: [{ role: 'user', content: 'Say hi with a shell' }] });
    expect(first.body.stream).toBeFalsy();
    // The second request carries the assistant's tool call and the tool message with the JSON result.
    expect(llm.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'Say hi with a shell' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'run_bash', arguments: '{"command":"echo hi"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: HI_RESULT },
    ]);
    expect(agent.getMessages()).toHaveLength(4);
    expect(agent.getMessages()[3]).toEqual({ role: 'assistant', content: 'The command printed: hi' });
  });

  test('Chat awaits tool execution via registry: a slow async tool result is what the model receives', async () => {
    const slow = new ToolRegistry().register({
      name: 'slow_lookup',
      getSchema: () => defineSchema('slow_lookup', 'Looks something up slowly.', { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }),
      execute: (args) => new Promise((resolve) => setTimeout(() => resolve(`value-of-${String(args.key)}`), 100)),
    });
    llm = await startFakeLlm([
      { toolCalls: [{ id: 'a', name: 'slow_lookup', arguments: '{"key":"x"}' }, { id: 'b', name: 'slow_lookup', arguments: '{"key":"y"}' }] },
      { content: 'done' },
    ]);
    const agent = makeAgent({ toolRegistry: slow });
    await expect(agent.chat('look up x and y')).resolves.toBe('done');
    expect(llm.requests[1]!.body.messages.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 'a', content: 'value-of-x' },
      { role: 'tool', tool_call_id: 'b', content: 'value-of-y' },
    ]);
  });

  test('Stream chat awaits tool execution via registry', async () => {
    llm = await startFakeLlm([
      {
        // Two tool calls, interleaved, each split across chunks: id and name first, arguments in pieces.
        chunks: [
          { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'run_bash', arguments: '' } }] },
          { tool_calls: [{ index: 0, function: { arguments: '{"comm' } }] },
          { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'list_dir', arguments: '{"pa' } }] },
          { tool_calls: [{ index: 0, function: { arguments: 'and":"echo' } }] },
          { tool_calls: [{ index: 1, function: { arguments: 'th":"."}' } }] },
          { tool_calls: [{ index: 0, function: { arguments: ' hi"}' } }] },
        ],
      },
      { content: 'Streaming answer: the shell said hi.' },
    ]);
    registry.enableTool('run_bash');
    const agent = makeAgent();
    const execute = jest.spyOn(registry, 'execute');
    const deltas: string[] = [];
    const answer = await agent.streamChat('run it', (text) => deltas.push(text));
    expect(answer).toBe('Streaming answer: the shell said hi.');
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(answer);
    expect(execute.mock.calls).toEqual([
      ['run_bash', { command: 'echo hi' }],
      ['list_dir', { path: '.' }],
    ]);
    expect(llm.requests.every((r) => r.body.stream === true)).toBe(true);
    const second = llm.requests[1]!.body.messages;
    expect(second[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'run_bash', arguments: '{"command":"echo hi"}' } },
        { id: 'call_b', type: 'function', function: { name: 'list_dir', arguments: '{"path":"."}' } },
      ],
    });
    expect(second[2]).toEqual({ role: 'tool', tool_call_id: 'call_a', content: HI_RESULT });
    expect(second[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_b' });
    expect(String(second[3]!.content)).toContain('home/');
  });

  test('Save context is async', async () => {
    llm = await startFakeLlm([{ content: 'first answer' }]);
    const agent = makeAgent({ systemPrompt: 'You are terse.' });
    await agent.chat('remember this');
    const execute = jest.spyOn(registry, 'execute');
    const pending = agent.saveContext('before a risky refactor');
    expect(pending).toBeInstanceOf(Promise);
    const result = await pending;
    expect(execute).toHaveBeenCalledWith('save_session_context', { reason: 'before a risky refactor' });
    const [file] = sessionFiles();
    expect(result).toBe(`Session context saved to ${file}`);
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    expect(statSync(join(tmp.dir, 'home', 'sessions')).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(readFileSync(file!, 'utf8'));
    expect(saved).toMatchObject({
      reason: 'before a risky refactor',
      context: {
        model: 'fake-model',
        baseURL: llm.baseURL,
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'remember this' },
          { role: 'assistant', content: 'first answer' },
        ],
      },
    });
    expect(new Date(saved.savedAt).getTime()).not.toBeNaN();
  });
});

describe('the tool-calling loop', () => {
  test('the model can call save_session_context itself', async () => {
    llm = await startFakeLlm([
      { toolCalls: [{ id: 's1', name: 'save_session_context', arguments: '{"reason":"checkpoint"}' }] },
      { content: 'saved' },
    ]);
    const agent = makeAgent();
    await expect(agent.chat('save please')).resolves.toBe('saved');
    const saved = JSON.parse(readFileSync(sessionFiles()[0]!, 'utf8'));
    expect(saved.reason).toBe('checkpoint');
    expect(saved.context.messages[0]).toEqual({ role: 'user', content: 'save please' });
  });

  test('a disabled tool, an unknown tool and malformed arguments come back to the model as error strings', async () => {
    llm = await startFakeLlm([
      {
        toolCalls: [
          ECHO_HI,
          { id: 'call_2', name: 'no_such_tool', arguments: '{}' },
          { id: 'call_3', name: 'read_file', arguments: '{"path": ' },
          { id: 'call_4', name: 'read_file', arguments: '{}' },
        ],
      },
      { content: 'I see the errors.' },
    ]);
    const agent = makeAgent();
    await expect(agent.chat('try')).resolves.toBe('I see the errors.');
    const tools = llm.requests[1]!.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(tools[0]).toBe('Tool not available: run_bash');
    expect(tools[1]).toBe('Tool not found: no_such_tool');
    expect(tools[2]).toMatch(/^Error executing read_file: the arguments are not valid JSON/);
    expect(tools[3]).toBe('Error executing read_file: EXECGATE_ERR_TOOL_ARGS_INVALID: Invalid arguments for read_file: `path` is required.');
  });

  test('a model that never stops asking for tools is stopped after maxIterations', async () => {
    llm = await startFakeLlm([{ toolCalls: [{ id: 'loop', name: 'list_dir', arguments: '{"path":"."}' }] }]);
    const agent = makeAgent({ maxIterations: 3 });
    await expect(agent.chat('loop forever')).rejects.toMatchObject({ code: 'EXECGATE_ERR_AGENT_MAX_ITERATIONS' });
    expect(llm.requests).toHaveLength(3);
  });

  test('a conversation continues across chat() calls; reset() starts over', async () => {
    llm = await startFakeLlm([{ content: 'one' }, { content: 'two' }, { content: 'three' }]);
    const agent = makeAgent();
    await agent.chat('first');
    await agent.chat('second');
    expect(llm.requests[1]!.body.messages.map((m) => m.content)).toEqual(['first', 'one', 'second']);
    agent.reset();
    await agent.chat('again');
    expect(llm.requests[2]!.body.messages).toEqual([{ role: 'user', content: 'again' }]);
  });

  test('no tools field is sent when no tool is enabled; request params pass through', async () => {
    llm = await startFakeLlm([{ content: 'plain' }]);
    const agent = makeAgent({ toolRegistry: new ToolRegistry(), requestParams: { temperature: 0.25 } });
    await agent.chat('hi');
    expect(llm.requests[0]!.body).not.toHaveProperty('tools');
    expect(llm.requests[0]!.body.temperature).toBe(0.25);
  });

  test('an endpoint error surfaces as the client error', async () => {
    llm = await startFakeLlm([{ content: 'unused' }]);
    const agent = new Agent({ model: 'm', baseURL: `${llm.baseURL}/wrong`, apiKey: 'k', toolRegistry: registry, clientOptions: { maxRetries: 0 } });
    await expect(agent.chat('hi')).rejects.toMatchObject({ status: 404 });
  });

  test('options are validated', () => {
    expect(() => new Agent({ model: '', apiKey: 'k', toolRegistry: registry })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION' }));
    expect(() => new Agent({ model: 'm', apiKey: 'k', toolRegistry: registry, maxIterations: 0 })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION' }));
  });
});

describe('openai is an optional peer dependency', () => {
  test('without it installed, constructing an Agent is a coded error that says what to install; a given client needs nothing', () => {
    jest.isolateModules(() => {
      jest.doMock('openai', () => {
        const error = new Error("Cannot find module 'openai'") as NodeJS.ErrnoException;
        error.code = 'MODULE_NOT_FOUND';
        throw error;
      });
      const { Agent: Isolated } = require('../../src/agent') as typeof import('../../src/agent');
      expect(() => new Isolated({ model: 'm' })).toThrow(expect.objectContaining({
        code: 'EXECGATE_ERR_AGENT_CLIENT_MISSING',
        message: expect.stringContaining('npm install openai'),
      }));
      const client = { baseURL: 'http://127.0.0.1:1/v1', chat: { completions: { create: async () => { throw new Error('not called'); } } } };
      expect(new Isolated({ model: 'm', client: client as never })).toBeInstanceOf(Isolated);
    });
  });
});
