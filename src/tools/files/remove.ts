import { lstat, rm, unlink } from 'node:fs/promises';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { attempt, fileOpError } from './fs-errors';

const SCHEMA = defineSchema('remove', 'Remove a file, a symbolic link (not its target) or a directory with everything in it, inside the working directory.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Path to remove, relative to the working directory.' },
  },
  required: ['path'],
  additionalProperties: false,
});

export class RemoveTool extends FileTool {
  readonly name = 'remove';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const target = this.context.roots.resolveEntry(path);
    if (!target.exists) throw fileOpError('remove', path, 'no such file or directory (ENOENT)');
    const stats = await attempt('remove', path, lstat(target.real));
    if (stats.isDirectory()) {
      // rm removes links found inside the tree, never what they point to.
      await attempt('remove', path, rm(target.real, { recursive: true }));
      return `Removed directory ${target.display}`;
    }
    await attempt('remove', path, unlink(target.real));
    return `Removed ${stats.isSymbolicLink() ? 'symbolic link' : 'file'} ${target.display}`;
  }
}
