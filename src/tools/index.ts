/**
 * `execgate/tools`: the tool registry an agent calls tools through, and the built-in tools (the
 * file tools, sandboxed over the working directory, `run_bash` and `save_session_context`).
 *
 * @packageDocumentation
 * @module execgate/tools
 */
export { ToolRegistry } from './registry';
export type { RegisterOptions } from './registry';
export type { ChatTool, ChatToolFunction, ExecutableTool, JsonSchema } from './types';
export { createDefaultToolRegistry, BUILT_IN_TOOL_NAMES, DISABLED_BY_DEFAULT } from './defaults';
export type { DefaultToolRegistryOptions } from './defaults';
export { RunBashTool, RUN_BASH_DEFAULT_TIMEOUT, RUN_BASH_MAX_STREAM_BYTES } from './run-bash';
export type { RunBashOptions, RunBashResult } from './run-bash';
export { SaveSessionContextTool } from './session-context';
export type { SessionContextProvider, SaveSessionContextOptions } from './session-context';
export { DEFAULT_FILE_LIMITS } from './files/context';
export type { FileToolLimits } from './files/context';
