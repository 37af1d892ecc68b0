/*
 * `execgate mcp`: serve the gateway to MCP clients over stdio (default) or Streamable HTTP.
 * In stdio mode stdout belongs to the protocol: every message of ours goes to stderr.
 */
import { statSync } from 'node:fs';
import os from 'node:os';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { createGateway, type Gateway } from '../../gateway';
import { ExecgateError } from '../../errors';
import { usageError, type CliIo } from '../io';
import { createCliLogger } from '../notices';

interface McpFlags {
  workdir?: string;
  bash: boolean;
  disableTools?: string;
  policy?: string;
  http?: boolean;
  host?: string;
  port?: string;
  allowRemote?: boolean;
  allowedHost: string[];
  tools?: string;
  progressInterval?: string;
  maxRequestBytes?: string;
  sessionIdleTimeout?: string;
  legacySse: boolean;
  verbose?: boolean;
}

const TOOL_SETS = ['files'] as const;

const HELP = `
Tools: bash (command, timeout, mode: default | slow | background), process_status,
process_output, process_write, process_kill, process_list; with --tools files also read_file,
write_file, list_dir, mkdir, move, search_text, search_files (confined to --workdir).

HTTP: the endpoint is http://HOST:PORT/mcp. Every request needs
\`Authorization: Bearer TOKEN\`: the value of EXECGATE_MCP_TOKEN, else a random token printed
once to stderr at start. Requests whose Host or Origin is not this server are refused.
Non-loopback addresses are refused unless --allow-remote is given. Clients of the deprecated
HTTP+SSE transport are served at GET /mcp (or /sse) unless --no-legacy-sse is given.

Long calls: a client that sends a progressToken gets notifications/progress every
--progress-interval seconds (default 5) with the output seen so far.

Examples:
  execgate mcp --workdir ~/project
  execgate mcp --http --port 7337 --policy policies/default.yaml
  claude mcp add execgate -- execgate mcp --workdir "$PWD"
`;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command('mcp')
    .description('Serve execgate as an MCP server (stdio, or Streamable HTTP with --http)')
    .option('--workdir <dir>', 'starting working directory of each session (default: the current directory)')
    .option('--no-bash', 'do not offer the bash tool (nor the process_* tools)')
    .option('--disable-tools <names>', 'comma-separated tool names not to offer')
    .option('--policy <file>', 'policy file (YAML or JSON; default $EXECGATE_POLICY, else the embedded default)')
    .option('--tools <sets>', 'extra tool sets to offer: files')
    .option('--http', 'serve Streamable HTTP instead of stdio')
    .option('--host <address>', 'HTTP: address to listen on (default 127.0.0.1)')
    .option('--port <n>', 'HTTP: port to listen on (default 7337; 0 picks a free one)')
    .option('--allow-remote', 'HTTP: allow listening on a non-loopback address')
    .option('--allowed-host <name>', 'HTTP: another Host header value to answer to, name[:port] (repeatable)', collect, [])
    .option('--max-request-bytes <n>', 'HTTP: largest request body; larger ones get 413 (default 4194304)')
    .option('--session-idle-timeout <seconds>', 'HTTP: close sessions unused this long, killing their background processes (default 1800; 0: never)')
    .option('--no-legacy-sse', 'HTTP: do not serve the deprecated HTTP+SSE transport')
    .option('--progress-interval <seconds>', 'seconds between progress notifications of a long call (default 5)')
    .option('--verbose', 'also say what is usually noise (no OS keyring on a machine without a desktop session)')
    .addHelpText('after', HELP)
    .action(async (flags: McpFlags) => {
      await mcpAction(flags, io);
    });
}

function parseList(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text.split(',').map((part) => part.trim()).filter((part) => part !== '');
}

function parsePort(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (text.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw usageError(`Expected --port to be an integer from 0 to 65535, got \`${text}\`.`);
  }
  return port;
}

function parseNumber(flag: string, text: string | undefined, minimum: number, integer: boolean): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < minimum || (integer && !Number.isInteger(value))) {
    throw usageError(`Expected ${flag} to be ${integer ? 'an integer' : 'a number'} of at least ${minimum}, got \`${text}\`.`);
  }
  return value;
}

function resolveWorkdir(base: string, dir: string | undefined): string {
  const workdir = resolve(base, dir ?? '.');
  let isDirectory: boolean;
  try {
    isDirectory = statSync(workdir).isDirectory();
  } catch {
    throw new ExecgateError('EXECGATE_ERR_CWD_NOT_FOUND', `The --workdir \`${workdir}\` does not exist.`, { cwd: workdir });
  }
  if (!isDirectory) throw new ExecgateError('EXECGATE_ERR_CWD_NOT_DIRECTORY', `The --workdir \`${workdir}\` is not a directory.`, { cwd: workdir });
  return workdir;
}

/** stdio: an audit log written to stdout would corrupt the protocol stream, so refuse early. */
function checkAuditDestination(policyFile: string, cwd: string, env: NodeJS.ProcessEnv): void {
  const { loadPolicyFile } = require('../../policy/load') as typeof import('../../policy/load');
  const { policy } = loadPolicyFile(policyFile, { cwd, homeDir: env.HOME || os.homedir() });
  if (policy.audit.enabled && policy.audit.destination === 'stdout') {
    throw new ExecgateError(
      'EXECGATE_ERR_MCP_AUDIT_STDOUT',
      `The policy ${policyFile} writes the audit log to stdout, which carries the MCP protocol over stdio. Use --http, or a policy whose audit log goes to its file.`,
    );
  }
}

