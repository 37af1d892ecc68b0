import { ExecgateError } from '../../src/errors';
import { ToolRegistry } from '../../src/tools/registry';
import { defineSchema, type ChatTool, type ExecutableTool } from '../../src/tools/types';

/** A tool whose behaviour each test chooses. */
function makeTool(name: string, run: (args: Record<string, unknown>) => Promise<string> = async () => `${name} ran`): ExecutableTool {
  const schema = defineSchema(name, `The ${name} tool.`, {
    type: 'object',
    properties: { text: { type: 'string' } },
    additionalProperties: false,
  });
  return { name, getSchema: () => schema, execute: run };
}

describe('seed 003: ExecutableTool interface', () => {
  const echo = makeTool('echo', async (args) => `echo: ${String(args.text)}`);

  test('Tool provides schema', () => {
    const schema: ChatTool = echo.getSchema();
    expect(schema).toEqual({
      type: 'function',
      function: { name: 'echo', description: 'The echo tool.', parameters: expect.objectContaining({ type: 'object' }) },
    });
  });

  test('Tool executes with arguments', async () => {
    const pending = echo.execute({ text: 'hi' });
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toBe('echo: hi');
  });

  test('Tool name matches schema', () => {
    expect(echo.getSchema().function.name).toBe(echo.name);
  });

  test('Tool args use unknown type', () => {
    // Compile-time checks (`npm run typecheck`, run by `npm test` before jest, checks this file): the parameter is exactly Record<string, unknown>.
    type Args = Parameters<ExecutableTool['execute']>[0];
    type IsExact<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
    const exact: IsExact<Args, Record<string, unknown>> = true;
    const notAny: IsExact<Args, Record<string, any>> = false;
    expect([exact, notAny]).toEqual([true, false]);
  });
});

describe('seed 003: ToolRegistry provides introspection methods', () => {
  let registry: ToolRegistry;
  beforeEach(() => {
    registry = new ToolRegistry();
    registry.register(makeTool('beta'));
    registry.register(makeTool('alpha'), { enabled: false });
    registry.register(makeTool('gamma'));
  });

  test('Get all tool names', () => {
    expect(registry.getToolNames()).toEqual(['beta', 'alpha', 'gamma']);
  });

  test('Get tool names from empty registry', () => {
    expect(new ToolRegistry().getToolNames()).toEqual([]);
  });

  test('Check existing tool', () => {
    expect(registry.hasTool('alpha')).toBe(true);
  });

  test('Check nonexistent tool', () => {
    expect(registry.hasTool('delta')).toBe(false);
  });

  test('Check enabled tool', () => {
    expect(registry.isToolEnabled('beta')).toBe(true);
  });

  test('Check disabled tool', () => {
    expect(registry.isToolEnabled('alpha')).toBe(false);
    registry.disableTool('beta');
    expect(registry.isToolEnabled('beta')).toBe(false);
  });

  test('Check unregistered tool enabled status', () => {
    expect(registry.isToolEnabled('delta')).toBe(false);
  });

  test('getEnabledSchemas lists the enabled tools in registration order', () => {
    expect(registry.getEnabledSchemas().map((s) => s.function.name)).toEqual(['beta', 'gamma']);
    registry.enableTool('alpha');
    expect(registry.getEnabledSchemas().map((s) => s.function.name)).toEqual(['beta', 'alpha', 'gamma']);
  });

  test('the returned name list is a copy', () => {
    registry.getToolNames().push('injected');
    expect(registry.getToolNames()).toEqual(['beta', 'alpha', 'gamma']);
  });
});

describe('seed 003: ToolRegistry wraps execution in error handling', () => {
  test('Tool executes successfully', async () => {
    const registry = new ToolRegistry().register(makeTool('ok', async (args) => `got ${String(args.text)}`));
    const pending = registry.execute('ok', { text: 'x' });
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toBe('got x');
  });

  test('Tool throws exception', async () => {
    const registry = new ToolRegistry()
      .register(makeTool('sync_throw', () => { throw new Error('boom'); }))
      .register(makeTool('rejects', () => Promise.reject(new Error('async boom'))))
      .register(makeTool('throws_string', async () => { throw 'plain string'; }));
    await expect(registry.execute('sync_throw', {})).resolves.toBe('Error executing sync_throw: boom');
    await expect(registry.execute('rejects', {})).resolves.toBe('Error executing rejects: async boom');
    await expect(registry.execute('throws_string', {})).resolves.toBe('Error executing throws_string: plain string');
  });

  test('Execute nonexistent tool', async () => {
    await expect(new ToolRegistry().execute('missing', {})).resolves.toBe('Tool not found: missing');
  });

  test('a disabled tool is not run: "Tool not available: NAME"', async () => {
    let ran = false;
    const registry = new ToolRegistry().register(makeTool('off', async () => { ran = true; return 'ran'; }), { enabled: false });
    await expect(registry.execute('off', {})).resolves.toBe('Tool not available: off');
    expect(ran).toBe(false);
  });

  test('an ExecgateError shows its coded line', async () => {
    const registry = new ToolRegistry().register(makeTool('coded', async () => {
      throw new ExecgateError('EXECGATE_ERR_CWD_NOT_FOUND', 'The working directory `/nope` does not exist.');
    }));
    await expect(registry.execute('coded', {})).resolves.toBe(
      'Error executing coded: EXECGATE_ERR_CWD_NOT_FOUND: The working directory `/nope` does not exist.',
    );
  });

  test('the tool runs awaited: a slow tool resolves with its own result', async () => {
    const registry = new ToolRegistry().register(makeTool('slow', () => new Promise((r) => setTimeout(() => r('late'), 30))));
    await expect(registry.execute('slow', {})).resolves.toBe('late');
  });
});

