import { mkdir, stat } from 'node:fs/promises';
import { defineSchema, type ChatTool, type ExecutableTool } from '../types';
import type { FileToolContext } from './context';
import { fileOpError, fileOpFailed } from './fs-errors';

const SCHEMA = defineSchema('mkdir', 'Create a directory inside the working directory, with any missing parents. An existing directory is left as it is.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Directory path, relative to the working directory.' },
  },
  required: ['path'],
  additionalProperties: false,
});

export class MkdirTool implements ExecutableTool {
  readonly name = 'mkdir';
  readonly #context: FileToolContext;

  constructor(context: FileToolContext) {
    this.#context = context;
  }

  getSchema(): ChatTool {
    return SCHEMA;
  }

  async execute(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const target = this.#context.roots.resolve(path);
    if (target.exists) {
      const stats = await stat(target.real).catch((error: unknown) => {
        throw fileOpFailed('create the directory', path, error);
      });
      if (!stats.isDirectory()) throw fileOpError('create the directory', path, 'a file with that name exists');
      return `Directory ${target.display} already exists.`;
    }
    await mkdir(target.real, { recursive: true, mode: 0o777 }).catch((error: unknown) => {
      throw fileOpFailed('create the directory', path, error);
    });
    return `Created directory ${target.display}`;
  }
}
