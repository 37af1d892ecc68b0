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

  abstract execute(args: Record<string, unknown>): Promise<string>;
}
