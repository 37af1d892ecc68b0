/*
 * One catalog of every error execgate raises. A code is a stable string that callers, the CLI,
 * MCP clients and ops tooling match on; it is never reused for another meaning and never
 * renamed. Each code is documented in docs/errors.md (a test checks both directions).
 *
 * Messages are written at the throw site (they say what was wrong and how to fix it); the
 * catalog holds the one-line summary. A message must never contain a resolved secret value:
 * errors name references (`<<secret:NAME>>`), never what they resolve to.
 */

/**
 * Every error code execgate raises, with its one-line summary. A code is stable: never reused for
 * another meaning, never renamed.
 */
export const ERROR_CATALOG = {
  // --- request validation (plan/options) ---
  EXECGATE_ERR_INVALID_REQUEST: 'The request is not an object.',
  EXECGATE_ERR_INVALID_COMMAND: 'The `command` is not a non-empty string.',
  EXECGATE_ERR_COMMAND_NUL: 'The `command` contains a NUL byte, which no shell can receive.',
  EXECGATE_ERR_COMMAND_TOO_LONG: 'The `command` is longer than the system allows for one argument.',
  EXECGATE_ERR_COMMAND_TOO_COMPLEX: 'The `command` nests quotes, substitutions or code deeper than the shell reader follows.',
  EXECGATE_ERR_UNKNOWN_OPTION: 'The request has an option execgate does not know.',
  EXECGATE_ERR_INVALID_MODE: 'The `mode` is not one of the supported modes.',
  EXECGATE_ERR_MODE_UNAVAILABLE: 'The requested mode is known but not available in this build or configuration.',
  EXECGATE_ERR_INVALID_TIMEOUT: 'The `timeout` is not a non-negative finite number of milliseconds.',
  EXECGATE_ERR_INVALID_ENV: 'The `env` is not an object of string values with valid names.',
  EXECGATE_ERR_ENV_NOT_REQUESTABLE: 'The request sets an environment variable the policy does not let requests set.',
  EXECGATE_ERR_INVALID_CWD: 'The `cwd` is not a non-empty string.',
  EXECGATE_ERR_CWD_NOT_FOUND: 'The working directory does not exist.',
  EXECGATE_ERR_CWD_NOT_DIRECTORY: 'The working directory is not a directory.',
  EXECGATE_ERR_INVALID_SHELL: 'The `shell` is not an absolute path to an executable file.',
  EXECGATE_ERR_INVALID_OPTION: 'A gateway or request option has an invalid value.',

  // --- reference tokens (refs) ---
  EXECGATE_ERR_REF_SOURCE_FAILED: 'A secret source could not answer for a reference; nothing was run.',
  EXECGATE_ERR_REF_UNSAFE_CONTEXT: 'A reference sits where no shell expansion can carry its value safely.',
  EXECGATE_ERR_REF_INVALID: 'A reference kind, name or value given to the RefStore is invalid.',
  EXECGATE_ERR_REF_TOO_SHORT: 'A reference resolved to a value shorter than the minimum maskable length.',
  EXECGATE_ERR_REF_UNKNOWN: 'The command names a reference no source knows, and the policy (`secrets.unknown: deny`) refuses to pass it on as text.',
  EXECGATE_ERR_REF_REPLACEMENT_INVALID: 'A replacement given to reference substitution does not fit the command.',

  // --- secret stores (keyring, vault) ---
  EXECGATE_ERR_SECRET_NAME_INVALID: 'A secret name, blob id, entry kind or label is not valid.',
  EXECGATE_ERR_SECRET_VALUE_INVALID: 'A secret value is empty, holds a NUL byte, is not UTF-8 or is too long.',
  EXECGATE_ERR_SECRET_NOT_FOUND: 'No store holds a secret by that name.',
  EXECGATE_ERR_KEYRING_UNAVAILABLE: 'No OS keyring is reachable (no D-Bus session or Secret Service).',
  EXECGATE_ERR_KEYRING_FAILED: 'The OS keyring was reachable but refused the operation (locked, access denied).',
  EXECGATE_ERR_VAULT_CORRUPT: 'The vault file is not a valid vault document (truncated, corrupt or foreign).',
  EXECGATE_ERR_VAULT_VERSION: 'The vault file has a format version this execgate does not read.',
  EXECGATE_ERR_VAULT_TAMPERED: 'The vault file failed authentication: an entry or the entry list was changed outside execgate.',
  EXECGATE_ERR_VAULT_WRONG_KEY: 'The vault key at hand is not the key the vault was written with.',
  EXECGATE_ERR_VAULT_KEY_MISSING: 'The vault exists but its key cannot be found.',
  EXECGATE_ERR_VAULT_KEY_INVALID: 'A vault key is not base64 of exactly 32 bytes.',
  EXECGATE_ERR_VAULT_KEY_PERMISSIONS: 'The vault key file may be read by other users, is a symlink or is not owned by the user.',
  EXECGATE_ERR_VAULT_KEY_EXTERNAL: 'The vault key comes from EXECGATE_VAULT_KEY, so execgate cannot rotate it.',
  EXECGATE_ERR_VAULT_LOCKED: 'Another process held the vault lock and made no progress (used no CPU) for longer than the wait allows.',
  EXECGATE_ERR_VAULT_IO: 'The vault or its key file could not be read or written.',

  // --- execution (exec) ---
  EXECGATE_ERR_SPAWN_FAILED: 'The shell could not be started.',
  EXECGATE_ERR_GATEWAY_CLOSED: 'The gateway was closed; it accepts no new requests.',
  EXECGATE_ERR_SPECIAL_FILE: 'A path names a FIFO, device, socket or a file under /proc, /sys or /dev, which execgate refuses to open.',
  EXECGATE_ERR_STATE_DIR: 'The state directory ($EXECGATE_HOME) could not be created or written.',
  EXECGATE_ERR_BACKGROUND_NOT_FOUND: 'No background process has that id.',
  EXECGATE_ERR_BACKGROUND_ENDED: 'The background process has ended (or closed its input); nothing was written.',
  EXECGATE_ERR_BACKGROUND_LIMIT: 'The maximum number of concurrent background processes is reached.',
  EXECGATE_ERR_BACKGROUND_RUNNING: 'The background process is still running; kill it before removing it.',
  EXECGATE_ERR_BACKGROUND_IO: 'The output file of a background process could not be created (a full disk, a read-only file system); nothing was started.',

  // --- sandbox ---
  EXECGATE_ERR_SANDBOX_UNAVAILABLE: 'The policy requires a sandbox and this platform cannot start one; nothing was run.',
  EXECGATE_ERR_SANDBOX_PATH: 'The working directory lies inside a path the sandbox hides; nothing was run.',
  EXECGATE_ERR_SANDBOX_MISMATCH: 'The sandbox, once set up, did not match its plan (a mount differed), so the command was not started; nothing was run.',
  EXECGATE_ERR_SANDBOX_FAILED: 'The sandbox could not be set up for this run; nothing was run.',
  EXECGATE_ERR_WORKSPACE_HOLDS_HOME: 'A writable workspace is the home directory or holds it; runs may not write beside the credential files.',

  // --- policy ---
  EXECGATE_ERR_POLICY_WRITTEN_BY_RUN: 'A policy file changed while a sandboxed run that could write it was running; it was not loaded.',
  EXECGATE_ERR_POLICY_DENIED: 'The policy refused the request.',
  EXECGATE_ERR_POLICY_INVALID: 'A policy file is not valid (syntax, schema, or contradicting settings); it was not loaded.',
  EXECGATE_ERR_POLICY_SOURCE_INVALID: 'A `secrets.sources` entry is not valid (a reserved or repeated name, a reference other than `secret:`, no time limit).',
  EXECGATE_ERR_POLICY_NOT_FOUND: 'A policy file, or a policy it extends, cannot be read.',
  EXECGATE_ERR_POLICY_EXTENDS_CYCLE: 'Policy files extend each other in a circle.',
  EXECGATE_ERR_CWD_OUTSIDE_ROOTS: 'The gateway\'s working directory is outside the policy\'s `cwd.roots`; it did not start.',
  EXECGATE_ERR_POLICY_INIT_EXISTS: '`execgate policy init` was asked to write a file that already exists.',
  EXECGATE_ERR_POLICY_TOO_LARGE: 'A policy file is larger than execgate reads.',

  // --- redaction (redact) ---
  EXECGATE_ERR_REDACT_INVALID_INPUT: 'A value, label or option given to the redactor has the wrong type or range.',

  // --- tools and agent ---
  EXECGATE_ERR_TOOL_INVALID: 'A tool given to the registry has an invalid name or schema.',
  EXECGATE_ERR_TOOL_DUPLICATE: 'A tool with that name is already registered.',
  EXECGATE_ERR_TOOL_UNKNOWN: 'No tool with that name is registered.',
  EXECGATE_ERR_TOOL_ARGS_INVALID: 'The arguments of a tool call do not match the tool\'s schema.',
  EXECGATE_ERR_PATH_INVALID: 'A file tool was given a path that is empty, not a string or holds a NUL byte.',
  EXECGATE_ERR_PATH_OUTSIDE_ROOT: 'A file tool path leads outside the allowed root directories.',
  EXECGATE_ERR_FILE_TOO_LARGE: 'A file to read or content to write is larger than the file tools allow.',
  EXECGATE_ERR_FILE_OP_FAILED: 'A file tool operation failed (missing file, wrong type, already exists, permission).',
  EXECGATE_ERR_SEARCH_PATTERN_INVALID: 'A search pattern is not a valid regular expression or glob.',
  EXECGATE_ERR_AGENT_MAX_ITERATIONS: 'The agent reached its limit of model calls for one message.',
  EXECGATE_ERR_AGENT_CLIENT_MISSING: 'The agent needs the `openai` package (an optional peer dependency), which is not installed.',

  // --- audit ---
  EXECGATE_ERR_AUDIT_KEY_MISSING: 'No audit key was found (EXECGATE_AUDIT_KEY, the key file or --key-file) to verify the audit log.',
  EXECGATE_ERR_AUDIT_KEY_INVALID: 'An audit key is not base64 of exactly 32 bytes.',
  EXECGATE_ERR_AUDIT_KEY_PERMISSIONS: 'The audit key file may be read by other users, is a symlink or is not owned by the user.',
  EXECGATE_ERR_AUDIT_IO: 'The audit log, its key file or its chain state could not be read or written.',
  EXECGATE_ERR_AUDIT_LOCKED: 'Another process held the audit log lock and made no progress (used no CPU) for longer than the wait allows.',
  EXECGATE_ERR_AUDIT_IN_WORKSPACE: 'The audit log\'s directory is (or holds) a directory sandboxed runs may write; the gateway was not started.',
  EXECGATE_ERR_AUDIT_TAIL_INVALID: 'The end of the audit log does not verify under the audit key, so the chain cannot be extended.',
  EXECGATE_ERR_AUDIT_NOT_FOUND: 'There is no audit log file to read, or no record of the requested run.',

  // --- mcp ---
  EXECGATE_ERR_MCP_UNAUTHORIZED: 'An MCP HTTP request had no bearer token, or not the right one.',
  EXECGATE_ERR_MCP_HOST_REFUSED: 'An MCP HTTP request named a Host or Origin this server does not answer to (DNS rebinding protection).',
  EXECGATE_ERR_MCP_SESSION_NOT_FOUND: 'An MCP HTTP request named a session id the server does not have.',
  EXECGATE_ERR_MCP_MESSAGE_TOO_LARGE: 'A JSON-RPC message on the stdio transport was larger than the server reads; it was refused and the session goes on.',
  EXECGATE_ERR_MCP_REQUEST_TOO_LARGE: 'An MCP HTTP request body was larger than the server accepts (HTTP 413).',
  EXECGATE_ERR_MCP_TRANSPORT_UNSUPPORTED: 'A client asked for the deprecated HTTP+SSE transport on a server that has it turned off.',
  EXECGATE_ERR_MCP_REMOTE_REFUSED: 'The MCP HTTP server was asked to listen on a non-loopback address without --allow-remote.',
  EXECGATE_ERR_MCP_TOKEN_INVALID: 'EXECGATE_MCP_TOKEN is too short or holds characters a header cannot carry.',
  EXECGATE_ERR_MCP_LISTEN_FAILED: 'The MCP HTTP server could not listen on the requested address and port.',
  EXECGATE_ERR_MCP_AUDIT_STDOUT: 'The policy sends the audit log to stdout, which the stdio MCP transport needs for the protocol.',

  // --- egress (network path) ---
  EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID: 'A host pattern in `sandbox.network` or `secrets.bind` is not valid syntax.',
  EXECGATE_ERR_AWS_CREDENTIAL_INVALID: 'The value of a `delivery: aws-sigv4` binding is not an AWS credential (JSON with accessKeyId and secretAccessKey).',
  EXECGATE_ERR_AWS_REF_IN_COMMAND: 'A command names a reference bound with `delivery: aws-sigv4`; the run gets a placeholder key pair instead.',
  EXECGATE_ERR_EGRESS_BIND_INVALID: 'A `secrets.bind` entry is not valid (no hosts, unknown delivery, bad reference).',
  EXECGATE_ERR_EGRESS_UNREACHABLE: 'A bound secret used by the request can never reach any of its hosts under the network policy; nothing was run.',
  EXECGATE_ERR_EGRESS_NEEDS_SANDBOX: 'A secret bound to hosts (`secrets.bind`) was used by a run that has no sandbox, so the binding could not be enforced; nothing was run.',
  EXECGATE_ERR_SSH_KEY_INVALID: 'An SSH private key (`secret set --ssh-key`, or a secret bound with `delivery: ssh-agent`) is encrypted, a public key, several keys or no key; nothing was stored or run.',
  EXECGATE_ERR_SSH_HOST_KEY_INVALID: 'A `hostKeys` entry of a `delivery: ssh-agent` binding is not an OpenSSH public-key line.',
  EXECGATE_ERR_SSH_AGENT_FAILED: "The run's SSH agent (its socket or known-hosts file) could not be set up; nothing was run.",
  EXECGATE_ERR_EGRESS_CA_FAILED: 'The per-gateway certificate authority for TLS interception could not be created or written.',
  EXECGATE_ERR_EGRESS_PROXY_FAILED: 'The egress proxy could not open the socket for a run.',
  EXECGATE_ERR_EGRESS_TCP_INVALID: 'A `sandbox.network.tcp` or `hostServices` entry is not valid (no port, an IP literal, a wildcard, a port out of range, a socket path that is not plain or lies under /run, or set with `mode: none`).',
  EXECGATE_ERR_EGRESS_UPSTREAM_INVALID: 'The way the egress proxy leaves (`sandbox.network.upstream`, or the gateway\'s own HTTPS_PROXY / HTTP_PROXY) is not valid, or a CA file it names cannot be read.',

  // --- CLI ---
  EXECGATE_ERR_CLI_USAGE: 'The command line is not valid.',
  EXECGATE_ERR_CLI_ARGV_ENCODING: 'A command-line argument is not valid UTF-8; nothing was run.',
  EXECGATE_ERR_UNEXPECTED: 'An unexpected internal error; please report it with the command that caused it.',
} as const;

