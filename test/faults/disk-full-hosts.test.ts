/*
 * A full disk under the hosts themselves: `execgate run` (whose exit status must stay the
 * command's, not a crash's 1), `execgate mcp` (whose death would take every session with it) and
 * a detached background run started by the CLI (whose supervisor must stay until its end can be
 * recorded). The state directory is on a small tmpfs this test mounts; the command waits for a
 * flag in its workspace (not on that disk) so that the disk fills after its start was recorded.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { startStdio, serverEnv, structured, textOf } from '../mcp/helpers';
import { CLI, cliEnv, execgate, mountSmallDisk, readAudit, testWithMounts, verifyAudit, type SmallDisk } from './helpers';

let disk: SmallDisk | undefined;
let work: ReturnType<typeof makeTempDir>;

beforeEach(() => {
  work = makeTempDir();
});

afterEach(() => {
  disk?.free();
  disk?.unmount();
  disk = undefined;
  work.cleanup();
});

/** Waits for the flag, then writes 3 MB (more than any capture keeps), then `last`; exits 3. */
const BIG_AFTER_FLAG = 'echo first; while [ ! -e flag ]; do sleep 0.05; done; head -c 3000000 /dev/zero | tr "\\0" a; echo; echo last; exit 3';

/** Whether the log has such a record yet (a line being written as it is read is not one yet). */
function hasRecord(home: string, event: string, commandPart: string): boolean {
  try {
    return readAudit(home).some((record) => record.event === event && String(record.command).includes(commandPart));
  } catch {
    return false;
  }
}

function lockLeftovers(home: string): string[] {
  return readdirSync(home).filter((name) => name.includes('.lock'));
}

testWithMounts('`execgate run` on a disk that fills mid-run: the exit status is the command\'s, the lost file is a notice, no stack trace', async () => {
  disk = mountSmallDisk(1024 * 1024);
  const home = join(disk.dir, 'home');
  expect(execgate(['run', '--', 'true'], { home, cwd: work.dir }).status).toBe(0);
  const child = spawn(process.execPath, [CLI, 'run', '--', BIG_AFTER_FLAG], { cwd: work.dir, env: cliEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  const status = new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(await waitFor(() => stdout.startsWith('first\n'), 60_000)).toBe(true);
  disk.fill();
  writeFileSync(join(work.dir, 'flag'), '');
  expect(await status).toBe(3);
  expect(stdout.endsWith('last\n')).toBe(true);
  expect(stderr).toMatch(/notice: The full output could not be saved to a file \(ENOSPC\)/);
  expect(stderr).not.toMatch(/EXECGATE_ERR_UNEXPECTED|at .*\.js:\d+/);
  expect(lockLeftovers(home)).toEqual([]);
  disk.free();
  expect(execgate(['run', '--', 'echo back'], { home, cwd: work.dir }).stdout).toBe('back\n');
  // The end of the run is in the log exactly once (written then, or carried by a later record).
  expect(readAudit(home).filter((record) => record.event === 'exec.finished' && String(record.command).includes('exit 3'))).toHaveLength(1);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('`execgate mcp` on a disk that fills mid-call: the call answers with a notice, the server and its session go on', async () => {
  disk = mountSmallDisk(1024 * 1024);
  const home = join(disk.dir, 'home');
  const server = await startStdio({ cwd: work.dir, env: serverEnv(home) });
  try {
    expect(textOf(await server.bash('echo ready'))).toBe('ready\n');
    const call = server.bash(BIG_AFTER_FLAG);
    // The call has started once its start is in the log.
    expect(await waitFor(() => hasRecord(home, 'exec.started', 'exit 3'), 60_000)).toBe(true);
    disk.fill();
    writeFileSync(join(work.dir, 'flag'), '');
    const result = await call;
    const shown = structured(result);
    expect(shown.exit_code).toBe(3);
    expect(shown.truncated).toBe(true);
    expect(shown.full_output_path).toBeUndefined();
    expect((shown.notices as string[]).join('\n')).toMatch(/full output could not be saved to a file \(ENOSPC\)/);
    expect(textOf(result)).toMatch(/\[execgate: The full output could not be saved to a file \(ENOSPC\)/);
    disk.free();
    expect(textOf(await server.bash('echo still here'))).toBe('still here\n');
    expect(server.stderr()).not.toMatch(/EXECGATE_ERR_UNEXPECTED|at .*\.js:\d+/);
  } finally {
    await server.close();
  }
  expect(readAudit(home).filter((record) => record.event === 'exec.finished' && String(record.command).includes('exit 3'))).toHaveLength(1);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('a detached background run that ends on a full disk: its supervisor stays and records the end once space is back', async () => {
  disk = mountSmallDisk(1024 * 1024);
  const home = join(disk.dir, 'home');
  const started = execgate(['run', '--mode', 'background', '--json', '--', 'echo first; while [ ! -e flag ]; do sleep 0.05; done; echo done; exit 4'], { home, cwd: work.dir });
  expect(started.status).toBe(0);
  const { id, pid } = JSON.parse(started.stdout) as { id: string; pid: number };
  const recordPath = join(home, 'bg', `${id}.json`);
  const { supervisorPid } = JSON.parse(readFileSync(recordPath, 'utf8')) as { supervisorPid: number };
  disk.fill();
  writeFileSync(join(work.dir, 'flag'), '');
  // The run ends; its end cannot be written anywhere.
  expect(await waitFor(() => !isAlive(pid), 60_000)).toBe(true);
  // Its record file cannot be replaced (the audit log may still have room on its last page).
  expect(isAlive(supervisorPid)).toBe(true);
  disk.free();
  // The supervisor tries again about once a second; once it has written the end it goes.
  expect(await waitFor(() => !isAlive(supervisorPid), 60_000)).toBe(true);
  const record = JSON.parse(readFileSync(recordPath, 'utf8')) as { state: string; exitCode: number };
  expect(record).toMatchObject({ state: 'exited', exitCode: 4 });
  expect(readAudit(home).filter((entry) => entry.event === 'background.ended' && entry.runId === id)).toEqual([expect.objectContaining({ state: 'exited', exitCode: 4 })]);
  const listed = JSON.parse(execgate(['ps', '--json'], { home, cwd: work.dir }).stdout) as Array<{ id: string; state: string }>;
  expect(listed.find((entry) => entry.id === id)).toMatchObject({ state: 'exited' });
  expect(lockLeftovers(home)).toEqual([]);
  expect(readdirSync(join(home, 'bg')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});
