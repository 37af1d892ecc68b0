import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { attempt, fileOpError } from './fs-errors';

const SCHEMA = defineSchema('list_dir', 'List the entries of a directory inside the working directory: `name/` for directories, `name@` for symbolic links, files with their size.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Directory path, relative to the working directory (`.` for the working directory itself).' },
  },
  required: ['path'],
  additionalProperties: false,
});

export class ListDirTool extends FileTool {
  readonly name = 'list_dir';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const target = this.context.roots.resolve(path);
    const stats = await attempt('list', path, stat(target.real));
    if (!stats.isDirectory()) throw fileOpError('list', path, 'it is not a directory');
    const entries = await attempt('list', path, readdir(target.real, { withFileTypes: true }));
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (entries.length === 0) return `${target.display} is empty.`;
    const max = this.context.limits.maxListEntries;
    const lines: string[] = [];
    for (const entry of entries.slice(0, max)) {
      if (entry.isDirectory()) lines.push(`${entry.name}/`);
      // Links are shown, not followed: their target may be outside the roots.
      else if (entry.isSymbolicLink()) lines.push(`${entry.name}@`);
      else if (entry.isFile()) {
        const size = await stat(join(target.real, entry.name)).then((s) => s.size, () => undefined);
        lines.push(size === undefined ? entry.name : `${entry.name} (${size} bytes)`);
      } else lines.push(`${entry.name} (special file)`);
    }
    if (entries.length > max) lines.push(`[... ${entries.length - max} more entries not shown; ${entries.length} in total ...]`);
    return lines.join('\n');
  }
}
