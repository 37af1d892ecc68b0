import { mkdtempSync, rmSync, realpathSync } from 'node:fs';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh directory under the OS temp dir, removed by the returned cleanup. The removal retries
 * on ENOTEMPTY: a detached background supervisor may still be writing its last record into the
 * directory at the moment a test ends.
 */
export function makeTempDir(prefix = 'execgate-test-'): { dir: string; cleanup: () => void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }) };
}

/**
 * A minimal, predictable environment for gateways under test. The OS keyring is switched off
 * (EXECGATE_KEYRING=off): the keyring suites in test/stores start their own private one.
 */
export function baseEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off', ...extra };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A zombie still answers kill(0); it is not running anything.
    const stat = require('node:fs').readFileSync(`/proc/${pid}/stat`, 'latin1') as string;
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export async function waitFor(check: () => boolean, timeoutMs = 5000, stepMs = 20): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return check();
}

/*
 * The embedded default policy with the OS sandbox off. For tests of the unsandboxed path: they
 * look at the run's processes from the host (pids a command prints, its process group, the
 * cookie sweep), which a PID namespace makes meaningless. test/sandbox covers sandboxed runs.
 */
export const UNSANDBOXED_POLICY = Object.freeze({
  ...DEFAULT_POLICY,
  sandbox: Object.freeze({ ...DEFAULT_POLICY.sandbox, mode: 'off' as const }),
});

/** The same as a policy file, for tests that start the CLI. */
export const UNSANDBOXED_POLICY_FILE = join(__dirname, 'unsandboxed.yaml');