/**
 * One of the error codes of {@link ERROR_CATALOG}.
 */
export type ErrorCode = keyof typeof ERROR_CATALOG;

/**
 * Every error execgate raises: `code` is one of {@link ERROR_CATALOG}'s keys (documented in
 * docs/errors.md), the message says what was wrong and how to fix it, `details` carries structured
 * fields. Neither ever holds a resolved value.
 */
export class ExecgateError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExecgateError';
    this.code = code;
    this.details = Object.freeze({ ...details });
  }

  /** The one-line form the CLI and tool results print. */
  toLine(): string {
    return `${this.code}: ${this.message}`;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message, details: this.details };
  }
}

/**
 * True when `value` is an {@link ExecgateError}; narrows its type.
 */
export function isExecgateError(value: unknown): value is ExecgateError {
  return value instanceof ExecgateError;
}

/**
 * EXECGATE_ERR_INVALID_OPTION for an option of the wrong shape, in the one wording every option
 * uses: "Expected the [OF ]`NAME` option to be EXPECTED, got WHAT IT WAS.[ THEN]" (`of`: whose
 * option, such as `audit` or `kill`; `then`: what did not happen). `details.option` names it.
 */
export function invalidOption(option: string, value: unknown, expected: string, words: { of?: string; then?: string } = {}): ExecgateError {
  const of = words.of ? `${words.of} ` : '';
  const then = words.then ? ` ${words.then}` : '';
  return new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected the ${of}\`${option}\` option to be ${expected}, got ${describeValue(value)}.${then}`, { option });
}

