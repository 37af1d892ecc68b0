export { Agent, DEFAULT_MAX_ITERATIONS } from './agent';
export type { AgentOptions, AgentContext } from './agent';
