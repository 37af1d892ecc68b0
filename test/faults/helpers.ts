/*
 * What the fault suite shares: a small tmpfs of its own (a disk that can be filled at will, and
 * freed again), read-only bind mounts over single files (EROFS on one write path only), the
 * built CLI, and the audit check every fault ends with (`execgate audit verify`).
 *
 * Mounting needs root (CI runs as root). Elsewhere the tests that need a mount are skipped and
 * say why; `EXECGATE_FAULT_LONG=1` turns on the longer versions (more trials, more processes).
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseEnv } from '../helpers/tmp';

export const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
export const LONG = process.env.EXECGATE_FAULT_LONG === '1';

/** Why mounting cannot be done here, or undefined when it can (checked once). */
let mountProblem: string | undefined | null = null;
export function getMountProblem(): string | undefined {
  if (mountProblem !== null) return mountProblem;
  if (process.getuid?.() !== 0) {
    mountProblem = 'not root: the disk-full and read-only cases mount a tmpfs, which needs root (CI runs as root)';
    return mountProblem;
  }
  // Not probed by mounting: a mount made and undone at once, while another test's sandbox is
  // being checked against its plan, shows in the sandbox and not on the host, and that run is
  // refused (EXECGATE_ERR_SANDBOX_MISMATCH). A mount that fails later says why.
  const found = spawnSync('mount', ['--version'], { encoding: 'utf8' });
  mountProblem = found.status === 0 ? undefined : `no usable mount(8) here (${found.error?.message ?? (found.stderr ?? '').trim()})`;
  return mountProblem;
}

/** `test` when mounts work here, else a skipped test that says why. */
export function testWithMounts(name: string, fn: () => Promise<void>, timeout?: number): void {
  const problem = getMountProblem();
  if (problem === undefined) test(name, fn, timeout);
  else test.skip(`${name} [skipped: ${problem}]`, () => undefined);
}

export interface SmallDisk {
  readonly dir: string;
  /** Fill the disk until no byte fits (a file `.fill` takes it all). */
  fill(): void;
  /** Give the space back. */
  free(): void;
  unmount(): void;
}

/** A tmpfs of `size` bytes, mounted on a fresh directory. */
export function mountSmallDisk(size: number): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'execgate-fault-disk-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`);
  const fillPath = join(dir, '.fill');
  return {
    dir,
    fill() {
      const fd = openSync(fillPath, 'a');
      const block = Buffer.alloc(4096, 0x66);
      try {
        for (;;) writeSync(fd, block);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
      // The last partial page too.
      try {
        for (;;) writeSync(fd, block, 0, 1);
      } catch { /* full */ }
      closeSync(fd);
    },
    free() {
      rmSync(fillPath, { force: true });
    },
    unmount() {
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Make `path` (a file or a directory) read-only in place with a read-only bind mount over it:
 * writes to it fail with EROFS, and renaming over it with EBUSY. Returns the undo.
 */
export function freezePath(file: string): () => void {
  const bound = spawnSync('mount', ['--bind', file, file], { encoding: 'utf8' });
  if (bound.status !== 0) throw new Error(`bind mount failed: ${bound.stderr}`);
  const ro = spawnSync('mount', ['-o', 'remount,bind,ro', file], { encoding: 'utf8' });
  if (ro.status !== 0) throw new Error(`read-only remount failed: ${ro.stderr}`);
  return () => { spawnSync('umount', [file]); };
}

export function cliEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return baseEnv({ EXECGATE_HOME: home, ...extra });
}

export function execgate(args: string[], options: { home: string; cwd: string; input?: string; env?: Record<string, string> }): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env: cliEnv(options.home, options.env),
    encoding: 'utf8',
    timeout: 120_000,
    input: options.input ?? '',
  });
}

export function execgateAsync(args: string[], options: { home: string; cwd: string; input?: string }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: cliEnv(options.home), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** `execgate audit verify` on the state directory: its status and its last lines. */
export function verifyAudit(home: string, cwd: string): { ok: boolean; text: string } {
  const result = execgate(['audit', 'verify'], { home, cwd });
  return { ok: result.status === 0 && /OK: the chain is intact/.test(result.stdout), text: `${result.stdout}${result.stderr}` };
}

export function readAudit(home: string): Array<Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(join(home, 'audit.log'), 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Pids of processes whose command line contains `marker` (what a run left running). */
export function findProcesses(marker: string): number[] {
  const result = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' });
  return (result.stdout ?? '').split('\n').filter((line) => line.trim() !== '').map(Number).filter((pid) => pid !== process.pid);
}

export function makeDir(parent: string, name: string): string {
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
