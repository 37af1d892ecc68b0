import { lstat, rm, unlink } from 'node:fs/promises';
import { defineSchema, type ChatTool, type ExecutableTool } from '../types';
import type { FileToolContext } from './context';
import { fileOpError, fileOpFailed } from './fs-errors';

const SCHEMA = defineSchema('remove', 'Remove a file, a symbolic link (not its target) or a directory with everything in it, inside the working directory.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Path to remove, relative to the working directory.' },
  },
  required: ['path'],
  additionalProperties: false,
});

export class RemoveTool implements ExecutableTool {
  readonly name = 'remove';
  readonly #context: FileToolContext;

  constructor(context: FileToolContext) {
    this.#context = context;
  }

  getSchema(): ChatTool {
    return SCHEMA;
  }

  async execute(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const target = this.#context.roots.resolveEntry(path);
    if (!target.exists) throw fileOpError('remove', path, 'no such file or directory (ENOENT)');
    const stats = await lstat(target.real).catch((error: unknown) => {
      throw fileOpFailed('remove', path, error);
    });
    if (stats.isDirectory()) {
      // rm removes links found inside the tree, never what they point to.
      await rm(target.real, { recursive: true }).catch((error: unknown) => {
        throw fileOpFailed('remove', path, error);
      });
      return `Removed directory ${target.display}`;
    }
    await unlink(target.real).catch((error: unknown) => {
      throw fileOpFailed('remove', path, error);
    });
    return `Removed ${stats.isSymbolicLink() ? 'symbolic link' : 'file'} ${target.display}`;
  }
}
