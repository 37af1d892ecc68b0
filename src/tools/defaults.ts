/*
 * The default registry: the ten built-in tools in the order seed 003 lists them, with the two
 * that can destroy work (`remove`, `run_bash`) registered disabled, so a host turns them on
 * deliberately.
 */
import { resolve } from 'node:path';
import { createGateway, type Gateway, type GatewayOptions } from '../gateway';
import { maskError } from '../errors';
import { getHome } from '../home';
import { DEFAULT_POLICY } from '../policy/effective';
import { createFileToolContext, type FileHost, type FileToolLimits } from './files/context';
import { createFileTools } from './files/index';
import { SandboxedFileHost } from './files/sandboxed';
import { ToolRegistry } from './registry';
import { RunBashTool } from './run-bash';
import { SaveSessionContextTool, type SessionContextProvider } from './session-context';

/**
 * Options of {@link createDefaultToolRegistry}: the gateway runs go through (or its options), the working directory, the roots the file tools are confined to, limits.
 */
export interface DefaultToolRegistryOptions {
  /**
   * The gateway run_bash sends commands through. Default: one created with default options at
   * run_bash's first call (`gatewayOptions` apply), closed by `registry.close()`.
   */
  gateway?: Gateway;
  /**
   * Options for the gateway created when `gateway` is not given. Unless they say otherwise, that
   * gateway works in `workdir` (its `cwd`), and when `roots` are given its policy's `cwd.roots`
   * are those roots: what its runs and the file tools may write.
   */
  gatewayOptions?: GatewayOptions;
  /** The working directory: base of relative file paths, run_bash's default cwd. Default `process.cwd()`. */
  workdir?: string;
  /**
   * Directories the file tools are confined to. Default `[workdir]`; relative paths still resolve
   * against `workdir` (default: the first root). Where the gateway's runs are sandboxed, the tools
   * run inside that sandbox too (tools/files/sandboxed.ts): they see and may write exactly what a
   * command would.
   */
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

/**
 * A registry with the built-in tools: the file tools (sandboxed, over the working directory) and
 * the bash tool; `remove` and `run_bash` start disabled.
 */
export function createDefaultToolRegistry(options: DefaultToolRegistryOptions = {}): ToolRegistry {
  const workdir = options.workdir;
  const roots = options.roots ?? [workdir ?? process.cwd()];
  const given = options.gateway;
  const stateDir = options.stateDir ?? given?.home ?? options.gatewayOptions?.home ?? getHome(options.gatewayOptions?.env);
  // One gateway for run_bash and the file tools' sandbox: the given one, or one made at first
  // need and closed with the registry (by the file tools' host, which every file tool closes).
  // That one works where the tools do: its workspace (what its runs and the file tools may
  // write) is the workdir, or the roots the tools were given, unless its options say otherwise.
  let created: Gateway | undefined;
  const base = resolve(workdir ?? roots[0] ?? process.cwd());
  const ownOptions = (): GatewayOptions => {
    const given = options.gatewayOptions ?? {};
    const policy = options.roots && given.policy === undefined && given.policyFile === undefined
      ? { policy: Object.freeze({ ...DEFAULT_POLICY, cwd: Object.freeze({ roots: Object.freeze(roots.map((root) => resolve(root))) }) }) }
      : {};
    return { cwd: base, ...policy, ...given };
  };
  const getGateway = (): Gateway => given ?? (created ??= createGateway(ownOptions()));
  const sandboxed = new SandboxedFileHost(
    { prepareToolSandbox: (cwd) => getGateway().prepareToolSandbox(cwd) },
    { roots: roots.map((root) => resolve(root)), base, limits: options.limits ?? {} },
  );
  // What the tools return (file contents, names, error messages) is masked like a run's output:
  // a file a run wrote a resolved value into comes back with the value masked.
  const host: FileHost = {
    call: async (name, args) => {
      try {
        return getGateway().maskKnown(await sandboxed.call(name, args));
      } catch (error) {
        throw maskError(error, (text) => getGateway().maskKnown(text));
      }
    },
    close: async () => {
      await sandboxed.close();
      const gateway = created;
      created = undefined;
      await gateway?.close();
    },
  };
  const files = createFileTools(createFileToolContext(roots, options.limits, workdir, host));

  const registry = new ToolRegistry();
  registry.register(files.get('read_file')!);
  registry.register(files.get('write_file')!);
  registry.register(new SaveSessionContextTool({ stateDir, contextProvider: options.contextProvider }));
  for (const name of ['list_dir', 'mkdir', 'remove', 'move', 'search_text', 'search_files']) registry.register(files.get(name)!);
  registry.register(new RunBashTool({ gateway: getGateway, ownsGateway: false, cwd: workdir }));
  for (const name of DISABLED_BY_DEFAULT) registry.disableTool(name);
  return registry;
}
