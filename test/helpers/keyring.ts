/*
 * A private Secret Service for tests: a session D-Bus daemon with its own config (no service
 * activation, so nothing from the machine's session is started) and a gnome-keyring-daemon
 * whose HOME and XDG directories live in a temp dir, so a developer's real keyring is never
 * touched. Both run in the foreground as our children and are killed by stop().
 *
 * libdbus reads DBUS_SESSION_BUS_ADDRESS once per process and keeps the connection, so code
 * that talks to the keyring must run in a child process that gets `env` from here (see
 * test/stores/fixtures/run-child.ts), never in the jest worker itself.
 *
 * When a binary is missing, getKeyringSkipReason() says which, and describeWithKeyring() turns
 * the suite into a skipped one whose name carries the reason (plus a console warning), so the
 * run reports it as skipped rather than passing silently.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const BINARIES = ['dbus-daemon', 'gnome-keyring-daemon', 'dbus-send', 'secret-tool'] as const;

function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

/** Why keyring tests cannot run here, or undefined when they can. */
export function getKeyringSkipReason(): string | undefined {
  if (process.platform !== 'linux') return `the Secret Service tests need Linux (this is ${process.platform})`;
  const missing = BINARIES.filter((name) => which(name) === undefined);
  if (missing.length > 0) {
    return `${missing.join(', ')} not found on PATH (install the Debian packages gnome-keyring, dbus, dbus-x11, libsecret-tools)`;
  }
  return undefined;
}

/** `describe`, or `describe.skip` with the reason in the suite name and a warning. */
export function describeWithKeyring(name: string, fn: () => void): void {
  const reason = getKeyringSkipReason();
  if (reason === undefined) {
    describe(name, fn);
    return;
  }
  console.warn(`SKIPPED keyring tests "${name}": ${reason}`);
  describe.skip(`${name} [SKIPPED: ${reason}]`, fn);
}

export interface TestKeyring {
  /** DBUS_SESSION_BUS_ADDRESS of the private bus. */
  readonly address: string;
  /** Variables a child process needs to reach this keyring (and nothing of the real session). */
  readonly env: NodeJS.ProcessEnv;
  /** Lock the default collection (as a screen lock or a timeout would). */
  lock(): void;
  stop(): Promise<void>;
}

export interface StartKeyringOptions {
  /** Start gnome-keyring-daemon on the bus (default true); false gives a bus without Secret Service. */
  secretService?: boolean;
}

const BUS_CONFIG = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`;

function readFirstLine(child: ChildProcess, what: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${timeoutMs} ms`)), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const newline = buffer.indexOf('\n');
      if (newline >= 0) {
        clearTimeout(timer);
        resolve(buffer.slice(0, newline).trim());
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited early (status ${code})`));
    });
  });
}

function dbusSend(env: NodeJS.ProcessEnv, args: string[]): string {
  const result = spawnSync('dbus-send', ['--session', '--print-reply', ...args], { env, encoding: 'utf8', timeout: 5000 });
  if (result.status !== 0) throw new Error(`dbus-send ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function waitUntil(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Start a private session bus and (by default) an unlocked gnome-keyring on it. */
export async function startTestKeyring(options: StartKeyringOptions = {}): Promise<TestKeyring> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'execgate-keyring-')));
  const dirs = { home: join(root, 'home'), data: join(root, 'data'), config: join(root, 'config'), cache: join(root, 'cache'), run: join(root, 'run') };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const configPath = join(root, 'bus.conf');
  writeFileSync(configPath, BUS_CONFIG(join(root, 'bus.sock')));

  let bus: ChildProcess | undefined;
  let daemon: ChildProcess | undefined;
  const stop = async () => {
    await stopChild(daemon);
    await stopChild(bus);
    rmSync(root, { recursive: true, force: true });
  };
  try {
    bus = spawn('dbus-daemon', [`--config-file=${configPath}`, '--nofork', '--nopidfile', '--print-address=1'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const address = await readFirstLine(bus, 'dbus-daemon', 30_000);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dirs.home,
      XDG_DATA_HOME: dirs.data,
      XDG_CONFIG_HOME: dirs.config,
      XDG_CACHE_HOME: dirs.cache,
      XDG_RUNTIME_DIR: dirs.run,
      DBUS_SESSION_BUS_ADDRESS: address,
    };
    if (options.secretService !== false) {
      // --unlock reads the login keyring's password from stdin and creates the keyring unlocked.
      daemon = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], {
        env,
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      daemon.stdin!.end('execgate-test-password');
      const owned = () => {
        try {
          return dbusSend(env, ['--dest=org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus.NameHasOwner', 'string:org.freedesktop.secrets']).includes('boolean true');
        } catch {
          return false;
        }
      };
      await waitUntil(owned, 'gnome-keyring-daemon to own org.freedesktop.secrets');
      const hasLogin = () => {
        try {
          return dbusSend(env, ['--dest=org.freedesktop.secrets', '/org/freedesktop/secrets', 'org.freedesktop.Secret.Service.ReadAlias', 'string:default']).includes('/collection/login');
        } catch {
          return false;
        }
      };
      await waitUntil(hasLogin, 'the unlocked login collection');
    }
    return {
      address,
      env,
      lock() {
        dbusSend(env, [
          '--dest=org.freedesktop.secrets',
          '/org/freedesktop/secrets',
          'org.freedesktop.Secret.Service.Lock',
          'array:objpath:/org/freedesktop/secrets/collection/login',
        ]);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
