/**
 * execgate's front door: the gateway, what a run asks and answers, its errors, policy loading
 * and the platform check. Each name here is documented (TSDoc, rendered to docs/api/ by
 * typedoc). The add-ons have entry points of their own, so that importing execgate loads none
 * of them: `execgate/mcp` (the MCP server), `execgate/tools` (the tool registry and the file
 * tools), `execgate/agent` (the agent loop; `openai` is its optional peer dependency) and
 * `execgate/parts` (the pieces the gateway is built from: the reference store, the redactor, the
 * environment sanitizer). Heavy optional modules (node-pty, the keyring, libsodium) load on
 * first use.
 *
 * @packageDocumentation
 * @module execgate
 */
export { createGateway, Gateway } from './gateway';
export type { GatewayOptions, ExecOptions, GatewayLogger } from './gateway-options';
export type { WatchPolicyOptions } from './policy/reload';
export type { ExecRequest } from './plan/options';
export type { ExecResult } from './run/result';
export type { RefUse } from './plan/prepare';
export type { BackgroundManager } from './run/background/manager';
export type { BackgroundProcess, BackgroundState, BackgroundStatus, OutputSlice, StatusOptions, KillOptions } from './run/background/types';
export { ExecgateError, ERROR_CATALOG, isExecgateError } from './errors';
export type { ErrorCode } from './errors';
export { DEFAULT_POLICY } from './policy/effective';
export type { EffectivePolicy, ExecMode, SandboxSettings } from './policy/effective';
export { loadPolicyFile, checkPolicyFile } from './policy/load';
export type { LoadedPolicy } from './policy/load';
export type { RefKind, RefSource, SourceAnswer } from './refs/types';
export { checkPlatform as checkSandboxPlatform } from './sandbox/detect';
export type { PlatformCheck as SandboxPlatformCheck } from './sandbox/detect';
export type { SandboxReport } from './sandbox/plan';
export { getHome } from './home';