/**
 * EXECGATE_ERR_SPAWN_FAILED in the one wording every way of starting a process uses (direct,
 * spawn helper, terminal, the run's lifecycle, the background supervisor): "Could not start
 * WHAT: WHY.[ THEN]" (`then`: what to check or do). Nothing of the command's text is in it
 * beyond what the caller names (a shell path, a directory).
 */
export function spawnFailed(what: string, reason: string, options: { then?: string; details?: Record<string, unknown>; cause?: unknown } = {}): ExecgateError {
  const then = options.then ? ` ${options.then}` : '';
  return new ExecgateError('EXECGATE_ERR_SPAWN_FAILED', `Could not start ${what}: ${reason}.${then}`, options.details ?? {}, options.cause === undefined ? undefined : { cause: options.cause });
}

/** Describe a value for an error message without echoing long or secret-bearing input. */
export function describeValue(value: unknown): string {
  if (value === null) return '`null`';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  if (type === 'string') {
    const text = value as string;
    return text.length > 40 ? `a string of ${text.length} characters` : `\`${JSON.stringify(text)}\` (string)`;
  }
  if (type === 'number' || type === 'boolean' || type === 'bigint') return `\`${String(value)}\` (${type})`;
  return `a value of type ${type}`;
}

/** The code of an error for records and results: its own, or EXECGATE_ERR_UNEXPECTED. */
export function getErrorCode(error: unknown, fallback: ErrorCode = 'EXECGATE_ERR_UNEXPECTED'): ErrorCode {
  return isExecgateError(error) ? error.code : fallback;
}

/** The message of anything thrown. */
export function getErrorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * `error` with `mask` applied to its message and to the strings of its details (the same error
 * when nothing changed): for errors that leave the gateway naming a path a run may have named
 * after a resolved value.
 */
export function maskError(error: unknown, mask: (text: string) => string): unknown {
  if (!isExecgateError(error)) {
    if (!(error instanceof Error)) return error;
    const message = mask(error.message);
    return message === error.message ? error : new Error(message);
  }
  let changed = false;
  const details: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error.details)) {
    details[key] = typeof value === 'string' ? mask(value) : value;
    if (details[key] !== value) changed = true;
  }
  const message = mask(error.message);
  if (!changed && message === error.message) return error;
  return new ExecgateError(error.code, message, details);
}
