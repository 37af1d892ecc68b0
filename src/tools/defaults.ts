/*
 * The default registry: the ten built-in tools in the order seed 003 lists them, with the two
 * that can destroy work (`remove`, `run_bash`) registered disabled, so a host turns them on
 * deliberately.
 */
import { createGateway, type Gateway, type GatewayOptions } from '../gateway';
import { getHome } from '../home';
import { createFileToolContext, type FileToolLimits } from './files/context';
import { ListDirTool } from './files/list-dir';
import { MkdirTool } from './files/mkdir';
import { MoveTool } from './files/move';
import { ReadFileTool } from './files/read-file';
import { RemoveTool } from './files/remove';
import { SearchFilesTool } from './files/search-files';
import { SearchTextTool } from './files/search-text';
import { WriteFileTool } from './files/write-file';
import { ToolRegistry } from './registry';
import { RunBashTool } from './run-bash';
import { SaveSessionContextTool, type SessionContextProvider } from './session-context';

export interface DefaultToolRegistryOptions {
  /**
   * The gateway run_bash sends commands through. Default: one created with default options at
   * run_bash's first call (`gatewayOptions` apply), closed by `registry.close()`.
   */
  gateway?: Gateway;
  /** Options for the gateway created when `gateway` is not given. */
  gatewayOptions?: GatewayOptions;
  /** The working directory: base of relative file paths, run_bash's default cwd. Default `process.cwd()`. */
  workdir?: string;
  /** Directories the file tools are confined to. Default `[workdir]`; relative paths still resolve against `workdir` (default: the first root). */
  roots?: readonly string[];
  /** Where save_session_context writes (`<stateDir>/sessions/`). Default the gateway's home, else `$EXECGATE_HOME` or `~/.execgate`. */
  stateDir?: string;
  /** Size and count limits of the file tools. */
  limits?: Partial<FileToolLimits>;
  /** Supplies the context save_session_context writes; an Agent sets its own. */
  contextProvider?: SessionContextProvider;
}

/** Names of the built-in tools, in registration order. */
export const BUILT_IN_TOOL_NAMES = Object.freeze([
  'read_file',
  'write_file',
  'save_session_context',
  'list_dir',
  'mkdir',
  'remove',
  'move',
  'search_text',
  'search_files',
  'run_bash',
] as const);

/** Tools the default registry registers disabled. */
export const DISABLED_BY_DEFAULT = Object.freeze(['remove', 'run_bash'] as const);

export function createDefaultToolRegistry(options: DefaultToolRegistryOptions = {}): ToolRegistry {
  const workdir = options.workdir;
  const files = createFileToolContext(options.roots ?? [workdir ?? process.cwd()], options.limits, workdir);
  const gateway = options.gateway;
  const stateDir = options.stateDir ?? gateway?.home ?? options.gatewayOptions?.home ?? getHome(options.gatewayOptions?.env);

  const registry = new ToolRegistry();
  registry.register(new ReadFileTool(files));
  registry.register(new WriteFileTool(files));
  registry.register(new SaveSessionContextTool({ stateDir, contextProvider: options.contextProvider }));
  registry.register(new ListDirTool(files));
  registry.register(new MkdirTool(files));
  registry.register(new RemoveTool(files));
  registry.register(new MoveTool(files));
  registry.register(new SearchTextTool(files));
  registry.register(new SearchFilesTool(files));
  registry.register(
    new RunBashTool({
      gateway: gateway ?? (() => createGateway(options.gatewayOptions)),
      ownsGateway: gateway === undefined,
      cwd: workdir,
    }),
  );
  for (const name of DISABLED_BY_DEFAULT) registry.disableTool(name);
  return registry;
}
