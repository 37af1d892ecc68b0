/*
 * A run's SSH side, opened by the plan when the policy binds SSH keys (`delivery: ssh-agent`):
 *   - the agent (agent.ts) on a socket in a directory of the gateway's own (mode 0700), bound into
 *     the sandbox at SSH_AGENT_MOUNT; the run's environment names it in SSH_AUTH_SOCK;
 *   - a generated /etc/ssh, bound read-only over the sandbox's: `ssh_known_hosts` lists each bound
 *     server with its host keys (`[host]:port` when the port is not 22), so ssh and git connect
 *     with no prompt and never need to write ~/.ssh/known_hosts (the run's home may be read-only,
 *     and its ~/.ssh is hidden); the host's `ssh_config` and `ssh_config.d/*.conf` are copied
 *     beside it, so the client behaves as it does on the host. A file cannot be bound at
 *     /etc/ssh/ssh_known_hosts itself when the host has none: bubblewrap cannot create a mount
 *     point in the read-only /etc, so the directory is replaced (which also keeps the host's own
 *     sshd configuration and host private keys out of the run's view).
 * The private keys are read from the stores here, in the gateway, parsed, and held by the agent
 * only: nothing of them is written to a file, an environment or an argument.
 */
import { chmodSync, copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError } from '../../errors';
import { getRuntimeBase } from '../../fs/runtime-dir';
import type { BwrapMount } from '../../process/bwrap/spec';
import { DEFAULT_SSH_PORT, type SecretBinding } from '../rules';
import { SshAgent, type AgentKey, type SshSignRecord } from './agent';
import { parseHostKeyLine, parseStoredSshKey } from './keys';

/** Where the agent's socket appears inside the sandbox (on its private /tmp). */
export const SSH_AGENT_MOUNT = '/tmp/.execgate-ssh-agent.sock';
/** The directory the generated known-hosts file is in, inside the sandbox. */
export const SSH_CONFIG_MOUNT = '/etc/ssh';
const HOST_SSH_DIR = '/etc/ssh';

export interface RunSsh {
  readonly env: Readonly<Record<string, string>>;
  readonly mounts: readonly BwrapMount[];
  /** Fingerprints (`SHA256:...`) of the keys the agent holds. */
  readonly fingerprints: readonly string[];
  close(): Promise<void>;
  /** Present when the agent was not started here (`serve: false`): what the serving process needs. */
  handOff?(): HandedOffSsh;
}

/** The known-hosts file for the bindings: one line per server and host key. */
export function getKnownHosts(bindings: readonly SecretBinding[]): string {
  const lines = new Set<string>();
  for (const binding of bindings) {
    if (binding.delivery !== 'ssh-agent') continue;
    for (const host of binding.hosts) {
      const port = host.port ?? DEFAULT_SSH_PORT;
      const name = port === DEFAULT_SSH_PORT ? host.host : `[${host.host}]:${port}`;
      for (const key of binding.hostKeys ?? []) lines.add(`${name} ${key.line}`);
    }
  }
  return [...lines].map((line) => `${line}\n`).join('');
}

/** A run's agent as handed to the process that will serve it (a detached background run's supervisor). Holds the keys: a pipe only. */
export interface HandedOffSsh {
  readonly runId: string;
  readonly dir: string;
  readonly socketPath: string;
  readonly keys: ReadonlyArray<{ readonly ref: string; readonly text: string; readonly hosts: readonly string[]; readonly hostKeys: readonly string[] }>;
}

/**
 * Open the run's agent and its /etc/ssh; undefined when the policy binds no SSH key. `lookup`
 * resolves a reference (`secret:NAME`) to its value, undefined when no source knows it (that key
 * is left out: the agent lists only keys that resolve). With `serve: false` (a run another process
 * will hold) the directory is made and the agent is not started: `handOff()` gives what
 * adoptRunSsh needs there, which listens on the same socket path before the run starts.
 */
