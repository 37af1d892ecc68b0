/*
 * A full disk (a small tmpfs this test mounts) at each write path: the spill file of a sync run,
 * the audit log before a spawn and at a run's end, a background run's output file and records,
 * the vault and its lock. Each time the host process lives, the user gets a coded error or a
 * notice, nothing is left that the next caller misreads, and once space is back the next write
 * works and `execgate audit verify` passes.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { isExecgateError } from '../../src/errors';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';
import { execgate, freezePath, makeDir, mountSmallDisk, readAudit, testWithMounts, verifyAudit, type SmallDisk } from './helpers';

let disk: SmallDisk | undefined;
let work: ReturnType<typeof makeTempDir>;
let gateway: Gateway | undefined;

beforeEach(() => {
  work = makeTempDir();
});

afterEach(async () => {
  disk?.free();
  await gateway?.close().catch(() => undefined);
  gateway = undefined;
  disk?.unmount();
  disk = undefined;
  work.cleanup();
});

function openGateway(home: string): Gateway {
  gateway = createGateway({ home, cwd: work.dir, env: baseEnv() });
  return gateway;
}

function lockLeftovers(home: string): string[] {
  return readdirSync(home).filter((name) => name.includes('.lock'));
}

testWithMounts('a sync run whose output needs a spill file on a full disk: the run goes on, the result says what was lost, the end is recorded once space is back', async () => {
  disk = mountSmallDisk(1024 * 1024);
  const home = join(disk.dir, 'home');
  const g = openGateway(home);
  await g.exec({ command: 'true' });
  let filled = false;
  // The disk fills while the run is under way: after its start was recorded, before its output overflows.
  const result = await g.exec(
    { command: 'echo first; sleep 0.2; head -c 3000000 /dev/zero | tr "\\0" a; echo; echo last', maxOutput: 64 * 1024 },
    { onOutput: () => { if (!filled) { filled = true; disk!.fill(); } } },
  );
  expect(result.exitCode).toBe(0);
  expect(result.output.startsWith('first\n')).toBe(true);
  expect(result.output.endsWith('last\n')).toBe(true);
  expect(result.fullOutputPath).toBeUndefined();
  expect(result.notices?.join('\n')).toMatch(/full output could not be saved to a file \(ENOSPC\)/);
  expect(result.notices?.join('\n')).toMatch(/audit log could not record the end of this run \(EXECGATE_ERR_AUDIT_IO: ENOSPC\)/);
  expect(existsSync(join(home, 'runs')) ? readdirSync(join(home, 'runs')) : []).toEqual([]);
  expect(lockLeftovers(home)).toEqual([]);
  disk.free();
  // The next record carries the one that waited.
  await g.exec({ command: 'true' });
  const finished = readAudit(home).filter((record) => record.event === 'exec.finished' && record.runId === result.id);
  expect(finished).toHaveLength(1);
  expect((finished[0]!.deferred as { code: string }).code).toBe('EXECGATE_ERR_AUDIT_IO');
  await g.close();
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('a run asked for on a full disk is refused with EXECGATE_ERR_AUDIT_IO before anything runs; the next one works once space is back', async () => {
  disk = mountSmallDisk(512 * 1024);
  const home = join(disk.dir, 'home');
  const g = openGateway(home);
  await g.exec({ command: 'true' });
  disk.fill();
  // The last page of the audit log still has room for a few records: runs go on until it is used up.
  let error: unknown;
  let attempt = 0;
  for (; attempt < 200 && error === undefined; attempt++) {
    try {
      await g.exec({ command: `touch ran-${attempt}` });
    } catch (caught) {
      error = caught;
    }
  }
  expect(isExecgateError(error) && error.code).toBe('EXECGATE_ERR_AUDIT_IO');
  expect((error as Error).message).toMatch(/ENOSPC/);
  expect(existsSync(join(work.dir, `ran-${attempt - 1}`))).toBe(false);
  expect(lockLeftovers(home)).toEqual([]);
  disk.free();
  expect((await g.exec({ command: 'echo back' })).stdout).toBe('back\n');
  await g.close();
  const check = verifyAudit(home, work.dir);
  expect(check.text).toMatch(/OK: the chain is intact/);
  expect(check.ok).toBe(true);
});

testWithMounts('a background run whose output file fills the disk goes on; the file marks the gap, the status says so, and the end is recorded', async () => {
  disk = mountSmallDisk(1024 * 1024);
  const home = join(disk.dir, 'home');
  const g = openGateway(home);
  const flag1 = join(work.dir, 'flag1');
  const flag2 = join(work.dir, 'flag2');
  const started = await g.exec({
    mode: 'background',
    command: 'echo first; while [ ! -e flag1 ]; do sleep 0.05; done; head -c 200000 /dev/zero | tr "\\0" x; echo; echo middle; while [ ! -e flag2 ]; do sleep 0.05; done; echo after',
  });
  expect(await waitFor(() => readFileSync(started.outputPath, 'utf8').includes('first'), 30_000)).toBe(true);
  disk.fill();
  writeFileSync(flag1, '');
  expect(await waitFor(() => g.background.status(started.id).notice !== undefined, 30_000)).toBe(true);
  expect(g.background.status(started.id).notice).toMatch(/bytes of output could not be written to the output file \(ENOSPC\)/);
  // The whole burst (200,000 x, a newline, `middle`) has reached the gateway and been lost before
  // the disk is freed: on a loaded machine the gateway may still be reading it when `middle` is
  // echoed, and what it reads after the free is written.
  const missing = (): number => Number(/(\d+) bytes of output/.exec(g.background.status(started.id).notice ?? '')?.[1] ?? 0);
  expect(await waitFor(() => missing() >= 200_000 + 1 + 'middle\n'.length, 30_000)).toBe(true);
  expect(g.background.status(started.id).state).toBe('running');
  disk.free();
  writeFileSync(flag2, '');
  const ended = await g.background.wait(started.id, 60_000);
  expect(ended.state).toBe('exited');
  expect(ended.exitCode).toBe(0);
  const text = readFileSync(started.outputPath, 'utf8');
  expect(text).toMatch(/^first\n/);
  expect(text).toMatch(/\[execgate: \d+ bytes of output could not be written here \(ENOSPC\)\]\nafter\n/);
  expect(text).toMatch(/\[background process completed with exit code 0\]\n$/);
  const record = JSON.parse(readFileSync(join(home, 'bg', `${started.id}.json`), 'utf8')) as { state: string; notice?: string };
  expect(record.state).toBe('exited');
  expect(record.notice).toMatch(/ENOSPC/);
  expect(readdirSync(join(home, 'bg')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  await g.close();
  expect(readAudit(home).some((r) => r.event === 'background.ended' && r.runId === started.id && r.state === 'exited')).toBe(true);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('a background run whose output file cannot be created (a read-only directory): EXECGATE_ERR_BACKGROUND_IO, nothing started', async () => {
  disk = mountSmallDisk(512 * 1024);
  const home = join(disk.dir, 'home');
  const g = openGateway(home);
  await g.exec({ command: 'true' });
  const thaw = freezePath(makeDir(home, 'bg'));
  let error: unknown;
  try {
    await g.exec({ mode: 'background', command: 'touch started-anyway; sleep 5' });
  } catch (caught) {
    error = caught;
  } finally {
    thaw();
  }
  expect(isExecgateError(error) && error.code).toBe('EXECGATE_ERR_BACKGROUND_IO');
  expect((error as Error).message).toMatch(/EROFS.*Nothing was started/);
  expect(existsSync(join(work.dir, 'started-anyway'))).toBe(false);
  await g.close();
  expect(readAudit(home).some((record) => record.event === 'exec.failed' && record.code === 'EXECGATE_ERR_BACKGROUND_IO')).toBe(true);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});

testWithMounts('`secret set` on a full disk: a coded error, no lock file left, nothing stored; once space is back it works', async () => {
  disk = mountSmallDisk(512 * 1024);
  const home = join(disk.dir, 'home');
  expect(execgate(['secret', 'set', '--store', 'vault', 'first'], { home, cwd: work.dir, input: 'first-value-123' }).status).toBe(0);
  disk.fill();
  const refused = execgate(['secret', 'set', '--store', 'vault', 'second'], { home, cwd: work.dir, input: 'second-value-123' });
  expect(refused.status).toBe(125);
  expect(refused.stderr).toMatch(/^execgate: EXECGATE_ERR_(AUDIT|VAULT)_IO: .*ENOSPC.*(Nothing was changed|The previous vault is unchanged)/m);
  expect(refused.stderr).not.toMatch(/EXECGATE_ERR_UNEXPECTED|at .*\.js:\d+/);
  expect(lockLeftovers(home)).toEqual([]);
  // Twice: the second caller must not trip over anything the first one left.
  expect(execgate(['secret', 'set', '--store', 'vault', 'second'], { home, cwd: work.dir, input: 'second-value-123' }).stderr).toMatch(/EXECGATE_ERR_(AUDIT|VAULT)_IO/);
  disk.free();
  expect(execgate(['secret', 'test', 'second'], { home, cwd: work.dir }).stdout).toMatch(/not found/);
  expect(execgate(['secret', 'set', '--store', 'vault', 'second'], { home, cwd: work.dir, input: 'second-value-123' }).status).toBe(0);
  expect(execgate(['secret', 'test', 'second'], { home, cwd: work.dir }).stdout).toMatch(/resolves from vault/);
  expect(lockLeftovers(home)).toEqual([]);
  expect(verifyAudit(home, work.dir).ok).toBe(true);
});
