/*
 * What Linux lets one execve(2) carry, checked before anything is spawned. Over either limit the
 * kernel answers E2BIG, which surfaces deep in the spawn chain (nsenter, bubblewrap, the warm
 * sandbox's waiting bash) and names none of the request's options; a large environment also costs
 * CPU all the way there. Checked twice: the request's own `env` when the request is read (before
 * any reference resolves), then the run's whole argv and environment once the plan has them
 * (inherited variables, resolved values, the sandbox's arguments).
 *
 * The limits (fs/exec.c): each argument or `NAME=value` string, NUL included, at most
 * MAX_ARG_STRLEN (32 pages); all strings plus one pointer each at most a quarter of the stack
 * limit, capped at three quarters of _STK_LIM and never below 32 pages.
 */
import { readFileSync } from 'node:fs';
import { ExecgateError } from '../errors';

/** Longest single argument or environment string, terminating NUL excluded. */
export const MAX_STRING_BYTES = 131_071;
const PAGES_32 = 131_072;
const STK_LIM = 8 * 1024 * 1024;
const POINTER_BYTES = 8;

let argMax: number | undefined;

/** The kernel's limit on arguments plus environment for this process's children (they inherit its stack limit). */
export function getArgMax(): number {
  if (argMax !== undefined) return argMax;
  let stack = Infinity;
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max stack size'));
    const soft = line?.split(/\s{2,}/)[1];
    if (soft && /^\d+$/.test(soft)) stack = Number(soft);
  } catch {
    // No /proc: the common default (8 MiB stack) below.
    stack = STK_LIM;
  }
  argMax = Math.max(Math.min(stack / 4, (STK_LIM / 4) * 3), PAGES_32);
  return argMax;
}

function entryBytes(name: string, value: string): number {
  return Buffer.byteLength(name) + 1 + Buffer.byteLength(value);
}

function envTotal(env: Readonly<Record<string, string>>): number {
  let total = 0;
  for (const [name, value] of Object.entries(env)) total += entryBytes(name, value) + 1 + POINTER_BYTES;
  return total;
}

const FIX = 'Pass large data in a file (or on stdin) and its path in the variable.';

/** The request's `env` alone: each variable, and all of them, within what one exec accepts. */
export function validateRequestEnvSize(env: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(env)) {
    const bytes = entryBytes(name, value);
    if (bytes > MAX_STRING_BYTES) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_ENV',
        `\`env.${name}\` is ${bytes} bytes as \`NAME=value\`; Linux accepts at most ${MAX_STRING_BYTES} bytes in one environment variable. ${FIX} Nothing was run.`,
        { variable: name, bytes, max: MAX_STRING_BYTES },
      );
    }
  }
  const total = envTotal(env);
  const max = getArgMax();
  if (total > max) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_ENV',
      `The \`env\` option is ${total} bytes in ${Object.keys(env).length} variables; Linux accepts at most ${max} bytes of arguments and environment for one program. ${FIX} Nothing was run.`,
      { bytes: total, max },
    );
  }
}

/*
 * The run as it will be executed. Messages name variables and sizes only: a variable here may
 * hold a resolved value (EXECGATE_REF_<n>), which must never appear in an error.
 */
export function validateExecSize(argv: readonly string[], env: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(env)) {
    const bytes = entryBytes(name, value);
    if (bytes > MAX_STRING_BYTES) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_ENV',
        `The run's environment variable \`${name}\` would be ${bytes} bytes as \`NAME=value\` (a reference's value, an inherited or a policy-set variable); Linux accepts at most ${MAX_STRING_BYTES} bytes in one environment variable. ${FIX} Nothing was run.`,
        { variable: name, bytes, max: MAX_STRING_BYTES },
      );
    }
  }
  let args = 0;
  for (const arg of argv) args += Buffer.byteLength(arg) + 1 + POINTER_BYTES;
  const environment = envTotal(env);
  const max = getArgMax();
  if (args + environment > max) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_ENV',
      `The run's environment (${environment} bytes in ${Object.keys(env).length} variables, inherited ones and resolved values included) and its arguments (${args} bytes) add up to more than the ${max} bytes Linux accepts for one program. Make the environment smaller (\`envMode: 'replace'\`, fewer or shorter variables); ${FIX} Nothing was run.`,
      { bytes: args + environment, environment, arguments: args, max },
    );
  }
}
