import { mkdir, stat } from 'node:fs/promises';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { attempt, fileOpError } from './fs-errors';

const SCHEMA = defineSchema('mkdir', 'Create a directory inside the working directory, with any missing parents. An existing directory is left as it is.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Directory path, relative to the working directory.' },
  },
  required: ['path'],
  additionalProperties: false,
});

export class MkdirTool extends FileTool {
  readonly name = 'mkdir';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const target = this.context.roots.resolve(path);
    if (target.exists) {
      const stats = await attempt('create the directory', path, stat(target.real));
      if (!stats.isDirectory()) throw fileOpError('create the directory', path, 'a file with that name exists');
      return `Directory ${target.display} already exists.`;
    }
    await attempt('create the directory', path, mkdir(target.real, { recursive: true, mode: 0o777 }));
    return `Created directory ${target.display}`;
  }
}
