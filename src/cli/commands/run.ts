/*
 * `execgate run [options] -- COMMAND`: one request through the gateway's one path.
 * What the words after `--` mean is in ../argv.ts; what is said on stderr besides the
 * command's output (dropped --env entries, unknown references) in ../notices.ts.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { createGateway, type Gateway } from '../../gateway';
import { getCurrentUser } from '../user';
import { ExecgateError, isExecgateError } from '../../errors';
import type { ExecResult } from '../../run/result';
import { getUnknownRefs } from '../../policy/unknown-refs';
import { scanTokens } from '../../refs/tokens';
import type { RefKind } from '../../refs/types';
import { getCommandText } from '../argv';
import { CliExit, EXIT_EXECGATE_ERROR, EXIT_TIMEOUT, formatCliError, type CliIo, usageError } from '../io';
import { createCliLogger, getEnvNotices } from '../notices';
import { constants as osConstants } from 'node:os';

interface RunFlags {
  json?: boolean;
  mode?: string;
  cwd?: string;
  timeout?: string;
  env: string[];
  shell?: string;
  policy?: string;
  envReplace?: boolean;
  keep?: boolean;
  pty?: boolean;
  cols?: string;
  rows?: string;
  ansi?: string;
  verbose?: boolean;
}

const TOKEN_HELP = `
The command:
  One argument after -- is a shell command, run by the shell as written (pipes, ;, $VARS):
    execgate run -- 'ls -la | wc -l'
  Several arguments are a program and its arguments, run exactly as given, as with sudo, env,
  op run and docker run: each word stays one word (quotes your shell removed are not needed
  again; ; $ * are plain text), and reference tokens inside a word are still resolved:
    execgate run -- curl -H "Authorization: Bearer <<secret:api-token>>" https://api.example.com
  sends the header as one argument, with the token's value in it.

Reference tokens:
  <<secret:NAME>>   a named secret, from (first hit wins) values the host registered,
                    EXECGATE_SECRET_<NAME> in execgate's environment (NAME upper-cased,
                    - . / as _), the OS keyring, and the encrypted vault.
  <<decrypt:ID>>    an encrypted value from the vault, by id (see \`execgate encrypt\`).
  {{secret:NAME}}, {{decrypt:ID}} are accepted as aliases.
  NAME/ID: 1-128 characters of A-Z a-z 0-9 . _ - /, starting with a letter or digit.
  A token no source knows stays in the command as written, and a warning on stderr names it
  with the closest names the stores know (a policy with \`secrets.unknown: deny\` refuses the
  run instead). Resolved values are passed to the
  shell through its environment (never its argv or the command text), and every occurrence of a
  value in the output is replaced by [REDACTED:secret:NAME].

--env entries the command will not see as given (a hazard like LD_PRELOAD, a secret-looking
name like GITHUB_TOKEN) are named on stderr, never their values.

Exit status: the command's own; 124 when it timed out; 128+N when killed by signal N;
2 when the command line is not valid; 125 when execgate refused or failed (a one-line coded
error on stderr, \`execgate: EXECGATE_ERR_...: ...\`; codes in docs/errors.md).
With --json: one JSON object on stdout; exit 0 unless execgate itself failed.

Examples:
  execgate run -- 'curl -sH "Authorization: Bearer <<secret:api-token>>" https://example.com'
  execgate run -- curl -sH "Authorization: Bearer <<secret:api-token>>" https://example.com
  execgate run --json --timeout 5 --cwd /tmp -- ls -la
`;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function registerRunCommand(program: Command, io: CliIo): void {
  program
    .command('run')
    .description('Run a shell command through the gateway: policy, token resolution, sanitized environment, redacted output')
    .usage('[options] -- COMMAND')
    .argument('<command...>', 'one argument: a shell command; several: a program and its arguments, run exactly as given')
    .option('--json', 'print one JSON object with the whole result instead of streaming output')
    .option('--mode <mode>', 'sync, pty or background', 'sync')
    .option('--cwd <dir>', 'working directory (default: the current directory)')
    .option('--timeout <seconds>', 'kill the command after this many seconds (default: the policy default)')
    .option('--env <KEY=VALUE>', 'set a variable for the command (repeatable)', collect, [])
    .option('--env-replace', 'start from the --env variables alone instead of inheriting the environment')
    .option('--shell <path>', 'absolute path of the shell (default /bin/bash)')
    .option('--policy <file>', 'policy file (YAML or JSON; default $EXECGATE_POLICY, else the embedded default)')
    .option('--keep', 'leave processes the command started in the background running after it exits')
    .option('--pty', 'background mode: run on a pseudo-terminal instead of pipes')
    .option('--cols <n>', 'pty: terminal columns (default 120)')
    .option('--rows <n>', 'pty: terminal rows (default 30)')
    .option('--ansi <keep|strip>', 'pty: keep or strip terminal escape sequences (default keep)')
    .option('--verbose', 'also say what is usually noise (no OS keyring on a machine without a desktop session)')
    .passThroughOptions()
    .addHelpText('after', TOKEN_HELP)
    .action(async (words: string[], flags: RunFlags) => {
      await runAction(words, flags, io);
    });
}

function parseEnv(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usageError(`Expected --env KEY=VALUE, got \`${pair}\`.`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

function parseInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value)) throw usageError(`Expected ${flag} to be an integer, got \`${text}\`.`);
  return value;
}

function parseTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seconds = Number(text);
  if (text.trim() === '' || !Number.isFinite(seconds) || seconds < 0) {
    throw new ExecgateError('EXECGATE_ERR_INVALID_TIMEOUT', `Expected --timeout to be a non-negative number of seconds, got \`${text}\`.`);
  }
  return Math.round(seconds * 1000);
}

const STOP_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGTERM'] as const;

async function runAction(words: string[], flags: RunFlags, io: CliIo): Promise<void> {
  // --policy, else $EXECGATE_POLICY, else the embedded default. An invalid file stops here.
  const policyFile = flags.policy ?? (io.env.EXECGATE_POLICY || undefined);
  const command = getCommandText(words);
  const background = flags.mode === 'background';
  // --cwd is where the gateway itself works: a policy with `cwd.roots` then checks that
  // directory, not the one execgate was started from.
  const cwd = flags.cwd === undefined ? io.cwd : resolve(io.cwd ?? process.cwd(), flags.cwd);
  // A CLI process is short-lived: background runs get their own supervisor and outlive it.
  const gateway = createGateway({
    env: io.env,
    cwd,
    // One run: a sandbox set up for a next run would only be ended again.
    warmSandboxes: 0,
    logger: createCliLogger(io, { verbose: flags.verbose === true }),
    ...(policyFile !== undefined ? { policyFile } : {}),
    ...(background ? { backgroundLauncher: 'detached' as const, backgroundOnClose: 'keep' as const } : {}),
  });
  // A closing terminal (SIGHUP), Ctrl-C or a supervisor's SIGTERM ends the run the way a
  // gateway shutdown does: its group is stopped and swept, and its end is recorded. A second
  // signal takes the default action; the containment watchdog then ends what is left.
  const stopOnSignal = (): void => { void gateway.close(); };
  for (const signal of STOP_SIGNALS) process.once(signal, stopOnSignal);
  const request = {
    command,
    mode: flags.mode as 'sync',
    cwd,
    env: parseEnv(flags.env),
    envMode: flags.envReplace ? 'replace' as const : 'merge' as const,
    timeout: parseTimeout(flags.timeout),
    shell: flags.shell,
    actor: `cli:${getCurrentUser()}`,
    leftovers: flags.keep ? 'keep' as const : 'kill' as const,
    ...(flags.pty ? { pty: true } : {}),
    ...(flags.cols !== undefined ? { cols: parseInteger('--cols', flags.cols) } : {}),
    ...(flags.rows !== undefined ? { rows: parseInteger('--rows', flags.rows) } : {}),
    ...(flags.ansi !== undefined ? { ansi: flags.ansi as 'keep' } : {}),
  };
  for (const notice of getEnvNotices(request.env, gateway.policy, flags.mode === 'pty' || flags.pty === true)) io.stderr.write(`execgate: note: ${notice}\n`);
  if (background) {
    try {
      const started = await gateway.exec({ ...request, mode: 'background' }).catch((error: unknown) => reportRefusal(error, io));
      io.stdout.write(flags.json ? `${JSON.stringify(started, null, 2)}\n` : `${started.id}\n`);
      await warnUnknownRefs(await findUnknownRefs(gateway, command), io);
    } finally {
      await gateway.close();
    }
    return;
  }
  let result: ExecResult;
  try {
    result = await gateway.exec(
      request,
      flags.json ? {} : { onOutput: (stream, chunk) => { (stream === 'stdout' ? io.stdout : io.stderr).write(chunk); } },
    ).catch((error: unknown) => reportRefusal(error, io));
  } finally {
    for (const signal of STOP_SIGNALS) process.removeListener(signal, stopOnSignal);
    await gateway.close();
  }
  await warnUnknownRefs(getUnknownRefs(result.refs), io);
  if (flags.json) {
    io.stdout.write(`${JSON.stringify(toJsonResult(result), null, 2)}\n`);
    return;
  }
  if (result.timedOut) io.stderr.write(`execgate: ${result.message}\n`);
  for (const notice of result.notices ?? []) io.stderr.write(`execgate: notice: ${notice}\n`);
  throw new CliExit(getExitStatus(result));
}

/** A background run's result carries no references: ask the stores again (names only are kept). */
async function findUnknownRefs(gateway: Gateway, command: string): Promise<string[]> {
  const tokens = scanTokens(command, { alias: gateway.policy.secrets.alias });
  const refs = await Promise.all([...new Map(tokens.map((t) => [`${t.kind}:${t.id}`, t])).values()].map((t) => gateway.refs.lookup(t.kind, t.id)));
  return getUnknownRefs(refs);
}

