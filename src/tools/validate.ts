/*
 * Argument validation against a tool's JSON schema. ajv is loaded on the first validation, not
 * when execgate is imported, and each tool's schema is compiled once.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { ExecgateError } from '../errors';
import type { JsonSchema } from './types';

type AjvInstance = { compile(schema: JsonSchema): ValidateFunction };

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
