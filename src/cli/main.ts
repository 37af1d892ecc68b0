#!/usr/bin/env node
/*
 * The execgate command. Each subcommand lives in its own module; this file only wires them
 * up, turns errors into one coded line on stderr, and maps outcomes to exit statuses:
 * help asked for (or a command group named without a subcommand) is printed on stdout with
 * status 0; a command line that cannot be understood is status 2 with a pointer to the help of
 * the command it was meant for; execgate refusing or failing is 125.
 */
import { getCodeCacheFile, installCodeCache } from './code-cache';
import { closePrestartedSharedNetworks, prestartRun, whenPrestarted } from './prestart';
// The modules below, and every one loaded after them, from the build's code cache (code-cache.ts);
// a default-policy run's shared network namespace started while they load (prestart.ts).
if (require.main === module) {
  installCodeCache(getCodeCacheFile(process.argv.slice(2)));
  prestartRun(process.argv.slice(2), process.env);
  // A run's records, and a server's runs back to back, under one turn of the audit lock: these
  // processes never hold their event loop up while they keep it (audit/lock.ts).
  if (process.argv[2] === 'run' || process.argv[2] === 'mcp') (require('../audit/lock') as typeof import('../audit/lock')).useAuditLeases();
}
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ExecgateError, isExecgateError } from '../errors';
import { CliExit, EXIT_CANCELLED, EXIT_EXECGATE_ERROR, EXIT_USAGE, EXIT_STATUS_HELP, formatCliError, type CliIo } from './io';

const { version } = require('../../package.json') as { version: string };

/** Thrown from commander's exit hook: the error, and the command line it belongs to. */
class UsageExit extends Error {
  readonly error: CommanderError;
  readonly command: string;
  constructor(error: CommanderError, command: string) {
    super(error.message);
    this.error = error;
    this.command = command;
  }
}

function getCommandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current; current = current.parent) names.unshift(current.name());
  return names.join(' ');
}

/**
 * `only: 'run'` registers the run command alone: `execgate run` is what scripts call over and
 * over, and it starts faster without loading the other commands' modules (policy tools, secret
 * stores, audit review, MCP server). What it does is the same either way.
 */
export function buildProgram(io: CliIo, only?: 'run'): Command {
  const program = new Command();
  program
    .name('execgate')
    .description(
      'A security-hardened exec gateway: runs shell commands for agents with policy checks, ' +
        '<<secret:NAME>> / <<decrypt:ID>> reference tokens resolved just before spawn, a sanitized ' +
        'environment, containment of everything the command starts, and redacted output.',
    )
    .version(version)
    .enablePositionalOptions()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      // Commander writes help to stderr when a group is named without a subcommand; that help
      // is what the person asked for, so it goes to stdout like `--help` (errors are printed
      // by main() as one coded line, never through here).
      writeErr: (text) => io.stdout.write(text),
      outputError: () => { /* printed as a coded line by main() */ },
    })
    .addHelpText('after', EXIT_STATUS_HELP);
  // Loaded here, not with this module: the gateway's modules, which it loads, come after a
  // default-policy run's holder has started (prestart.ts; main() waits for that first).
  (require('./commands/run') as typeof import('./commands/run')).registerRunCommand(program, io);
  if (only !== 'run') {
    (require('./commands/background') as typeof import('./commands/background')).registerBackgroundCommands(program, io);
    (require('./commands/demo') as typeof import('./commands/demo')).registerDemoCommand(program, io);
    (require('./commands/secret') as typeof import('./commands/secret')).registerSecretCommands(program, io);
    (require('./commands/policy') as typeof import('./commands/policy')).registerPolicyCommands(program, io);
    (require('./commands/audit') as typeof import('./commands/audit')).registerAuditCommands(program, io);
    (require('./commands/mcp') as typeof import('./commands/mcp')).registerMcpCommand(program, io);
  }
  // Every command reports its own exit through one hook that remembers which command it was,
  // so a usage error can point at that command's help rather than the top-level one.
  const hook = (command: Command): void => {
    command.exitOverride((error) => { throw new UsageExit(error, getCommandPath(command)); });
    command.commands.forEach(hook);
  };
  hook(program);
  return program;
}

