#!/usr/bin/env node
/*
 * The execgate command. Each subcommand lives in its own module; this file only wires them
 * up, turns errors into one coded line on stderr, and maps outcomes to exit statuses.
 */
import { Command, CommanderError } from 'commander';
import { ExecgateError } from '../errors';
import { registerRunCommand } from './commands/run';
import { CliExit, EXIT_EXECGATE_ERROR, formatCliError, type CliIo } from './io';

const { version } = require('../../package.json') as { version: string };

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
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: () => { /* printed as a coded line by main() */ },
    });
  registerRunCommand(program, io);
  if (only === 'run') return program;
  (require('./commands/background') as typeof import('./commands/background')).registerBackgroundCommands(program, io);
  (require('./commands/demo') as typeof import('./commands/demo')).registerDemoCommand(program, io);
  (require('./commands/secret') as typeof import('./commands/secret')).registerSecretCommands(program, io);
  (require('./commands/policy') as typeof import('./commands/policy')).registerPolicyCommands(program, io);
  (require('./commands/audit') as typeof import('./commands/audit')).registerAuditCommands(program, io);
  (require('./commands/mcp') as typeof import('./commands/mcp')).registerMcpCommand(program, io);
  return program;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io, argv[0] === 'run' ? 'run' : undefined);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CliExit) return error.status;
    if (error instanceof CommanderError) {
      if (error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      const message = error.message.replace(/^error: /, '');
      io.stderr.write(`${formatCliError(new ExecgateError('EXECGATE_ERR_CLI_USAGE', `${message} (see \`execgate --help\`)`))}\n`);
      return EXIT_EXECGATE_ERROR;
    }
    io.stderr.write(`${formatCliError(error)}\n`);
    return EXIT_EXECGATE_ERROR;
  }
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
  main(process.argv.slice(2), io).then(
    (status) => {
      process.exitCode = status;
    },
    (error: unknown) => {
      process.stderr.write(`${formatCliError(error)}\n`);
      process.exitCode = EXIT_EXECGATE_ERROR;
    },
  );
}
