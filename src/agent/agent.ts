/*
 * The Agent: a chat loop against any OpenAI-compatible endpoint, with tool calls run through a
 * ToolRegistry. The model proposes tool calls; each one is awaited through
 * `toolRegistry.execute()`, which never throws, and its string result goes back to the model.
 * The loop ends when the model answers without tool calls, or fails closed after
 * `maxIterations` model calls.
 *
 * The `openai` client is loaded when an Agent is constructed, so importing execgate does not
 * load it.
 */
import type { ClientOptions, OpenAI } from 'openai';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { ExecgateError, describeValue, invalidOption } from '../errors';
import { createDefaultToolRegistry } from '../tools/defaults';
import type { ToolRegistry } from '../tools/registry';
import { isContextAware } from '../tools/session-context';
import type { ChatTool } from '../tools/types';

/**
 * Most model calls one `chat()` makes unless `maxIterations` says otherwise.
 */
export const DEFAULT_MAX_ITERATIONS = 20;

/**
 * Options of {@link Agent}: the model, the endpoint, the tools, a system prompt and the iteration
 * limit.
 */
export interface AgentOptions {
  /** The model name sent with every request. */
  model: string;
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:11434/v1`. Default: the client's (`OPENAI_BASE_URL`, else OpenAI). */
  baseURL?: string;
  /** API key. Default: the client's (`OPENAI_API_KEY`). */
  apiKey?: string;
  /** The tools the model may call. Default: `createDefaultToolRegistry()`. */
  toolRegistry?: ToolRegistry;
  /** A system message placed first in the conversation. */
  systemPrompt?: string;
  /** Most model calls for one `chat()` / `streamChat()` (default 20). */
  maxIterations?: number;
  /** Extra request parameters (temperature, max_tokens, ...) sent with every completion. */
  requestParams?: Partial<Omit<ChatCompletionCreateParamsBase, 'model' | 'messages' | 'tools' | 'stream'>>;
  /** Further options for the `openai` client (timeout, maxRetries, defaultHeaders, fetch, ...). */
  clientOptions?: Omit<ClientOptions, 'baseURL' | 'apiKey'>;
  /** A ready client; `baseURL`, `apiKey` and `clientOptions` are then ignored. */
  client?: OpenAI;
}

/** What save_session_context writes for an agent. */
export interface AgentContext {
  model: string;
  baseURL: string | undefined;
  tools: string[];
  messages: ChatCompletionMessageParam[];
}

interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

interface Turn {
  content: string | null;
  toolCalls: ToolCall[];
}

/**
 * An agent loop: sends the conversation to an OpenAI-compatible model, runs the tool calls it asks
 * for through a tool registry, and repeats until the model answers. Needs the optional peer
 * `openai` unless a client is given.
 */
export class Agent {
  readonly toolRegistry: ToolRegistry;
  readonly model: string;
  readonly #client: OpenAI;
  readonly #maxIterations: number;
  readonly #requestParams: AgentOptions['requestParams'];
  readonly #systemPrompt: string | undefined;
  #messages: ChatCompletionMessageParam[] = [];

  constructor(options: AgentOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected the Agent options to be an object, got ${describeValue(options)}.`, { option: 'options' });
    }
    if (typeof options.model !== 'string' || options.model === '') {
      throw invalidOption('model', options.model, `a non-empty string`);
    }
    const maxIterations = options.maxIterations ?? DEFAULT_MAX_ITERATIONS;
    if (!Number.isInteger(maxIterations) || maxIterations < 1) {
      throw invalidOption('maxIterations', maxIterations, `a positive integer`);
    }
    this.model = options.model;
    this.#maxIterations = maxIterations;
    this.#requestParams = options.requestParams;
    this.#systemPrompt = options.systemPrompt;
    this.toolRegistry = options.toolRegistry ?? createDefaultToolRegistry();
    this.#client = options.client ?? createClient(options);
    this.reset();
    const saver = this.toolRegistry.getTool('save_session_context');
    if (isContextAware(saver)) saver.setContextProvider(() => this.getContext());
  }

  /** The schemas of the enabled tools: what the model is offered. */
  getTools(): ChatTool[] {
    return this.toolRegistry.getEnabledSchemas();
  }

  /** A copy of the conversation so far. */
  getMessages(): ChatCompletionMessageParam[] {
    return structuredClone(this.#messages);
  }

  /** Starts a new conversation (keeping the system prompt). */
  reset(): void {
    this.#messages = this.#systemPrompt === undefined ? [] : [{ role: 'system', content: this.#systemPrompt }];
  }

  getContext(): AgentContext {
    return {
      model: this.model,
      baseURL: this.#client.baseURL,
      tools: this.getTools().map((tool) => tool.function.name),
      messages: this.getMessages(),
    };
  }

  /** Sends `message`, runs the tool calls the model asks for, and resolves to its final answer. */
  async chat(message: string): Promise<string> {
    return this.#converse(message, async (params) => {
      const completion = await this.#client.chat.completions.create({ ...params, stream: false });
      const reply = completion.choices[0]?.message;
      const toolCalls: ToolCall[] = [];
      for (const call of reply?.tool_calls ?? []) {
        if (call.type === 'function') toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
        else toolCalls.push({ id: call.id, name: call.custom.name, arguments: call.custom.input });
      }
      return { content: reply?.content ?? null, toolCalls };
    });
  }

  /**
   * Like chat(), with the model's answers streamed: `onDelta` receives each piece of text as it
   * arrives. Tool-call fragments are put together before the calls run.
   */
  async streamChat(message: string, onDelta?: (text: string) => void): Promise<string> {
    return this.#converse(message, async (params) => {
      const stream = await this.#client.chat.completions.create({ ...params, stream: true });
      let content = '';
      let sawContent = false;
      const calls: ToolCall[] = [];
      for await (const chunk of stream) {
        const delta = chunk.choices?.[0]?.delta;
        if (!delta) continue;
        if (typeof delta.content === 'string' && delta.content !== '') {
          sawContent = true;
          content += delta.content;
          onDelta?.(delta.content);
        }
        for (const fragment of delta.tool_calls ?? []) {
          const slot = (calls[fragment.index] ??= { id: '', name: '', arguments: '' });
          if (fragment.id) slot.id = fragment.id;
          // As the openai client's own accumulator does: the name arrives whole, arguments in pieces.
          if (fragment.function?.name) slot.name = fragment.function.name;
          if (fragment.function?.arguments) slot.arguments += fragment.function.arguments;
        }
      }
      const toolCalls = calls.filter(Boolean).map((call, index) => ({ ...call, id: call.id || `call_${index}` }));
      return { content: sawContent ? content : null, toolCalls };
    });
  }

  /** Saves the conversation with `reason` through the save_session_context tool. */
  async saveContext(reason: string): Promise<string> {
    return await this.toolRegistry.execute('save_session_context', { reason });
  }

  async #converse(
    message: string,
    ask: (params: { model: string; messages: ChatCompletionMessageParam[]; tools?: ChatTool[] }) => Promise<Turn>,
  ): Promise<string> {
    if (typeof message !== 'string') {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected the message to be a string, got ${describeValue(message)}.`, { option: 'message' });
    }
    this.#messages.push({ role: 'user', content: message });
    for (let iteration = 0; iteration < this.#maxIterations; iteration += 1) {
      const tools = this.getTools();
      const turn = await ask({
        ...this.#requestParams,
        model: this.model,
        messages: [...this.#messages],
        ...(tools.length > 0 ? { tools } : {}),
      });
      const assistant: ChatCompletionAssistantMessageParam = { role: 'assistant', content: turn.content };
      if (turn.toolCalls.length > 0) {
        assistant.tool_calls = turn.toolCalls.map(
          (call): ChatCompletionMessageFunctionToolCall => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }),
        );
      }
      this.#messages.push(assistant);
      if (turn.toolCalls.length === 0) return turn.content ?? '';
      for (const call of turn.toolCalls) {
        const content = await this.#runToolCall(call);
        this.#messages.push({ role: 'tool', tool_call_id: call.id, content });
      }
    }
    throw new ExecgateError(
      'EXECGATE_ERR_AGENT_MAX_ITERATIONS',
      `The model was called ${this.#maxIterations} times for one message and still asked for tools; stopped. Raise \`maxIterations\` if the task needs more steps.`,
      { maxIterations: this.#maxIterations },
    );
  }

  async #runToolCall(call: ToolCall): Promise<string> {
    let args: unknown;
    try {
      args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch (error) {
      return `Error executing ${call.name}: the arguments are not valid JSON (${(error as Error).message}).`;
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return `Error executing ${call.name}: the arguments must be a JSON object.`;
    }
    return await this.toolRegistry.execute(call.name, args as Record<string, unknown>);
  }
}

function createClient(options: AgentOptions): OpenAI {
  let Client: typeof import('openai').OpenAI;
  try {
    ({ OpenAI: Client } = require('openai') as typeof import('openai'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    throw new ExecgateError(
      'EXECGATE_ERR_AGENT_CLIENT_MISSING',
      'The agent needs the `openai` package, an optional peer dependency of execgate that is not installed. Install it (`npm install openai`) or pass a client of your own (`new Agent({ client })`).',
      {},
      { cause: error },
    );
  }
  return new Client({
    ...options.clientOptions,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
  });
}
