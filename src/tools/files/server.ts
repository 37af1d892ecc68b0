/*
 * The file server: the built-in file tools running inside the sandbox of the gateway's runs
 * (sandboxed.ts starts it there, behind the same gate and mount check as a run). Every path a
 * tool resolves, every symbolic link it follows and every write it makes happens in that view of
 * the file system: the state directory, the audit log, the credential list and
 * `sandbox.filesystem.hidden` are empty there, read-only paths are read-only, and a link swapped
 * in by a run can only lead somewhere that view shows.
 *
 * Protocol, one JSON document per line: the first line on stdin is the tools' configuration
 * (`{ roots, base, limits }`); each later one a call (`{ id, name, args }`). Each answer on stdout
 * is `{ id, result }` or `{ id, error: { code, message, details } }`. The server ends with its
 * stdin.
 */
import { createInterface } from 'node:readline';
import { ExecgateError, getErrorMessage, isExecgateError } from '../../errors';
import type { FileTool } from './base';
import { createFileToolContext, type FileToolLimits } from './context';
import { createFileTools } from './index';

interface Call {
  readonly id: number;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

function answer(message: object): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function describe(error: unknown): object {
  if (isExecgateError(error)) return { code: error.code, message: error.message, details: error.details };
  return { code: 'EXECGATE_ERR_UNEXPECTED', message: getErrorMessage(error), details: {} };
}

function main(): void {
  let tools: Map<string, FileTool> | undefined;
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (tools === undefined) {
      const config = JSON.parse(line) as { roots: string[]; base?: string; limits?: Partial<FileToolLimits> };
      tools = createFileTools(createFileToolContext(config.roots, config.limits, config.base));
      return;
    }
    const call = JSON.parse(line) as Call;
    const tool = tools.get(call.name);
    if (tool === undefined) {
      answer({ id: call.id, error: describe(new ExecgateError('EXECGATE_ERR_TOOL_UNKNOWN', `No file tool named \`${call.name}\`.`, { tool: call.name })) });
      return;
    }
    tool.execute(call.args).then(
      (result) => answer({ id: call.id, result }),
      (error: unknown) => answer({ id: call.id, error: describe(error) }),
    );
  });
  lines.on('close', () => process.exit(0));
}

main();
