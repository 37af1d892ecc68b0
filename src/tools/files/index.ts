/*
 * The built-in file tools, in the order seed 003 lists them: one list for the registry in the
 * gateway's process and for the file server inside the sandbox (server.ts).
 */
import type { FileToolContext } from './context';
import type { FileTool } from './base';
import { ListDirTool } from './list-dir';
import { MkdirTool } from './mkdir';
import { MoveTool } from './move';
import { ReadFileTool } from './read-file';
import { RemoveTool } from './remove';
import { SearchFilesTool } from './search-files';
import { SearchTextTool } from './search-text';
import { WriteFileTool } from './write-file';

export function createFileTools(context: FileToolContext): Map<string, FileTool> {
  const tools = [ReadFileTool, WriteFileTool, ListDirTool, MkdirTool, RemoveTool, MoveTool, SearchTextTool, SearchFilesTool].map((Tool) => new Tool(context));
  return new Map(tools.map((tool) => [tool.name, tool]));
}
