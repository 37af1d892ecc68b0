/*
 * Normalize and validate an ExecRequest. Nothing here touches the file system except the
 * `cwd` check, and nothing runs: bad input is refused with a coded error before any reference
 * is resolved or any process is spawned.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ExecgateError, describeValue, invalidOption } from '../errors';
import { EXEC_MODES, type EffectivePolicy, type ExecMode } from '../policy/effective';
import { validateRequestEnvSize } from './arg-limits';

/**
 * One request to run a command: the command text (it may hold `<<secret:NAME>>` and
 * `<<decrypt:ID>>` tokens), the mode, a working directory, environment additions and limits.
 */
export interface ExecRequest {
  /** The shell command, possibly holding `<<secret:NAME>>` / `<<decrypt:ID>>` tokens. */
  command: string;
  mode?: ExecMode;
  /** Working directory; default the gateway's cwd. */
  cwd?: string;
  /** Variables merged over the inherited environment (then sanitized). */
  env?: Record<string, string>;
  /** `merge` (default) puts `env` over the inherited environment; `replace` starts from `env` alone. */
  envMode?: 'merge' | 'replace';
  /** Milliseconds; 0 means the policy maximum (or none). Default: the policy's default for the mode. */
  timeout?: number;
  /** Absolute path of the shell run as `SHELL -c SCRIPT`. Default `/bin/bash`, else `/bin/sh`. */
  shell?: string;
  /** Milliseconds between SIGTERM and SIGKILL. */
  grace?: number;
  /** Bytes of each stream kept in memory before the middle is cut. */
  maxOutput?: number;
  /** Who asked (tool name, MCP session, CLI user): recorded in the audit log. */
  actor?: string;
  /** Processes the command leaves behind when its shell exits: `kill` (default) or `keep`. */
  leftovers?: 'kill' | 'keep';
  /**
   * Host-supplied shell text run before / after the command in the same shell (for example a
   * trap that prints the final working directory). Not shown in results, audit records or policy
   * decisions, which see `command` alone; never given to an agent to set. The prologue is
   * joined to the command's first line with `; ` (line numbers in the shell's messages stay the
   * command's own), so it must be a complete command list.
   */
  prologue?: string;
  epilogue?: string;
  /** PTY mode (and background with `pty: true`): terminal size. Default 120 x 30. */
  cols?: number;
  rows?: number;
  /** PTY output: `keep` escape sequences (default) or `strip` them (and turn `\r\n` into `\n`). */
  ansi?: 'keep' | 'strip';
  /** Background mode: run on a pseudo-terminal instead of pipes (so `write` can answer prompts). */
  pty?: boolean;
}

export interface NormalizedRequest {
  readonly command: string;
  readonly mode: ExecMode;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly envMode: 'merge' | 'replace';
  readonly timeout: number;
  readonly shell: string;
  readonly grace: number;
  readonly maxOutput: number;
  readonly actor: string;
  readonly leftovers: 'kill' | 'keep';
  readonly prologue: string;
  readonly epilogue: string;
  readonly cols: number;
  readonly rows: number;
  readonly ansi: 'keep' | 'strip';
  readonly pty: boolean;
}

const KNOWN_OPTIONS = new Set([
  'command', 'mode', 'cwd', 'env', 'envMode', 'timeout', 'shell', 'grace', 'maxOutput', 'actor', 'leftovers',
  'prologue', 'epilogue', 'cols', 'rows', 'ansi', 'pty',
]);

/*
 * Linux refuses a single argv string longer than MAX_ARG_STRLEN (32 pages = 131072 bytes,
 * terminating NUL included) with E2BIG. Checking it here turns an opaque spawn failure into a
 * clear error.
 */
export const MAX_COMMAND_BYTES = 131_071;

const ENV_NAME = /^[^=\0]+$/;

export interface OptionDefaults {
  readonly cwd: string;
  readonly shell: string;
  readonly policy: EffectivePolicy;
}

