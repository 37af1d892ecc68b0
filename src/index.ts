/*
 * The public API of execgate. Named exports only; each one is deliberate and documented in the
 * README. Heavy optional modules (node-pty, the keyring, libsodium, the MCP SDK) are not
 * imported from here; they load on first use.
 */
export { createGateway, Gateway } from './gateway';
export type { GatewayOptions, ExecOptions } from './gateway';
export type { ExecRequest } from './exec/options';
export type { ExecResult } from './exec/result';
export type { BackgroundManager } from './exec/background/manager';
export type { BackgroundProcess, BackgroundState, BackgroundStatus, OutputSlice, StatusOptions, KillOptions } from './exec/background/types';
export { stripAnsi } from './exec/ansi';
export type { RefUse } from './exec/prepare';
export { ExecgateError, ERROR_CATALOG, isExecgateError } from './errors';
export type { ErrorCode } from './errors';
export { RefStore } from './refs/store';
export type { ResolvedRef, Resolution } from './refs/store';
export { SecretValue } from './refs/secret-value';
export type { RefKind, RefSource, RefToken, SourceAnswer } from './refs/types';
export { scanTokens, isValidRefId } from './refs/tokens';
export { Redactor } from './redact';
export { sanitizeEnv } from './env';
export { DEFAULT_POLICY } from './policy/effective';
export { loadPolicyFile, checkPolicyFile } from './policy/load';
export type { LoadedPolicy } from './policy/load';
export type { WatchPolicyOptions } from './gateway';
export type { EffectivePolicy, ExecMode, SandboxSettings } from './policy/effective';
export { checkPlatform as checkSandboxPlatform } from './sandbox/detect';
export type { PlatformCheck as SandboxPlatformCheck } from './sandbox/detect';
export type { SandboxReport } from './sandbox/plan';
export { getHome } from './home';

// tools and agent
export { ToolRegistry, createDefaultToolRegistry, BUILT_IN_TOOL_NAMES, DISABLED_BY_DEFAULT, RunBashTool, SaveSessionContextTool, DEFAULT_FILE_LIMITS, RUN_BASH_DEFAULT_TIMEOUT, RUN_BASH_MAX_STREAM_BYTES } from './tools';
export type { ExecutableTool, ChatTool, ChatToolFunction, JsonSchema, RegisterOptions, DefaultToolRegistryOptions, RunBashOptions, RunBashResult, SessionContextProvider, SaveSessionContextOptions, FileToolLimits } from './tools';
export { Agent } from './agent';
export type { AgentOptions, AgentContext } from './agent';
