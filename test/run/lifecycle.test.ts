/*
 * The run lifecycle, through the gateway: the same guarantees in every mode. Ordering is proved
 * with files the commands write, never with elapsed time. Unsandboxed: these tests look at the
 * escaped processes from the host (a PID namespace ends them by itself; test/sandbox covers it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findByCookie } from '../../src/process/terminate';
import { useTempGateway } from '../helpers/gateway';
import { isAlive, UNSANDBOXED_POLICY, waitFor } from '../helpers/tmp';

const SECRET = 'lifecycle-secret-value-0123456789';

const temp = useTempGateway({ env: { EXECGATE_SECRET_TOKEN: SECRET }, policy: UNSANDBOXED_POLICY });

function readPids(file: string): number[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];
}

/*
 * Three ways out of the process group, each recording the pid of the process that escaped;
 * the command exits normally only once all three pids are on file, so the escapes happened
 * before the run ended.
 */
function escapeCommand(pids: string): string {
  return [
    'true <<secret:TOKEN>>',
    `setsid sleep 991 >/dev/null 2>&1 & echo $! >> ${pids}`,
    `(set -m; sleep 992 >/dev/null 2>&1 & echo $! >> ${pids})`,
    `setsid -f sh -c 'echo $$ >> ${pids}; exec sleep 993' >/dev/null 2>&1`,
    `while [ "$(wc -l < ${pids})" -lt 3 ]; do sleep 0.01; done`,
  ].join('; ');
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

describe('nothing survives a normal exit', () => {
  test.each(['sync', 'pty'] as const)('%s: setsid, set -m and setsid -f children are ended after exit 0', async (mode) => {
    const pids = join(temp.dir, 'pids');
    const result = await temp.gateway.exec({ command: escapeCommand(pids), mode, timeout: 60_000 });
    expect(result.exitCode).toBe(0);
    expect(result.timedOut).toBe(false);
    const escaped = readPids(pids);
    expect(escaped).toHaveLength(3);
    expect(await waitFor(() => escaped.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
    expect(findByCookie(result.id)).toEqual([]);
  }, 90_000);

  test('background: setsid, set -m and setsid -f children are ended after exit 0', async () => {
    const pids = join(temp.dir, 'pids');
    const started = await temp.gateway.exec({ command: escapeCommand(pids), mode: 'background' });
    const ended = await temp.gateway.background.wait(started.id, 60_000);
    expect(ended).toMatchObject({ state: 'exited', exitCode: 0 });
    const escaped = readPids(pids);
    expect(escaped).toHaveLength(3);
    expect(await waitFor(() => escaped.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
    expect(findByCookie(started.id)).toEqual([]);
  }, 90_000);

  test("`leftovers: 'keep'` keeps them when the policy allows background processes", async () => {
    const pids = join(temp.dir, 'pids');
    const result = await temp.gateway.exec({ command: escapeCommand(pids), leftovers: 'keep', timeout: 60_000 });
    const escaped = readPids(pids);
    try {
      expect(result.exitCode).toBe(0);
      for (const pid of escaped) expect(isAlive(pid)).toBe(true);
    } finally {
      killAll(escaped);
    }
  }, 90_000);

  test("`leftovers: 'keep'` is not honoured when the policy turns background processes off", async () => {
    await temp.reopen({
      policy: { ...UNSANDBOXED_POLICY, modes: { ...UNSANDBOXED_POLICY.modes, background: { ...UNSANDBOXED_POLICY.modes.background, allowed: false } } },
    });
    const pids = join(temp.dir, 'pids');
    const result = await temp.gateway.exec({ command: escapeCommand(pids), leftovers: 'keep', timeout: 60_000 });
    expect(result.exitCode).toBe(0);
    const escaped = readPids(pids);
    expect(escaped).toHaveLength(3);
    expect(await waitFor(() => escaped.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
  }, 90_000);
});

describe('a PTY run is read to its last byte', () => {
  // 2 MB then a marker, no newline (a terminal would turn \n into \r\n), 8 runs at once, 20 times.
  const SIZE = 2_000_000;
  const command = `head -c ${SIZE} /dev/zero | tr '\\0' x; printf END-MARK`;

  test('8 concurrent runs x 20 repetitions: every byte arrives, nothing is flagged cut', async () => {
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(Array.from({ length: 8 }, () => temp.gateway.exec({ command, mode: 'pty', ansi: 'keep', timeout: 120_000 })));
      for (const result of results) {
        expect(result.exitCode).toBe(0);
        expect(result.bytes.stdout).toBe(SIZE + 'END-MARK'.length);
        expect(result.stdout.endsWith('xEND-MARK')).toBe(true);
        expect(result.message).not.toMatch(/missing/);
        // The capture is cut (1 MiB per stream); the full-output file holds every byte.
        const file = readFileSync(result.fullOutputPath as string, 'utf8');
        expect(file.startsWith(`${'x'.repeat(SIZE)}END-MARK\n`)).toBe(true);
      }
    }
  }, 600_000);
});
