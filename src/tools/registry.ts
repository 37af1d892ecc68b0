/*
 * The ToolRegistry: the tools an agent may call, which of them are enabled, and the one place a
 * tool call is run. `execute` never throws: a model gets a string back whatever happened, so a
 * failing tool becomes a message the model can act on instead of ending the conversation.
 */
import { ExecgateError, isExecgateError } from '../errors';
import type { ChatTool, ExecutableTool } from './types';
import { ArgumentValidator } from './validate';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * How {@link ToolRegistry.register} registers a tool: whether it can be executed right away.
 */
export interface RegisterOptions {
  /** Whether the tool can be executed right away (default true). */
  enabled?: boolean;
}

/**
 * The tools an agent may call: each registered by name with its JSON Schema, enabled or disabled,
 * executed by name with checked arguments.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, ExecutableTool>();
  readonly #disabled = new Set<string>();
  readonly #validator = new ArgumentValidator();

  /** Adds a tool; a name already registered is an error. */
  register(tool: ExecutableTool, options: RegisterOptions = {}): this {
    validateTool(tool);
    if (this.#tools.has(tool.name)) {
      throw new ExecgateError('EXECGATE_ERR_TOOL_DUPLICATE', `A tool named \`${tool.name}\` is already registered.`, { tool: tool.name });
    }
    this.#tools.set(tool.name, tool);
    if (options.enabled === false) this.#disabled.add(tool.name);
    return this;
  }

  enableTool(name: string): void {
    this.#require(name);
    this.#disabled.delete(name);
  }

  disableTool(name: string): void {
    this.#require(name);
    this.#disabled.add(name);
  }

  /** Every registered name, enabled or not, in registration order. */
  getToolNames(): string[] {
    return [...this.#tools.keys()];
  }

  hasTool(name: string): boolean {
    return this.#tools.has(name);
  }

  /** False for a disabled tool and for a name that is not registered. */
  isToolEnabled(name: string): boolean {
    return this.#tools.has(name) && !this.#disabled.has(name);
  }

  getTool(name: string): ExecutableTool | undefined {
    return this.#tools.get(name);
  }

  /** The schemas of the enabled tools, in registration order: what a model is offered. */
  getEnabledSchemas(): ChatTool[] {
    const schemas: ChatTool[] = [];
    for (const [name, tool] of this.#tools) {
      if (!this.#disabled.has(name)) schemas.push(tool.getSchema());
    }
    return schemas;
  }

  /** Runs a tool call and resolves to its result or to an error string; never rejects. */
  async execute(name: string, args: Record<string, unknown> = {}): Promise<string> {
    const tool = this.#tools.get(name);
    if (!tool) return `Tool not found: ${name}`;
    if (this.#disabled.has(name)) return `Tool not available: ${name}`;
    try {
      this.#validator.validate(name, tool.getSchema().function.parameters, args ?? {});
      const result = await tool.execute(args ?? {});
      return typeof result === 'string' ? result : String(result);
    } catch (error) {
      return `Error executing ${name}: ${describeError(error)}`;
    }
  }

  /** Releases what the tools own (for example a gateway the default run_bash created). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#tools.values()].map(async (tool) => tool.close?.()));
  }

  #require(name: string): void {
    if (!this.#tools.has(name)) {
      throw new ExecgateError(
        'EXECGATE_ERR_TOOL_UNKNOWN',
        `No tool named \`${name}\` is registered. Registered tools: ${this.getToolNames().join(', ') || '(none)'}.`,
        { tool: name },
      );
    }
  }
}

function describeError(error: unknown): string {
  if (isExecgateError(error)) return error.toLine();
  if (error instanceof Error) return error.message;
  return String(error);
}

function validateTool(tool: ExecutableTool): void {
  const name: unknown = tool?.name;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw new ExecgateError(
      'EXECGATE_ERR_TOOL_INVALID',
      'Expected the tool `name` to be 1 to 64 characters of letters, digits, `_` and `-`.',
      { tool: typeof name === 'string' ? name.slice(0, 64) : undefined },
    );
  }
  if (typeof tool.execute !== 'function' || typeof tool.getSchema !== 'function') {
    throw new ExecgateError('EXECGATE_ERR_TOOL_INVALID', `The tool \`${name}\` must have \`getSchema()\` and \`execute(args)\` methods.`, { tool: name });
  }
  const schema = tool.getSchema();
  if (schema?.type !== 'function' || schema.function?.name !== name) {
    throw new ExecgateError(
      'EXECGATE_ERR_TOOL_INVALID',
      `The schema of tool \`${name}\` must be \`{ type: 'function', function: { name: '${name}', ... } }\`, got the name ${JSON.stringify(schema?.function?.name)}.`,
      { tool: name },
    );
  }
  const parameters: unknown = schema.function.parameters;
  if (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters)) {
    throw new ExecgateError('EXECGATE_ERR_TOOL_INVALID', `The \`parameters\` of tool \`${name}\` must be a JSON Schema object.`, { tool: name });
  }
}
