/*
 * Argument validation against a tool's JSON schema. execgate's own tools (the MCP server's bash
 * and process tools, the default registry's) have validators compiled by the build
 * (scripts/tool-validators.js), found by the schema's JSON text: a schema that is exactly one of
 * those uses it, and ajv's compiler is not loaded for it. Any other schema (a caller's tool) is
 * compiled with ajv, loaded on the first such validation, not when execgate is imported. Each
 * tool's validator is looked up or compiled once.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { ExecgateError } from '../errors';
import type { JsonSchema } from './types';

type AjvInstance = { compile(schema: JsonSchema): ValidateFunction };

/*
 * Found through the package root, as the policy validator is (src/policy/schema.ts): from dist/
 * this is the file beside this one; from src/ (the tests, after `npm run build`) the same file.
 */
export const TOOL_VALIDATORS_PATH = join(__dirname, '..', '..', 'dist', 'tools', 'tool-validators.js');

let precompiled: Readonly<Record<string, ValidateFunction>> | undefined;

/** The key the build gave a schema (scripts/tool-validators.js getSchemaKey: the same text, the same key). */
export function getSchemaKey(schema: JsonSchema): string {
  return `s${createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 32)}`;
}

/** The build's validator for exactly this schema, if it made one. */
export function getPrecompiledValidator(schema: JsonSchema): ValidateFunction | undefined {
  precompiled ??= existsSync(TOOL_VALIDATORS_PATH) ? require(TOOL_VALIDATORS_PATH) as Record<string, ValidateFunction> : {};
  const key = getSchemaKey(schema);
  return Object.hasOwn(precompiled, key) ? precompiled[key] : undefined;
}

export class ArgumentValidator {
  #ajv: AjvInstance | undefined;
  readonly #compiled = new Map<string, ValidateFunction>();

  /** Throws EXECGATE_ERR_TOOL_ARGS_INVALID when `args` does not match `schema`. */
  validate(toolName: string, schema: JsonSchema, args: unknown): void {
    const check = this.#compile(toolName, schema);
    if (check(args)) return;
    const problems = (check.errors ?? []).map(describeProblem);
    throw new ExecgateError(
      'EXECGATE_ERR_TOOL_ARGS_INVALID',
      `Invalid arguments for ${toolName}: ${[...new Set(problems)].join('; ') || 'they do not match the schema'}.`,
      { tool: toolName },
    );
  }

  #compile(toolName: string, schema: JsonSchema): ValidateFunction {
    const known = this.#compiled.get(toolName);
    if (known) return known;
    const built = getPrecompiledValidator(schema);
    if (built) {
      this.#compiled.set(toolName, built);
      return built;
    }
    if (!this.#ajv) {
      const Ajv = (require('ajv') as { default: new (options: object) => AjvInstance }).default;
      // strict: false accepts schemas written for OpenAI that carry keywords ajv does not know.
      this.#ajv = new Ajv({ allErrors: true, strict: false });
    }
    let compiled: ValidateFunction;
    try {
      compiled = this.#ajv.compile(schema);
    } catch (error) {
      throw new ExecgateError(
        'EXECGATE_ERR_TOOL_INVALID',
        `The parameters schema of tool \`${toolName}\` cannot be compiled: ${error instanceof Error ? error.message : String(error)}`,
        { tool: toolName },
        { cause: error },
      );
    }
    this.#compiled.set(toolName, compiled);
    return compiled;
  }
}

function describeProblem(error: ErrorObject): string {
  const where = error.instancePath === '' ? '' : error.instancePath.slice(1).replace(/\//g, '.');
  const subject = where === '' ? 'the arguments' : `\`${where}\``;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `\`${where === '' ? '' : `${where}.`}${String(params.missingProperty)}\` is required`;
    case 'additionalProperties':
      return `unknown argument \`${where === '' ? '' : `${where}.`}${String(params.additionalProperty)}\``;
    case 'type':
      return `${subject} must be ${String(params.type)}`;
    default:
      return `${subject} ${error.message ?? 'is invalid'}`;
  }
}
