/**
 * `execgate/agent`: an agent loop over an OpenAI-compatible model whose tool calls run through
 * execgate. `openai` is an optional peer dependency: install it to use the agent without a client
 * of your own.
 *
 * @packageDocumentation
 * @module execgate/agent
 */
export { Agent, DEFAULT_MAX_ITERATIONS } from './agent';
export type { AgentOptions, AgentContext } from './agent';