describe('argument validation', () => {
  const strict: ExecutableTool = {
    name: 'strict',
    getSchema: () => defineSchema('strict', 'Needs a path.', {
      type: 'object',
      properties: { path: { type: 'string' }, count: { type: 'integer', minimum: 1 } },
      required: ['path'],
      additionalProperties: false,
    }),
    execute: async (args) => `ok ${String(args.path)}`,
  };
  const registry = new ToolRegistry().register(strict);

  test.each([
    [{}, 'Error executing strict: EXECGATE_ERR_TOOL_ARGS_INVALID: Invalid arguments for strict: `path` is required.'],
    [{ path: 3 }, 'Error executing strict: EXECGATE_ERR_TOOL_ARGS_INVALID: Invalid arguments for strict: `path` must be string.'],
    [{ path: 'a', extra: 1 }, 'Error executing strict: EXECGATE_ERR_TOOL_ARGS_INVALID: Invalid arguments for strict: unknown argument `extra`.'],
    [{ path: 'a', count: 0 }, 'Error executing strict: EXECGATE_ERR_TOOL_ARGS_INVALID: Invalid arguments for strict: `count` must be >= 1.'],
  ])('%j is refused before the tool runs', async (args, expected) => {
    await expect(registry.execute('strict', args as Record<string, unknown>)).resolves.toBe(expected);
  });

  test('valid arguments reach the tool', async () => {
    await expect(registry.execute('strict', { path: 'a.txt', count: 2 })).resolves.toBe('ok a.txt');
  });

  test('arguments that are not an object are refused', async () => {
    await expect(registry.execute('strict', [] as unknown as Record<string, unknown>)).resolves.toMatch(/^Error executing strict: EXECGATE_ERR_TOOL_ARGS_INVALID: .*must be object/);
  });

  test('a schema that cannot compile is reported when the tool is called', async () => {
    const broken = new ToolRegistry().register({
      name: 'broken',
      getSchema: () => defineSchema('broken', 'Bad schema.', { type: 'object', properties: { a: { type: 'no-such-type' } } }),
      execute: async () => 'never',
    });
    await expect(broken.execute('broken', {})).resolves.toMatch(/^Error executing broken: EXECGATE_ERR_TOOL_INVALID: The parameters schema of tool `broken` cannot be compiled/);
  });
});

describe('registration', () => {
  test('a duplicate name is an error', () => {
    const registry = new ToolRegistry().register(makeTool('twice'));
    expect(() => registry.register(makeTool('twice'))).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_TOOL_DUPLICATE' }));
    expect(registry.getToolNames()).toEqual(['twice']);
  });

  test('a schema whose name differs from the tool name is refused', () => {
    const tool: ExecutableTool = { name: 'one', getSchema: () => defineSchema('other', 'x', { type: 'object' }), execute: async () => '' };
    expect(() => new ToolRegistry().register(tool)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_TOOL_INVALID' }));
  });

  test.each(['', 'has space', 'x'.repeat(65), 'semi;colon'])('the name %j is refused', (name) => {
    expect(() => new ToolRegistry().register(makeTool(name))).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_TOOL_INVALID' }));
  });

  test('enabling or disabling an unknown tool throws instead of silently doing nothing', () => {
    const registry = new ToolRegistry();
    expect(() => registry.enableTool('run_bsh')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_TOOL_UNKNOWN' }));
    expect(() => registry.disableTool('run_bsh')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_TOOL_UNKNOWN' }));
  });

  test('close() closes every tool that has a close method', async () => {
    const closed: string[] = [];
    const registry = new ToolRegistry()
      .register({ ...makeTool('a'), close: async () => { closed.push('a'); } })
      .register(makeTool('b'))
      .register({ ...makeTool('c'), close: async () => { throw new Error('ignored'); } });
    await registry.close();
    expect(closed).toEqual(['a']);
  });
});

describe('lazy loading', () => {
  test('importing execgate/tools loads neither ajv nor openai; the built-in tools validate with the build\'s validators, and ajv loads at the first validation of a caller\'s tool', async () => {
    const loaded: string[] = [];
    let registry!: ToolRegistry;
    jest.isolateModules(() => {
      jest.doMock('ajv', () => { loaded.push('ajv'); return jest.requireActual('ajv'); });
      jest.doMock('openai', () => { loaded.push('openai'); return jest.requireActual('openai'); });
      const api = require('../../src/tools') as typeof import('../../src/tools');
      expect(loaded).toEqual([]);
      registry = api.createDefaultToolRegistry({ workdir: __dirname });
      expect(loaded).toEqual([]);
    });
    await registry.execute('list_dir', { path: '.' });
    expect(await registry.execute('list_dir', { path: 7 })).toMatch(/EXECGATE_ERR_TOOL_ARGS_INVALID/);
    expect(loaded).toEqual([]);
    registry.register(makeTool('mine'));
    expect(await registry.execute('mine', { text: 'x' })).toBe('mine ran');
    expect(loaded).toEqual(['ajv']);
    await registry.close();
  });
});
