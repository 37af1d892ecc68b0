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
/** Exit status for a command line that cannot be understood (as with commander, grep, bash). */
export const EXIT_USAGE = 2;
/** Exit status when the person cancelled at a prompt (Ctrl-C; 128 + SIGINT, as shells report it). */
export const EXIT_CANCELLED = 130;

/** The exit statuses every execgate command shares, for `--help`. */
export const EXIT_STATUS_HELP = `
Exit status:
  0    success; also for --help, --version, and a command group named alone (its help)
  1    a check said no: \`policy check\` found problems, \`policy explain\` a denial,
       \`audit verify\` a broken chain, \`secret test\` an unknown name
  2    the command line is not valid (the message names the help to read)
  124  \`execgate run\`: the command timed out
  130  cancelled with Ctrl-C at a prompt (\`secret set\`, \`encrypt\`)
  125  execgate refused or failed (policy denial, bad option value, store error):
       one line on stderr, \`execgate: EXECGATE_ERR_...: what and how to fix it\`
  \`execgate run\` otherwise exits with the command's own status (128+N when killed by
  signal N). Error codes: docs/errors.md in the package.
`;

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