export function normalizeRequest(request: unknown, defaults: OptionDefaults): NormalizedRequest {
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    throw new ExecgateError('EXECGATE_ERR_INVALID_REQUEST', `Expected the request to be an object, got ${describeValue(request)}.`);
  }
  // Copy own enumerable properties to a null-prototype object so prototype tricks cannot
  // smuggle options in.
  const options = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(request)) options[key] = value;

  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(key)) {
      throw new ExecgateError(
        'EXECGATE_ERR_UNKNOWN_OPTION',
        `Unknown option \`${key}\`. Known options: ${[...KNOWN_OPTIONS].join(', ')}.`,
        { option: key },
      );
    }
  }

  const command = validateCommand(options.command);
  const mode = normalizeMode(options.mode);
  const policy = defaults.policy;
  const limits = policy.modes[mode];
  const timeout = normalizeTimeout(options.timeout, limits.defaultTimeout, limits.maxTimeout);
  const grace = normalizeNonNegative('grace', options.grace, policy.grace);
  const maxOutput = normalizeMaxOutput(options.maxOutput, policy.output.maxBytes);
  const env = normalizeEnv(options.env);
  const envMode = normalizeEnum('envMode', options.envMode, ['merge', 'replace'] as const, 'merge');
  const leftovers = normalizeEnum('leftovers', options.leftovers, ['kill', 'keep'] as const, 'kill');
  const shell = normalizeShell(options.shell, defaults.shell);
  const cwd = normalizeCwd(options.cwd, defaults.cwd);
  const actor = normalizeActor(options.actor);
  const prologue = normalizeScriptPart('prologue', options.prologue);
  const epilogue = normalizeScriptPart('epilogue', options.epilogue);

  const cols = normalizeTerminalSize('cols', options.cols, 120);
  const rows = normalizeTerminalSize('rows', options.rows, 30);
  const ansi = normalizeEnum('ansi', options.ansi, ['keep', 'strip'] as const, 'keep');
  const pty = normalizeBoolean('pty', options.pty, mode === 'pty');
  if (pty && mode === 'sync') {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_OPTION',
      'The `pty` option applies to `background` runs; for a foreground run on a terminal use `mode: \'pty\'`.',
      { option: 'pty' },
    );
  }

  return Object.freeze({
    command, mode, cwd, env, envMode, timeout, shell, grace, maxOutput, actor, leftovers, prologue, epilogue, cols, rows, ansi, pty,
  });
}

export function validateCommand(command: unknown): string {
  if (typeof command !== 'string' || command.trim() === '') {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_COMMAND',
      `Expected the \`command\` option to be a non-empty string, got ${describeValue(command)}.`,
    );
  }
  if (command.includes('\0')) {
    throw new ExecgateError(
      'EXECGATE_ERR_COMMAND_NUL',
      `The \`command\` contains a NUL byte at index ${command.indexOf('\0')}; a shell cannot receive it. Remove it or pass binary data through a file.`,
    );
  }
  validateCommandLength(command);
  return command;
}

export function validateCommandLength(command: string): void {
  const bytes = Buffer.byteLength(command);
  if (bytes > MAX_COMMAND_BYTES) {
    throw new ExecgateError(
      'EXECGATE_ERR_COMMAND_TOO_LONG',
      `The \`command\` is ${bytes} bytes; Linux accepts at most ${MAX_COMMAND_BYTES} bytes in one argument. Put the script in a file and run the file instead.`,
      { bytes, max: MAX_COMMAND_BYTES },
    );
  }
}

function normalizeMode(mode: unknown): ExecMode {
  if (mode === undefined) return 'sync';
  if (typeof mode !== 'string' || !(EXEC_MODES as readonly string[]).includes(mode)) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_MODE',
      `Expected the \`mode\` option to be one of ${EXEC_MODES.map((m) => `\`${m}\``).join(', ')}, got ${describeValue(mode)}.`,
    );
  }
  return mode as ExecMode;
}

function normalizeTimeout(timeout: unknown, fallback: number, max: number): number {
  if (timeout === undefined) return fallback;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_TIMEOUT',
      `Expected the \`timeout\` option to be a non-negative finite number of milliseconds, got ${describeValue(timeout)}.`,
    );
  }
  const wanted = Math.ceil(timeout);
  if (max > 0 && (wanted === 0 || wanted > max)) return max;
  return wanted;
}

function normalizeNonNegative(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidOption(name, value, `a non-negative finite number of milliseconds`);
  }
  return Math.ceil(value);
}

