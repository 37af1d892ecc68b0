/*
 * search_text runs a model-supplied regular expression over file contents. A pattern such as
 * `(a+)+$` can backtrack for longer than the universe exists on one line, and a RegExp call
 * cannot be interrupted from JavaScript. So the matching loop runs as a vm script with a
 * timeout: V8 terminates it (regex included) when the search's time budget is spent, and the
 * tool returns what it found so far with a notice. Lines are matched on their first
 * `maxLineLength` characters; binary files, files over `maxSearchFileBytes`, symbolic links,
 * `.git` and `node_modules` are skipped; the number of files and matches is bounded.
 */
import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import vm from 'node:vm';
import { ExecgateError } from '../../errors';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { isBinary } from './binary';
import { attempt } from './fs-errors';
import { O_NOFOLLOW } from './roots';
import { walk, type WalkEntry, type WalkState } from './walk';

const SCHEMA = defineSchema(
  'search_text',
  'Search file contents with a JavaScript regular expression, under a directory (or in one file) inside the working directory. Returns `path:line: text` for each matching line. Binary and large files, symbolic links, `.git` and `node_modules` are skipped.',
  {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'Regular expression (JavaScript syntax, case-sensitive), for example `function\\s+main`.' },
      path: { type: 'string', description: 'Directory or file to search, relative to the working directory (default: the working directory).' },
    },
    required: ['pattern'],
    additionalProperties: false,
  },
);

const MATCH_LINES = new vm.Script(`
  (() => {
    const hits = [];
    for (let i = 0; i < lines.length && hits.length < room; i += 1) {
      re.lastIndex = 0;
      if (re.test(lines[i].length > maxLength ? lines[i].slice(0, maxLength) : lines[i])) hits.push(i);
    }
    return hits;
  })()
`);

const SHOWN_LINE_CHARS = 300;

export class SearchTextTool extends FileTool {
  readonly name = 'search_text';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const pattern = args.pattern as string;
    const path = (args.path as string | undefined) ?? '.';
    let re: RegExp;
    try {
      re = new RegExp(pattern);
    } catch (error) {
      throw new ExecgateError(
        'EXECGATE_ERR_SEARCH_PATTERN_INVALID',
        `The pattern is not a valid regular expression: ${(error as Error).message}`,
        { pattern: pattern.slice(0, 200) },
      );
    }
    const { roots, limits } = this.context;
    const base = roots.resolve(path);
    const baseStats = await attempt('search', path, stat(base.real));

    const sandbox = vm.createContext({ re, lines: [] as string[], room: 0, maxLength: limits.maxLineLength });
    const deadline = Date.now() + limits.searchTimeout;
    const results: string[] = [];
    const notes: string[] = [];
    let filesSearched = 0;
    let filesWithMatches = 0;
    let skipped = 0;
    const state: WalkState = { visited: 0, limited: false };
    const files: AsyncIterable<WalkEntry> | WalkEntry[] = baseStats.isDirectory()
      ? walk(base.real, limits.maxWalkEntries, state)
      : [{ path: base.real, relative: '', isDirectory: false }];

    for await (const file of files) {
      if (file.isDirectory) continue;
      if (filesSearched >= limits.maxSearchFiles) {
        notes.push(`[stopped after ${limits.maxSearchFiles} files; search a smaller directory]`);
        break;
      }
      const content = await readSmallFile(file.path, limits.maxSearchFileBytes);
      if (content === undefined || isBinary(content)) {
        skipped += 1;
        continue;
      }
      filesSearched += 1;
      const lines = content.toString('utf8').split(/\r?\n/);
      sandbox.lines = lines;
      sandbox.room = limits.maxSearchMatches - results.length;
      let hits: number[];
      const left = deadline - Date.now();
      try {
        if (left <= 0) throw new Error('timeout');
        hits = MATCH_LINES.runInContext(sandbox, { timeout: left }) as number[];
      } catch {
        notes.push(`[stopped: the search took longer than ${limits.searchTimeout} ms; a pattern with nested repetition such as (a+)+ can take very long, simplify it or search a smaller path]`);
        break;
      }
      if (hits.length > 0) filesWithMatches += 1;
      const shown = roots.display(file.path);
      for (const index of hits) {
        const line = lines[index];
        const text = line.length > SHOWN_LINE_CHARS ? `${line.slice(0, SHOWN_LINE_CHARS)}[... ${line.length - SHOWN_LINE_CHARS} more characters]` : line;
        results.push(`${shown}:${index + 1}: ${text}`);
      }
      if (results.length >= limits.maxSearchMatches) {
        notes.push(`[stopped at ${limits.maxSearchMatches} matches; narrow the pattern or the path]`);
        break;
      }
    }
    sandbox.lines = [];
    if (state.limited) notes.push(`[stopped after visiting ${limits.maxWalkEntries} entries; search a smaller directory]`);
    if (skipped > 0) notes.push(`[${skipped} binary or larger-than-${limits.maxSearchFileBytes}-byte files skipped]`);
    if (results.length === 0) return [`No matches for ${pattern} in ${filesSearched} files under ${base.display}.`, ...notes].join('\n');
    const summary = `[${results.length} matching lines in ${filesWithMatches} files]`;
    return [...results, summary, ...notes].join('\n');
  }
}

/** The file's content, or undefined when it is larger than `max` or cannot be read. */
async function readSmallFile(path: string, max: number): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > max) return undefined;
    const content = await handle.readFile();
    return content.length > max ? undefined : content;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}
