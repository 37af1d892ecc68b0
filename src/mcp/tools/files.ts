/*
 * `--tools files`: the built-in file tools of the ToolRegistry (read_file, write_file, list_dir,
 * mkdir, move, search_text, search_files) offered as MCP tools. They are confined to the
 * server's working directory (`--workdir`) and resolve relative paths against it, not against
 * the bash tool's tracked directory. Tools the default registry keeps disabled (`remove`) stay
 * off; run_bash and save_session_context are left out (bash covers the first; the second is
 * for the agent loop).
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Gateway } from '../../gateway';
import type { ToolRegistry } from '../../tools/registry';
import type { McpSession } from '../session';
import { textResult, type McpTool } from './types';

const LEFT_OUT: ReadonlySet<string> = new Set(['run_bash', 'save_session_context']);

const CODED = /^EXECGATE_ERR_[A-Z0-9_]+: /;

class RegistryTool implements McpTool {
  readonly name: string;
  readonly inputSchema: Tool['inputSchema'];
  readonly #description: string;
  readonly #registry: ToolRegistry;

  constructor(registry: ToolRegistry, name: string, description: string, parameters: Record<string, unknown>) {
    this.#registry = registry;
    this.name = name;
    this.#description = description;
    this.inputSchema = { ...parameters, type: 'object' };
  }

  describe(_session: McpSession): Tool {
    const readOnly = this.name === 'read_file' || this.name === 'list_dir' || this.name.startsWith('search_');
    return {
      name: this.name,
      description: this.#description,
      inputSchema: this.inputSchema,
      annotations: { readOnlyHint: readOnly, destructiveHint: !readOnly, openWorldHint: false },
    };
  }

  async call(args: Record<string, unknown>): Promise<CallToolResult> {
    // The registry never throws: a failure comes back as `Error executing NAME: CODE: message`.
    const text = await this.#registry.execute(this.name, args);
    const prefix = `Error executing ${this.name}: `;
    if (text.startsWith(prefix)) {
      const line = text.slice(prefix.length);
      return { content: [{ type: 'text', text: CODED.test(line) ? line : `EXECGATE_ERR_UNEXPECTED: ${line}` }], isError: true };
    }
    return textResult(text);
  }
}

/** The file tools of a default registry rooted at `workdir`, as MCP tools. */
export function createFileTools(gateway: Gateway, workdir: string): { tools: McpTool[]; registry: ToolRegistry } {
  // Loaded here, not at import: a server without --tools files never loads the file tools.
  const { createDefaultToolRegistry: create } = require('../../tools/defaults') as typeof import('../../tools/defaults');
  const registry = create({ gateway, workdir });
  const tools: McpTool[] = [];
  for (const schema of registry.getEnabledSchemas()) {
    const { name, description, parameters } = schema.function;
    if (LEFT_OUT.has(name)) continue;
    tools.push(new RegistryTool(registry, name, description, parameters));
  }
  return { tools, registry };
}
