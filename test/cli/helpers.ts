/*
 * Running the built CLI (`dist/cli/main.js`) as users do: a real node process, a private
 * EXECGATE_HOME, the keyring off unless a test says otherwise.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import { baseEnv } from '../helpers/tmp';

export const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

export interface CliOptions {
  cwd: string;
  env?: Record<string, string>;
  /** Variables to leave out of the base environment (e.g. EXECGATE_KEYRING). */
  unset?: string[];
}

function getEnv(options: CliOptions): NodeJS.ProcessEnv {
  const env = baseEnv({ EXECGATE_HOME: join(options.cwd, 'home'), ...options.env });
  for (const name of options.unset ?? []) delete env[name];
  return env;
}

export function execgateSync(args: string[], options: CliOptions, input?: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env: getEnv(options),
    encoding: 'utf8',
    timeout: 30_000,
    ...(input !== undefined ? { input } : {}),
  });
}

/** Asynchronous, for tests that serve something (an HTTP server) from this process meanwhile. */
export function execgateAsync(args: string[], options: CliOptions): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: getEnv(options), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
