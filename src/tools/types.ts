/*
 * The shapes a tool is made of. `ChatTool` is the OpenAI-style function schema an LLM sees;
 * `ExecutableTool` bundles that schema with the code that runs it. Arguments arrive as
 * `Record<string, unknown>`: they come from a model, so every tool treats them as untrusted input
 * (the registry has already checked them against the tool's schema).
 */

/** A JSON Schema object describing a tool's arguments. */
export type JsonSchema = Record<string, unknown>;

/**
 * The function part of a chat tool: name, description and the JSON Schema of its arguments.
 */
export interface ChatToolFunction {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/** An OpenAI-style function tool, as sent in the `tools` of a chat-completions request. */
export interface ChatTool {
  readonly type: 'function';
  readonly function: ChatToolFunction;
}

/**
 * A tool the registry can run: its chat schema and an `execute` that returns the text the model
 * sees.
 */
export interface ExecutableTool {
  /** Unique within a registry; equal to `getSchema().function.name`. */
  readonly name: string;
  getSchema(): ChatTool;
  /** Runs the tool; resolves to the text the model receives. */
  execute(args: Record<string, unknown>): Promise<string>;
  /** Releases what the tool owns (a gateway it created, say); called by `ToolRegistry.close()`. */
  close?(): Promise<void>;
}

/** Builds a ChatTool whose function name is `name`. */
export function defineSchema(name: string, description: string, parameters: JsonSchema): ChatTool {
  return deepFreeze({ type: 'function' as const, function: { name, description, parameters } });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}
