/*
 * The argument validators the build compiles for execgate's own tools (scripts/tool-validators.js)
 * against ajv compiling the same schema at run time (what a caller's tool gets): the same verdict
 * and the same errors for any arguments, and the first validation of an own tool loads no ajv
 * compiler.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import { BashTool } from '../../src/mcp/tools/bash';
import { createProcessTools } from '../../src/mcp/tools/process';
import { createDefaultToolRegistry } from '../../src/tools/defaults';
import { ArgumentValidator, getPrecompiledValidator } from '../../src/tools/validate';
import type { JsonSchema } from '../../src/tools/types';

const ROOT = join(__dirname, '..', '..');

/** The schemas of execgate's own tools, as the MCP server and the registry hold them. */
function ownSchemas(): Array<[string, JsonSchema]> {
  const schemas: Array<[string, JsonSchema]> = [['bash', new BashTool().inputSchema as JsonSchema]];
  for (const tool of createProcessTools()) schemas.push([tool.name, tool.inputSchema as JsonSchema]);
  const nowhere = join(ROOT, 'dist', 'no-state');
  const registry = createDefaultToolRegistry({ gateway: { home: nowhere } as never, workdir: ROOT, stateDir: nowhere });
  for (const name of registry.getToolNames()) {
    const parameters = registry.getTool(name)!.getSchema().function.parameters as JsonSchema;
    schemas.push([name, parameters], [`${name} (MCP)`, { ...parameters, type: 'object' }]);
  }
  return schemas;
}

const SCHEMAS = ownSchemas();
const ajv = new Ajv({ allErrors: true, strict: false });
const runtime = new Map(SCHEMAS.map(([name, schema]) => [name, ajv.compile(schema)]));

function outcome(validate: ValidateFunction, args: unknown): unknown {
  const ok = validate(args);
  return { ok, errors: (validate.errors ?? []).map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message })) };
}

/** Arguments near a schema: its own property names and others, values of every kind. */
function argsFor(schema: JsonSchema): fc.Arbitrary<unknown> {
  const known = Object.keys((schema.properties ?? {}) as object);
  const key = known.length > 0 ? fc.oneof(fc.constantFrom(...known), fc.string({ maxLength: 8 })) : fc.string({ maxLength: 8 });
  const value = fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: false }), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }), fc.constantFrom('', 'default', 'slow', 'background', 'sync', 'pty', 'utf8', 'base64'));
  return fc.oneof({ weight: 5, arbitrary: fc.dictionary(key, value, { maxKeys: 6 }) }, { weight: 1, arbitrary: fc.anything() });
}

describe('own tools: validators compiled by the build', () => {
  test.each(SCHEMAS)('%s has one', (_name, schema) => {
    expect(typeof getPrecompiledValidator(schema)).toBe('function');
  });

  test.each(SCHEMAS)('%s: the same verdict and errors as ajv compiling it at run time, for any arguments', (name, schema) => {
    const built = getPrecompiledValidator(schema)!;
    const compiled = runtime.get(name)!;
    fc.assert(fc.property(argsFor(schema), (args) => {
      expect(outcome(built, args)).toEqual(outcome(compiled, args));
    }), { numRuns: 300 });
  });

  test('a schema the build did not see (a caller\'s tool, or a changed one) has none, and is still validated', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'], additionalProperties: false };
    expect(getPrecompiledValidator(schema)).toBeUndefined();
    const changed = { ...(SCHEMAS[0][1]), required: ['command', 'timeout'] };
    expect(getPrecompiledValidator(changed)).toBeUndefined();
    const validator = new ArgumentValidator();
    expect(() => validator.validate('mine', schema, { n: 2 })).not.toThrow();
    expect(() => validator.validate('mine', schema, { n: 0, x: 1 })).toThrow(expect.objectContaining({
      code: 'EXECGATE_ERR_TOOL_ARGS_INVALID',
      message: 'Invalid arguments for mine: unknown argument `x`; `n` must be >= 1.',
    }));
    expect(() => validator.validate('bash-changed', changed, { command: 'ls' })).toThrow(/`\.?timeout` is required/);
  });

  test('the first validation of an own tool loads no ajv compiler; a caller\'s tool loads it', () => {
    const script = `
      const { ArgumentValidator } = require('./dist/tools/validate.js');
      const { BashTool } = require('./dist/mcp/tools/bash.js');
      const loaded = () => Object.keys(require.cache).some((k) => k.endsWith('/ajv/dist/ajv.js'));
      const v = new ArgumentValidator();
      v.validate('bash', new BashTool().inputSchema, { command: 'ls' });
      let refused = '';
      try { v.validate('bash', new BashTool().inputSchema, { command: 1 }); } catch (e) { refused = e.code; }
      const own = loaded();
      v.validate('mine', { type: 'object', properties: { n: { type: 'integer' } } }, { n: 1 });
      console.log(JSON.stringify({ own, refused, caller: loaded() }));`;
    const child = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({ own: false, refused: 'EXECGATE_ERR_TOOL_ARGS_INVALID', caller: true });
  });
});