export async function openRunSsh(options: {
  runId: string;
  bindings: readonly SecretBinding[];
  lookup: (ref: string) => Promise<string | undefined>;
  onSign?: (record: SshSignRecord) => void;
  runtimeDir?: string;
  serve?: boolean;
}): Promise<RunSsh | undefined> {
  const bindings = options.bindings.filter((binding) => binding.delivery === 'ssh-agent');
  if (bindings.length === 0) return undefined;
  const keys: Array<AgentKey & { text: string }> = [];
  for (const binding of bindings) {
    const value = await options.lookup(binding.ref);
    if (value === undefined) continue;
    keys.push(Object.freeze({
      ref: binding.ref,
      text: value,
      key: parseStoredSshKey(value, binding.ref),
      hosts: Object.freeze(binding.hosts.map((host) => `${host.host}:${host.port ?? DEFAULT_SSH_PORT}`)),
      hostKeys: binding.hostKeys ?? [],
    }));
  }
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(options.runtimeDir ?? getRuntimeBase(), 'execgate-ssh-'));
    chmodSync(dir, 0o700);
    const etc = join(dir, 'etc-ssh');
    mkdirSync(etc, { mode: 0o755 });
    copyHostConfig(etc);
    writeFileSync(join(etc, 'ssh_known_hosts'), getKnownHosts(bindings), { mode: 0o644 });
    const socketPath = join(dir, 'agent.sock');
    const owned = dir;
    const agent = options.serve === false ? undefined : await SshAgent.listen({ runId: options.runId, socketPath, keys, ...(options.onSign ? { onSign: options.onSign } : {}) });
    let closing: Promise<void> | undefined;
    let handed = false;
    return Object.freeze({
      env: Object.freeze({ SSH_AUTH_SOCK: SSH_AGENT_MOUNT }),
      mounts: getMounts(socketPath, etc),
      fingerprints: Object.freeze(keys.map((key) => key.key.fingerprint)),
      close: () => {
        if (handed) return Promise.resolve();
        closing ??= (agent?.close() ?? Promise.resolve()).finally(() => rmSync(owned, { recursive: true, force: true }));
        return closing;
      },
      ...(agent ? {} : {
        handOff: (): HandedOffSsh => {
          handed = true;
          return {
            runId: options.runId,
            dir: owned,
            socketPath,
            keys: keys.map((key) => ({ ref: key.ref, text: key.text, hosts: [...key.hosts], hostKeys: key.hostKeys.map((hostKey) => hostKey.line) })),
          };
        },
      }),
    });
  } catch (error) {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    throw new ExecgateError('EXECGATE_ERR_SSH_AGENT_FAILED', `Could not set up the SSH agent of run ${options.runId}: ${(error as Error).message}. Nothing was run.`, { runId: options.runId }, { cause: error });
  }
}

/** Serve a run's agent another process prepared (openRunSsh with `serve: false`); close() ends it and removes its directory. */
export async function adoptRunSsh(handed: HandedOffSsh, onSign?: (record: SshSignRecord) => void): Promise<{ close(): Promise<void> }> {
  try {
    const keys: AgentKey[] = handed.keys.map((key) => Object.freeze({
      ref: key.ref,
      key: parseStoredSshKey(key.text, key.ref),
      hosts: key.hosts,
      hostKeys: key.hostKeys.map((line) => parseHostKeyLine(line)),
    }));
    const agent = await SshAgent.listen({ runId: handed.runId, socketPath: handed.socketPath, keys, ...(onSign ? { onSign } : {}) });
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= agent.close().finally(() => rmSync(handed.dir, { recursive: true, force: true }))) };
  } catch (error) {
    rmSync(handed.dir, { recursive: true, force: true });
    throw new ExecgateError('EXECGATE_ERR_SSH_AGENT_FAILED', `Could not serve the SSH agent of run ${handed.runId}: ${(error as Error).message}. Nothing was run.`, { runId: handed.runId }, { cause: error });
  }
}

function getMounts(socketPath: string, etc: string): readonly BwrapMount[] {
  return Object.freeze([
    { kind: 'bind', source: socketPath, dest: SSH_AGENT_MOUNT, readOnly: true },
    { kind: 'bind', source: etc, dest: SSH_CONFIG_MOUNT, readOnly: true },
  ] satisfies BwrapMount[]);
}

/** The host's client configuration (regular files only), so that the run's ssh reads what the host's does. */
function copyHostConfig(etc: string): void {
  const copy = (from: string, to: string): void => {
    try {
      if (lstatSync(from).isFile()) copyFileSync(from, to);
    } catch {
      // Absent or unreadable: the client's defaults apply.
    }
  };
  copy(join(HOST_SSH_DIR, 'ssh_config'), join(etc, 'ssh_config'));
  let names: string[];
  try {
    names = readdirSync(join(HOST_SSH_DIR, 'ssh_config.d'));
  } catch {
    return;
  }
  mkdirSync(join(etc, 'ssh_config.d'), { mode: 0o755 });
  for (const name of names) if (name.endsWith('.conf')) copy(join(HOST_SSH_DIR, 'ssh_config.d', name), join(etc, 'ssh_config.d', name));
}
