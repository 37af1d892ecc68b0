/*
 * The file tools cross the same boundary as a command. Where the gateway's runs are sandboxed,
 * the tools do not touch the file system from the gateway's process (which sees the state
 * directory, the audit log and every credential file): they run in a file server (server.ts)
 * started inside a sandbox planned exactly as a run's, behind the same gate and mount check
 * (process/bwrap/gate.ts). One view of the file system for commands and file tools, not two lists.
 *
 * Per call the sandbox is planned again (cheap: the paths the plan looks at are few) and the
 * server's mounts are checked against it again (process/bwrap/verify.ts): a plan that changed (a policy
 * reload, a hidden path that appeared) or a sandbox that no longer matches it (a hidden directory
 * deleted and made again on the host takes its mount with it) gets a new server before the call
 * runs. Where runs are not sandboxed (`sandbox.mode: off`, or `auto` without bubblewrap) the
 * tools run in this process, as commands then do: SECURITY.md says what that leaves open.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ExecgateError, type ErrorCode } from '../../errors';
import type { SpawnedProcess } from '../../process/spawner/types';
import { directSpawner } from '../../process/spawner/direct';
import { abandon, startGated } from '../../process/bwrap/gate';
import type { SandboxLaunch } from '../../process/bwrap/launch';
import { getSpecKey } from '../../process/bwrap/spec';
import { verifySandbox } from '../../process/bwrap/verify';
import type { FileTool } from './base';
import { createFileToolContext, type FileHost, type FileToolLimits } from './context';
import { createFileTools } from './index';

/** What the gateway lends the file tools: the sandbox its runs get, for a program working in `cwd`. */
export interface ToolSandboxProvider {
  /** How to start a program inside that sandbox; undefined when the gateway's runs are not sandboxed. */
  prepareToolSandbox(cwd: string): Promise<SandboxLaunch | undefined>;
}

export interface FileServerConfig {
  readonly roots: readonly string[];
  readonly base: string;
  readonly limits: Partial<FileToolLimits>;
}

/** A call that gets no answer in this time ends its server (a bound on a hang, not a speed). */
const CALL_TIMEOUT_MS = 120_000;

/** dist/tools/files/server.js: the compiled server, also when this module runs from its TypeScript source (tests). */
function getServerPath(): string {
  const here = join(__dirname, 'server.js');
  return existsSync(here) ? here : join(__dirname, '..', '..', '..', 'dist', 'tools', 'files', 'server.js');
}

function getLaunchKey(launch: SandboxLaunch): string {
  return getSpecKey(launch.launcher, launch.spec);
}

interface Server {
  readonly key: string;
  readonly launch: SandboxLaunch;
  readonly child: SpawnedProcess;
  readonly pending: Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>;
  ended: boolean;
}

export class SandboxedFileHost implements FileHost {
  readonly #provider: ToolSandboxProvider;
  readonly #config: FileServerConfig;
  #server: Server | undefined;
  #starting: Promise<Server> | undefined;
  #local: Map<string, FileTool> | undefined;
  #nextId = 0;
  #closed = false;

  constructor(provider: ToolSandboxProvider, config: FileServerConfig) {
    this.#provider = provider;
    this.#config = config;
  }

  /** The server's pid while one runs (tests). */
  get pid(): number | undefined {
    return this.#server?.ended === false ? this.#server.child.pid : undefined;
  }

  async call(name: string, args: Record<string, unknown>): Promise<string> {
    if (this.#closed) throw new ExecgateError('EXECGATE_ERR_GATEWAY_CLOSED', 'The file tools are closed.');
    const launch = await this.#provider.prepareToolSandbox(this.#config.base);
    if (launch === undefined) return this.#runHere(name, args);
    const server = await this.#serverFor(launch);
    const id = ++this.#nextId;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        server.pending.delete(id);
        this.#stop(server);
        reject(new ExecgateError('EXECGATE_ERR_FILE_OP_FAILED', `The file tool \`${name}\` got no answer within ${CALL_TIMEOUT_MS / 1000} s; it was stopped.`, { tool: name }));
      }, CALL_TIMEOUT_MS);
      server.pending.set(id, {
        resolve: (text) => { clearTimeout(timer); resolve(text); },
        reject: (error) => { clearTimeout(timer); reject(error); },
      });
      server.child.stdin!.write(`${JSON.stringify({ id, name, args })}\n`);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const server = this.#server ?? (await this.#starting?.catch(() => undefined));
    if (server) {
      this.#stop(server);
      await server.child.exit.catch(() => undefined);
    }
  }

  #runHere(name: string, args: Record<string, unknown>): Promise<string> {
    this.#local ??= createFileTools(createFileToolContext(this.#config.roots, this.#config.limits, this.#config.base));
    const tool = this.#local.get(name);
    if (tool === undefined) return Promise.reject(new ExecgateError('EXECGATE_ERR_TOOL_UNKNOWN', `No file tool named \`${name}\`.`, { tool: name }));
    return tool.execute(args);
  }

  /** The running server if it was started for this plan and still matches it; else a new one. */
  async #serverFor(launch: SandboxLaunch): Promise<Server> {
    const key = getLaunchKey(launch);
    const current = this.#server ?? (await this.#starting?.catch(() => undefined));
    if (current && !current.ended && current.key === key && verifySandbox(current.child.pid, launch.check) === undefined) return current;
    if (current) this.#stop(current);
    this.#starting = this.#start(key, launch);
    try {
      this.#server = await this.#starting;
    } finally {
      this.#starting = undefined;
    }
    return this.#server;
  }

  async #start(key: string, launch: SandboxLaunch): Promise<Server> {
    const child = await startGated(directSpawner, {
      shell: process.execPath,
      args: [getServerPath()],
      env: { PATH: '/usr/bin:/bin' },
      cwd: this.#config.base,
      stdin: 'pipe',
      sandbox: launch,
    });
    const server: Server = { key, launch, child, pending: new Map(), ended: false };
    // Not what keeps the host alive: a pending call is (its timer).
    child.setRef?.(false);
    child.stdin!.on('error', () => { /* the server ended: its exit fails what was pending */ });
    child.stderr.resume();
    child.stdin!.write(`${JSON.stringify({ roots: this.#config.roots, base: this.#config.base, limits: this.#config.limits })}\n`);
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      let message: { id?: number; result?: string; error?: { code: string; message: string; details?: Record<string, unknown> } };
      try {
        message = JSON.parse(line) as typeof message;
      } catch {
        return;
      }
      const waiting = message.id === undefined ? undefined : server.pending.get(message.id);
      if (!waiting) return;
      server.pending.delete(message.id!);
      if (message.error) waiting.reject(new ExecgateError(message.error.code as ErrorCode, message.error.message, message.error.details ?? {}));
      else waiting.resolve(message.result ?? '');
    });
    const gone = (): void => {
      server.ended = true;
      if (this.#server === server) this.#server = undefined;
      for (const waiting of server.pending.values()) waiting.reject(new ExecgateError('EXECGATE_ERR_FILE_OP_FAILED', 'The sandboxed file server ended before it answered; run the tool again.'));
      server.pending.clear();
    };
    child.exit.then(gone, gone);
    return server;
  }

  #stop(server: Server): void {
    if (server.ended) return;
    server.ended = true;
    if (this.#server === server) this.#server = undefined;
    // Held until it has exited: close() waits for that.
    server.child.setRef?.(true);
    abandon(server.child);
  }
}