/** Exit status and stderr line for a commander outcome (help, version, usage error). */
function handleUsageExit(exit: UsageExit, io: CliIo): number {
  const { error } = exit;
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.help' || error.code === 'commander.version') return 0;
  if (error.exitCode === 0) return 0;
  const message = error.message.replace(/^error: /, '');
  io.stderr.write(`${formatCliError(new ExecgateError('EXECGATE_ERR_CLI_USAGE', `${message} (see \`${exit.command} --help\`)`))}\n`);
  return EXIT_USAGE;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  await whenPrestarted();
  const program = buildProgram(io, argv[0] === 'run' ? 'run' : undefined);
  // Usage errors an action finds (a malformed --env, a bad --port) name the command too.
  let acting = 'execgate';
  program.hook('preAction', (_program, actionCommand) => { acting = getCommandPath(actionCommand); });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CliExit) return error.status;
    if (error instanceof UsageExit) return handleUsageExit(error, io);
    if (error instanceof CommanderError) return handleUsageExit(new UsageExit(error, 'execgate'), io);
    if (isExecgateError(error) && error.details.cancelled === true) {
      // Ctrl-C at a prompt: what the person meant, not a usage error (status as for SIGINT).
      io.stderr.write(`${formatCliError(error)}\n`);
      return EXIT_CANCELLED;
    }
    if (isExecgateError(error) && error.code === 'EXECGATE_ERR_CLI_USAGE') {
      const pointer = /--help\b/.test(error.message) ? '' : ` (see \`${acting} --help\`)`;
      io.stderr.write(`${formatCliError(error)}${pointer}\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`${formatCliError(error)}\n`);
    return EXIT_EXECGATE_ERROR;
  }
}

/*
 * Node decodes its arguments as UTF-8 and puts U+FFFD where bytes are not, so a command typed
 * with such bytes would run as another command. The kernel's copy (/proc/self/cmdline) still has
 * the bytes: an argument that is not valid UTF-8 is refused before anything else. (Where /proc
 * cannot say, the arguments are taken as Node decoded them.)
 */
export function findInvalidArgument(argv: readonly string[]): number | undefined {
  let raw: Buffer[];
  try {
    const cmdline = readFileSync('/proc/self/cmdline');
    raw = [];
    let start = 0;
    for (let at = cmdline.indexOf(0); at !== -1; at = cmdline.indexOf(0, start)) {
      raw.push(cmdline.subarray(start, at));
      start = at + 1;
    }
  } catch {
    return undefined;
  }
  const own = raw.slice(raw.length - argv.length);
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (let i = 0; i < own.length; i++) {
    try {
      strict.decode(own[i]);
    } catch {
      return i;
    }
  }
  return undefined;
}

if (require.main === module) {
  // A reader that went away (`execgate audit search | head`) is not an error of execgate's:
  // stop quietly, as Unix tools do, instead of dying on an unhandled EPIPE.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      // A command that handles its own streams (the MCP server closes its session and the
      // gateway first) has its own listener; leave the error to it.
      if (stream.listenerCount('error') > 1) return;
      if (error.code === 'EPIPE') process.exit(0);
      throw error;
    });
  }
  // process.stdin is a getter that sets up the stream (and loads its modules): only commands
  // that read their input pay for it.
  const io = { get stdin() { return process.stdin; }, stdout: process.stdout, stderr: process.stderr, env: process.env };
  const invalid = findInvalidArgument(process.argv.slice(2));
  if (invalid !== undefined) {
    io.stderr.write(`${formatCliError(new ExecgateError(
      'EXECGATE_ERR_CLI_ARGV_ENCODING',
      `Argument ${invalid + 1} is not valid UTF-8; execgate would have run it with U+FFFD in place of those bytes, which is another command. Nothing was run. Write such bytes as escapes inside the command text (\`printf '\\377'\`, \`$'\\xff'\`) or pass them in a file.`,
      { argument: invalid + 1 },
    ))}\n`);
    process.exitCode = EXIT_USAGE;
    closePrestartedSharedNetworks();
  } else main(process.argv.slice(2), io).then(
    (status) => {
      process.exitCode = status;
    },
    (error: unknown) => {
      process.stderr.write(`${formatCliError(error)}\n`);
      process.exitCode = EXIT_EXECGATE_ERROR;
    },
  ).finally(closePrestartedSharedNetworks);
}
