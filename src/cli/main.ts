#!/usr/bin/env node
/*
 * The execgate command. Each subcommand lives in its own module; this file only wires them
 * up, turns errors into one coded line on stderr, and maps outcomes to exit statuses.
 */
import { Command, CommanderError } from 'commander';
import { ExecgateError } from '../errors';
import { registerAuditCommands } from './commands/audit';
import { registerDemoCommand } from './commands/demo';
import { registerMcpCommand } from './commands/mcp';
import { registerRunCommand } from './commands/run';
import { registerBackgroundCommands } from './commands/background';
import { registerSecretCommands } from './commands/secret';
import { registerPolicyCommands } from './commands/policy';
import { CliExit, EXIT_EXECGATE_ERROR, formatCliError, type CliIo } from './io';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { version } = require('../../package.json') as { version: string };

export function buildProgram(io: CliIo): Command {
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
  registerBackgroundCommands(program, io);
  registerDemoCommand(program, io);
  registerSecretCommands(program, io);
  registerPolicyCommands(program, io);
  registerAuditCommands(program, io);
  registerMcpCommand(program, io);
  return program;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
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
  main(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env }).then(
    (status) => {
      process.exitCode = status;
    },
    (error: unknown) => {
      process.stderr.write(`${formatCliError(error)}\n`);
      process.exitCode = EXIT_EXECGATE_ERROR;
    },
  );
}
