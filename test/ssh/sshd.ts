/*
 * A real OpenSSH server for the SSH agent's tests: Debian's sshd on 127.0.0.1, a port found free
 * at runtime, its own host key, config and authorized keys in a temp dir (`-D -e -f`), no PAM, no
 * strict modes, and no ForceCommand, so `git-upload-pack` / `git-receive-pack` work against a bare
 * repository. Tests run as root in CI: root may log in with a key.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';

export const SSHD = '/usr/sbin/sshd';

export interface Sshd {
  readonly port: number;
  /** `ssh-ed25519 AAAA...` of the server's host key. */
  readonly hostKey: string;
  readonly user: string;
  close(): Promise<void>;
}

/** A key pair made with ssh-keygen in `dir`: the private key's path and the public line. */
export function makeKey(dir: string, name: string, type = 'ed25519'): { path: string; pub: string; text: string } {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', `${name}@execgate-test`, '-f', path]);
  return { path, pub: readFileSync(`${path}.pub`, 'utf8').trim(), text: readFileSync(path, 'utf8') };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`sshd exited: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true); });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`sshd did not listen: ${log()}`);
}

export async function startSshd(dir: string, authorized: readonly string[]): Promise<Sshd> {
  // sshd as root wants its privilege-separation directory (the package's service makes it at boot).
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const hostKeyPath = join(dir, 'host_key');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKeyPath]);
  writeFileSync(join(dir, 'authorized_keys'), `${authorized.join('\n')}\n`, { mode: 0o600 });
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  writeFileSync(config, [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${hostKeyPath}`,
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    `PidFile ${join(dir, 'sshd.pid')}`,
    'UsePAM no',
    'StrictModes no',
    'PermitRootLogin yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'LogLevel VERBOSE',
    '',
  ].join('\n'));
  let log = '';
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (chunk: Buffer) => { log += chunk.toString(); });
  await waitForPort(port, child, () => log);
  return {
    port,
    hostKey: readFileSync(`${hostKeyPath}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' '),
    user: userInfo().username,
    close: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}
