import { stat } from 'node:fs/promises';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { attempt, fileOpError } from './fs-errors';
import { createGlobMatcher } from './glob';
import { walk, type WalkState } from './walk';

const SCHEMA = defineSchema(
  'search_files',
  'Find files and directories by name with a glob, under a directory inside the working directory. `*` matches within a name, `**` any number of directories, `?` one character, `[abc]` a set, `{a,b}` alternatives. A glob without `/` is matched against names at any depth; one with `/` against the path relative to `path`. Symbolic links, `.git` and `node_modules` are not searched.',
  {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'Glob, for example `*.ts`, `src/**/*.test.ts` or `{README,LICENSE}*`.' },
      path: { type: 'string', description: 'Directory to search, relative to the working directory (default: the working directory).' },
    },
    required: ['pattern'],
    additionalProperties: false,
  },
);

export class SearchFilesTool extends FileTool {
  readonly name = 'search_files';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const pattern = args.pattern as string;
    const path = (args.path as string | undefined) ?? '.';
    const matches = createGlobMatcher(pattern);
    const { roots, limits } = this.context;
    const base = roots.resolve(path);
    const stats = await attempt('search', path, stat(base.real));
    if (!stats.isDirectory()) throw fileOpError('search', path, 'it is not a directory');
    const state: WalkState = { visited: 0, limited: false };
    const found: string[] = [];
    let more = false;
    for await (const entry of walk(base.real, limits.maxWalkEntries, state)) {
      if (!matches(entry.relative)) continue;
      if (found.length >= limits.maxGlobResults) {
        more = true;
        break;
      }
      const shown = roots.display(entry.path);
      found.push(entry.isDirectory ? `${shown}/` : shown);
    }
    const notes: string[] = [];
    if (more) notes.push(`[stopped at ${limits.maxGlobResults} results; narrow the pattern or the path]`);
    if (state.limited) notes.push(`[stopped after visiting ${limits.maxWalkEntries} entries; search a smaller directory]`);
    if (found.length === 0) return [`No files match ${pattern} under ${base.display}.`, ...notes].join('\n');
    return [...found, ...notes].join('\n');
  }
}
