/*
 * What a CLI command may touch, passed in rather than taken from globals so commands can be
 * driven in-process by tests.
 */
import { ExecgateError, isExecgateError } from '../errors';

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Exit status for "execgate itself refused or failed" (as with `env` and `timeout`). */
export const EXIT_EXECGATE_ERROR = 125;
/** Exit status when the command timed out (as with `timeout(1)`). */
export const EXIT_TIMEOUT = 124;

/** Thrown by a command action to end the process with a status, after its output is written. */
export class CliExit extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`exit ${status}`);
    this.status = status;
  }
}

export function formatCliError(error: unknown): string {
  if (isExecgateError(error)) return `execgate: ${error.code}: ${error.message}`;
  const message = error instanceof Error ? error.message : String(error);
  return `execgate: EXECGATE_ERR_UNEXPECTED: ${message}`;
}

export function usageError(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_CLI_USAGE', message);
}
