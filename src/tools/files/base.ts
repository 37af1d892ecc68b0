import type { ChatTool, ExecutableTool } from '../types';
import type { FileToolContext } from './context';

export abstract class FileTool implements ExecutableTool {
  abstract readonly name: string;
  protected abstract readonly schema: ChatTool;
  // #private behind a getter, not a `protected` property, so the roots and limits stay out of the
  // tool's own properties (what logging, JSON and spreading a tool show).
  readonly #context: FileToolContext;

  constructor(context: FileToolContext) {
    this.#context = context;
  }

  protected get context(): FileToolContext {
    return this.#context;
  }

  getSchema(): ChatTool {
    return this.schema;
  }

  /**
   * Runs the operation where the context says: inside the sandbox of the gateway's runs when it
   * has a host (sandboxed.ts; the same tool runs there, in the file server), here otherwise.
   */
  execute(args: Record<string, unknown>): Promise<string> {
    const host = this.#context.host;
    return host ? host.call(this.name, args) : this.run(args);
  }

  /** The operation itself, on this process's view of the file system. */
  protected abstract run(args: Record<string, unknown>): Promise<string>;

  async close(): Promise<void> {
    await this.#context.host?.close();
  }
}