function normalizeMaxOutput(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1024) {
    throw invalidOption('maxOutput', value, `an integer of at least 1024 bytes`);
  }
  return value;
}

function normalizeEnum<T extends string>(name: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidOption(name, value, `one of ${allowed.map((a) => `\`${a}\``).join(', ')}`);
  }
  return value as T;
}

function normalizeEnv(env: unknown): Readonly<Record<string, string>> {
  const result = Object.create(null) as Record<string, string>;
  if (env === undefined) return Object.freeze(result);
  if (env === null || typeof env !== 'object' || Array.isArray(env)) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_ENV',
      `Expected the \`env\` option to be an object of strings, got ${describeValue(env)}.`,
    );
  }
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_ENV',
        `The \`env\` option has an invalid variable name ${describeValue(name)}: names must be non-empty and contain no \`=\` or NUL.`,
        { variable: name },
      );
    }
    if (typeof value !== 'string') {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_ENV',
        `Expected \`env.${name}\` to be a string, got ${describeValue(value)}. Convert numbers and booleans to strings.`,
        { variable: name },
      );
    }
    if (value.includes('\0')) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_ENV',
        `\`env.${name}\` contains a NUL byte, which an environment variable cannot hold.`,
        { variable: name },
      );
    }
    result[name] = value;
  }
  // Before any reference resolves: too large to ever be passed, cold or warm.
  validateRequestEnvSize(result);
  return Object.freeze(result);
}

function normalizeShell(shell: unknown, fallback: string): string {
  if (shell === undefined) return fallback;
  if (typeof shell !== 'string' || !isAbsolute(shell)) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_SHELL',
      `Expected the \`shell\` option to be an absolute path such as \`/bin/bash\`, got ${describeValue(shell)}.`,
    );
  }
  try {
    accessSync(shell, constants.X_OK);
    if (!statSync(shell).isFile()) throw new Error('not a file');
  } catch {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_SHELL',
      `The shell \`${shell}\` is not an executable file. Give the absolute path of an installed shell.`,
      { shell },
    );
  }
  return shell;
}

function normalizeCwd(cwd: unknown, fallback: string): string {
  const wanted = cwd === undefined ? fallback : cwd;
  if (typeof wanted !== 'string' || wanted === '') {
    throw new ExecgateError('EXECGATE_ERR_INVALID_CWD', `Expected the \`cwd\` option to be a non-empty string, got ${describeValue(cwd)}.`);
  }
  if (wanted.includes('\0')) {
    throw new ExecgateError('EXECGATE_ERR_INVALID_CWD', 'The `cwd` option contains a NUL byte.');
  }
  const absolute = resolve(fallback, wanted);
  let stats;
  try {
    stats = statSync(absolute);
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_ERR_CWD_NOT_FOUND',
      `The working directory \`${absolute}\` does not exist (${(error as NodeJS.ErrnoException).code ?? 'error'}). Create it or pass an existing directory as \`cwd\`.`,
      { cwd: absolute },
    );
  }
  if (!stats.isDirectory()) {
    throw new ExecgateError(
      'EXECGATE_ERR_CWD_NOT_DIRECTORY',
      `The working directory \`${absolute}\` is not a directory.`,
      { cwd: absolute },
    );
  }
  return absolute;
}

function normalizeTerminalSize(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 10_000) {
    throw invalidOption(name, value, `an integer from 1 to 10000`);
  }
  return value;
}

function normalizeBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw invalidOption(name, value, `a boolean`);
  }
  return value;
}

function normalizeScriptPart(name: string, value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || value.includes('\0')) {
    throw invalidOption(name, value, `a string without NUL bytes`);
  }
  return value;
}

function normalizeActor(actor: unknown): string {
  if (actor === undefined) return 'library';
  if (typeof actor !== 'string' || actor.length === 0 || actor.length > 200) {
    throw invalidOption('actor', actor, `a string of 1 to 200 characters`);
  }
  return actor;
}

/** `/bin/bash` where installed, else `/bin/sh`. */
export function getDefaultShell(): string {
  try {
    accessSync('/bin/bash', constants.X_OK);
    return '/bin/bash';
  } catch {
    return '/bin/sh';
  }
}