async function mcpAction(flags: McpFlags, io: CliIo): Promise<void> {
  const log = (line: string): void => { io.stderr.write(`execgate mcp: ${line}\n`); };
  const base = io.cwd ?? process.cwd();
  const workdir = resolveWorkdir(base, flags.workdir);
  const sets = parseList(flags.tools);
  const unknownSets = sets.filter((set) => !(TOOL_SETS as readonly string[]).includes(set));
  if (unknownSets.length > 0) throw usageError(`Unknown --tools set ${unknownSets.map((s) => `\`${s}\``).join(', ')}; known: ${TOOL_SETS.join(', ')}.`);
  const httpOnly = flags.host !== undefined || flags.port !== undefined || flags.allowRemote || flags.allowedHost.length > 0 ||
    flags.maxRequestBytes !== undefined || flags.sessionIdleTimeout !== undefined || !flags.legacySse;
  if (!flags.http && httpOnly) {
    throw usageError('--host, --port, --allow-remote, --allowed-host, --max-request-bytes, --session-idle-timeout and --no-legacy-sse apply to --http only.');
  }
  const port = parsePort(flags.port);
  const maxBodyBytes = parseNumber('--max-request-bytes', flags.maxRequestBytes, 1024, true);
  const idleSeconds = parseNumber('--session-idle-timeout', flags.sessionIdleTimeout, 0, false);
  const progressSeconds = parseNumber('--progress-interval', flags.progressInterval, 0.01, false);
  const policyFile = flags.policy ?? (io.env.EXECGATE_POLICY || undefined);

  // Everything that can refuse to start is checked before the gateway exists.
  // The transport it serves on, alone: a stdio server does not load the HTTP one (Node's HTTP
  // server, the SDK's Streamable HTTP and SSE transports), which was most of its start.
  const { createMcpServer } = require('../../mcp/server') as typeof import('../../mcp/server');
  const http = flags.http ? require('../../mcp/http') as typeof import('../../mcp/http') : undefined;
  const guard = require('../../mcp/http-guard') as typeof import('../../mcp/http-guard');
  let token: string | undefined;
  let generated = false;
  if (flags.http) {
    guard.validateListenHost(flags.host ?? http!.DEFAULT_HTTP_HOST, flags.allowRemote === true);
    const configured = io.env.EXECGATE_MCP_TOKEN;
    token = configured ? guard.validateToken(configured) : guard.generateToken();
    generated = !configured;
  } else if (policyFile !== undefined) {
    checkAuditDestination(policyFile, base, io.env);
  }

  const gateway: Gateway = createGateway({
    env: io.env,
    cwd: workdir,
    // Warnings (a policy reload refused, a keyring that should answer) as plain lines on stderr.
    logger: createCliLogger(io, { verbose: flags.verbose === true, prefix: 'execgate mcp' }),
    ...(policyFile !== undefined ? { policyFile, watchPolicy: true } : {}),
  });
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => { stop = resolve; });
  const onSignal = (): void => stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let mcp: import('../../mcp').ExecgateMcpServer;
    try {
      mcp = createMcpServer({
        gateway,
        workdir,
        bash: flags.bash,
        disabledTools: parseList(flags.disableTools),
        fileTools: sets.includes('files'),
        ...(progressSeconds !== undefined ? { progressInterval: Math.round(progressSeconds * 1000) } : {}),
      });
    } catch (error) {
      if (error instanceof ExecgateError && error.details.option === 'disabledTools') throw usageError(error.message.replace(/\.$/, ' (--disable-tools).'));
      throw error;
    }
    if (mcp.toolNames.length === 0) log('warning: no tools are enabled; clients will see an empty tool list.');
    if (http) {
      const server = await http.serveHttp(mcp, {
        host: flags.host,
        port,
        token: token as string,
        allowRemote: flags.allowRemote === true,
        allowedHosts: flags.allowedHost,
        legacySse: flags.legacySse,
        ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
        ...(idleSeconds !== undefined ? { sessionIdleTimeout: Math.round(idleSeconds * 1000) } : {}),
        onSessionReaped: ({ sessionId, idleMs, killed }) => {
          log(`closed session ${sessionId} after ${Math.round(idleMs / 1000)} s unused` +
            (killed.length > 0 ? `; killed its background processes ${killed.join(', ')}` : ''));
        },
      });
      log(`listening on ${server.url} (tools: ${mcp.toolNames.join(', ') || 'none'}; workdir ${workdir})`);
      if (generated) log(`bearer token (set EXECGATE_MCP_TOKEN to choose one): ${token}`);
      await stopped;
      await server.close();
    } else {
      const stdin = io.stdin as Readable;
      const { serveStdio } = require('../../mcp/stdio') as typeof import('../../mcp/stdio');
      const connection = await serveStdio(mcp, { stdin, stdout: io.stdout as Writable }, { log });
      log(`serving on stdio (tools: ${mcp.toolNames.join(', ') || 'none'}; workdir ${workdir})`);
      const why = await Promise.race([connection.closed.then(() => 'the client closed its end (stdin)'), stopped.then(() => 'a signal asked it to')]);
      log(`stopping: ${why}`);
      await mcp.close();
      // Nothing more will be read; an open stdin would keep the process alive.
      if (stdin === process.stdin) stdin.destroy();
    }
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await gateway.close();
  }
}