/** `<<secret:NAME>>` -> ['secret', 'NAME']. */
function splitRef(ref: string): [RefKind, string] {
  const match = /^<<(secret|decrypt):(.*)>>$/.exec(ref);
  return [(match?.[1] ?? 'secret') as RefKind, match?.[2] ?? ref];
}

/** " (did you mean <<secret:github-token>>?)" from the names the stores list, or nothing. */
async function getSuggestion(ref: string, io: CliIo): Promise<string> {
  const [kind, name] = splitRef(ref);
   
  const { getKnownRefNames } = require('../known-refs') as typeof import('../known-refs');
  const { suggestNames } = require('../../refs/suggest') as typeof import('../../refs/suggest');
   
  const close = suggestNames(name, await getKnownRefNames(io, kind));
  return close.length === 0 ? '' : ` (did you mean ${close.map((n) => `<<${kind}:${n}>>`).join(' or ')}?)`;
}

async function warnUnknownRefs(unknown: readonly string[], io: CliIo): Promise<void> {
  for (const ref of unknown) {
    io.stderr.write(`execgate: warning: no source knows ${ref}; it was passed on as written${await getSuggestion(ref, io)}\n`);
  }
}

/** A refusal for unknown references: the coded line, then a suggestion per reference. */
async function reportRefusal(error: unknown, io: CliIo): Promise<never> {
  if (!isExecgateError(error) || error.code !== 'EXECGATE_ERR_REF_UNKNOWN') throw error;
  io.stderr.write(`${formatCliError(error)}\n`);
  for (const ref of (error.details.refs as string[] | undefined) ?? []) {
    const suggestion = await getSuggestion(ref, io);
    if (suggestion !== '') io.stderr.write(`execgate: ${ref}${suggestion}\n`);
  }
  throw new CliExit(EXIT_EXECGATE_ERROR);
}

export function getExitStatus(result: ExecResult): number {
  if (result.timedOut) return EXIT_TIMEOUT;
  if (result.exitCode !== null) return result.exitCode;
  const number = result.signal ? (osConstants.signals as Record<string, number>)[result.signal] : undefined;
  return 128 + (number ?? 0);
}

/** The CLI's JSON shape (snake_case, stable). */
export function toJsonResult(result: ExecResult): Record<string, unknown> {
  return {
    id: result.id,
    command: result.command,
    mode: result.mode,
    cwd: result.cwd,
    stdout: result.stdout,
    stderr: result.stderr,
    output: result.output,
    exit_code: result.exitCode,
    signal: result.signal,
    timed_out: result.timedOut,
    killed: result.killed,
    truncated: result.truncated,
    duration_ms: result.durationMs,
    redactions: result.redactions,
    env_removed: result.env.removed,
    env_withheld: result.env.withheld,
    refs: result.refs,
    sandbox: result.sandbox,
    message: result.message,
    ...(result.fullOutputPath ? { full_output_path: result.fullOutputPath } : {}),
    ...(result.notices ? { notices: result.notices } : {}),
  };
}
