/*
 * Gateways with a given sandbox policy, and one way to run a command in each of the three modes
 * and get its (redacted) output back, so that every attack is tried in sync, PTY and background.
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway';
import { DEFAULT_POLICY, type EffectivePolicy, type SandboxSettings } from '../../src/policy/effective';
import { checkPlatform } from '../../src/sandbox';

export const MODES = ['sync', 'pty', 'background'] as const;
export type Mode = (typeof MODES)[number];

export function sandboxPolicy(sandbox: Partial<SandboxSettings> = {}, extra: Partial<EffectivePolicy> = {}): EffectivePolicy {
  return {
    ...DEFAULT_POLICY,
    ...extra,
    sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'required', ...sandbox, filesystem: { ...DEFAULT_POLICY.sandbox.filesystem, ...sandbox.filesystem } },
  };
}

export function makeGateway(options: GatewayOptions & { sandbox?: Partial<SandboxSettings> }): Gateway {
  const { sandbox, ...rest } = options;
  return createGateway({ policy: sandboxPolicy(sandbox), ...rest });
}

export interface RunOutput {
  readonly output: string;
  readonly exitCode: number | null;
  readonly sandboxed: boolean;
}

/** Run `command` in `mode` and wait for its end; background output is read from its file. */
export async function runIn(gateway: Gateway, mode: Mode, command: string, extra: Record<string, unknown> = {}): Promise<RunOutput> {
  if (mode === 'background') {
    const started = await gateway.exec({ command, mode: 'background', ...extra });
    const ended = await gateway.background.wait(started.id, 30_000);
    return { output: readFileSync(started.outputPath, 'utf8'), exitCode: ended.exitCode, sandboxed: started.sandboxed === true };
  }
  const result = await gateway.exec({ command, mode, ...extra });
  return { output: result.output, exitCode: result.exitCode, sandboxed: result.sandbox.sandboxed };
}

/** Host pids whose command line holds `marker` (a survivor hunt that needs no cooperation). */
export function findProcesses(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(marker)) {
        const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
        const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        if (state !== 'Z' && state !== 'X') found.push(Number(entry));
      }
    } catch {
      // gone
    }
  }
  return found;
}

/** Those of `pids` below this process (a sandbox of this file's gateway, not of another test file running beside it). */
export function ownDescendants(pids: number[]): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  return pids.filter((pid) => {
    for (let at = parent.get(pid); at !== undefined && at > 1; at = parent.get(at)) if (at === process.pid) return true;
    return false;
  });
}

/** `describe`, or a skipped suite that says why when bubblewrap cannot run here. */
export function describeSandboxed(name: string, fn: () => void): void {
  const platform = checkPlatform();
  if (platform.ok) {
    describe(name, fn);
    return;
  }
   
  console.warn(`SKIPPED sandbox tests "${name}": ${platform.reason}`);
  describe.skip(`${name} [SKIPPED: ${platform.reason}]`, fn);
}

/**
 * A directory to stand for a home directory outside every temp directory (each run gets a private,
 * empty /tmp, so a home there would be the run's own and prove nothing about the host's).
 */
export function makeHome(): { dir: string; cleanup: () => void } {
  const temps = ['/tmp', '/var/tmp', tmpdir()].map((path) => realpathSync(path));
  const inTemp = (path: string): boolean => temps.some((t) => path === t || path.startsWith(`${t}/`));
  // The real home last: it is a covered directory in every sandboxed run (it holds credential
  // files), so each of its entries is bound into every run, and one that comes and goes while
  // other tests' runs are set up makes them fail (EXECGATE_ERR_SANDBOX_PATH).
  for (const base of ['/var/lib', '/srv', '/opt', join(__dirname, '..', '..'), homedir()]) {
    try {
      if (inTemp(realpathSync(base))) continue;
      const dir = mkdtempSync(join(base, '.execgate-rename-test-'));
      return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    } catch {
      // not there, or not writable: the next place
    }
  }
  throw new Error('no writable directory outside the temp directories for a test home');
}
