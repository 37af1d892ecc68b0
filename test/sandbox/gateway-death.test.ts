/*
 * A gateway process that dies by SIGKILL runs no code. Its sandboxed runs, and the process that
 * holds its shared network namespace, must end anyway, whatever moment of a run's start the
 * gateway dies at: bubblewrap's parent-death signal is armed a few milliseconds after it starts,
 * and the watchdog (which sweeps run and holder cookies when the gateway's pipe closes) covers
 * that window. A child Node process is the gateway; it dies after a delay from 0 ms (before
 * anything started) to well after the command runs. Every process it started has the test's
 * directory as its working directory, so none may be left with it afterwards.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir, waitFor } from '../helpers/tmp';

const DIST = join(__dirname, '..', '..', 'dist');

function processesWithCwd(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === dir) pids.push(Number(entry));
    } catch { /* gone, or not ours to read */ }
  }
  return pids;
}

const SCRIPT = `
const { createGateway } = require(${JSON.stringify(DIST)});
const dir = process.argv[1];
const gateway = createGateway({ home: dir + '/home', cwd: dir });
gateway.exec({ command: 'exec sleep 300' }).catch(() => {});
setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(process.argv[2]));
`;

test.each([0, 2, 5, 10, 20, 40, 80, 300])('a gateway SIGKILLed %i ms into a sandboxed run leaves no process behind', async (delay) => {
  const tmp = makeTempDir();
  try {
    const child = spawn(process.execPath, ['-e', SCRIPT, tmp.dir, String(delay)], {
      cwd: tmp.dir,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, EXECGATE_KEYRING: 'off' },
    });
    const signal = await new Promise((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
    expect(signal).toBe('SIGKILL');
    expect(await waitFor(() => processesWithCwd(tmp.dir).length === 0, 20_000)).toBe(true);
  } finally {
    for (const pid of processesWithCwd(tmp.dir)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    tmp.cleanup();
  }
}, 120_000);
