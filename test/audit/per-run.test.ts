/*
 * What one run costs the audit log in the default durability (`fsync: before-spawn`): its
 * request is held and goes out with its start, the start's one fdatasync covers both, and its
 * end follows under the same lease of the lock (fs/lock.ts): one turn of the lock for a short
 * run, none for a run that follows another within the lease. Counted on a real gateway running
 * real bash (the lock's symlink(2) and every fdatasync of the process are watched), and held
 * against what the log promises: records in the order they happened, a held record never lost
 * by a write between, written at close, several processes on one log still one chain.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { useAuditLeases } from '../../src/audit/lock';
import { AuditLog } from '../../src/audit/log';
import { createGateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { makeTempDir, waitFor } from '../helpers/tmp';
import { execgate, gatewayEnv, readRecords } from './helpers';

// The real calls, counted: every module of this test's gateway sees these.
jest.mock('node:fs', () => {
  const actual = jest.requireActual<typeof import('node:fs')>('node:fs');
  return { ...actual, symlinkSync: jest.fn(actual.symlinkSync), fdatasync: jest.fn(actual.fdatasync), fdatasyncSync: jest.fn(actual.fdatasyncSync) };
});
const counted = fs as unknown as Record<'symlinkSync' | 'fdatasync' | 'fdatasyncSync', jest.Mock>;

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir('execgate-per-run-');
  home = tmp.dir;
});
afterEach(() => {
  useAuditLeases(0);
  tmp.cleanup();
});

const UNSANDBOXED = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' as const } };

function verify(): { status: number | null; stdout: string } {
  const result = execgate(['audit', 'verify'], home);
  return { status: result.status, stdout: result.stdout + result.stderr };
}

test('a library gateway takes the audit lock per record: two turns a run, none kept between', async () => {
  const gateway = createGateway({ policy: UNSANDBOXED, home, env: gatewayEnv(home) });
  await gateway.exec({ command: 'true' });
  const lockPath = join(home, 'audit.log.lock');
  counted.symlinkSync.mockClear();
  const result = await gateway.exec({ command: 'echo hi <<secret:x>>' });
  expect(result.exitCode).toBe(0);
  expect(counted.symlinkSync.mock.calls.filter(([, path]) => path === lockPath)).toHaveLength(2);
  // Nothing kept: a host that blocks its event loop (spawnSync of a CLI on the same log) holds no lock meanwhile.
  expect(() => fs.lstatSync(lockPath)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  await gateway.close();
});

test('with leases (execgate run, execgate mcp): one turn of the audit lock a run (none back to back), one fdatasync, records in order', async () => {
  useAuditLeases();
  const gateway = createGateway({ policy: UNSANDBOXED, home, env: gatewayEnv(home) });
  await gateway.exec({ command: 'true' }); // the log's first write opens it (and syncs its directory)
  const lockPath = join(home, 'audit.log.lock');
  const held = (): boolean => { try { return fs.lstatSync(lockPath).isSymbolicLink(); } catch { return false; } };
  // The lease of the last record is kept, then lapses with nothing more to write.
  expect(held()).toBe(true);
  expect(await waitFor(() => !held(), 10_000)).toBe(true);
  for (const name of ['symlinkSync', 'fdatasync', 'fdatasyncSync'] as const) counted[name].mockClear();
  const result = await gateway.exec({ command: 'echo hi <<secret:x>>' });
  expect(result.exitCode).toBe(0);
  expect(result.stdout).toBe('hi [REDACTED:secret:x]\n');
  expect(counted.symlinkSync.mock.calls.filter(([, path]) => path === lockPath)).toHaveLength(1);
  expect(counted.fdatasync.mock.calls.length + counted.fdatasyncSync.mock.calls.length).toBe(1);
  // The next run, at once: its records go under the lease the last one left. (A lease lapses
  // after 100 ms with nothing to write; on a loaded machine the gap between two runs can be
  // longer, so a few runs in a row are tried: one of them must take no turn of the lock.)
  let taken = -1;
  for (let attempt = 0; attempt < 5 && taken !== 0; attempt++) {
    counted.symlinkSync.mockClear();
    const next = await gateway.exec({ command: 'true' });
    expect(next.exitCode).toBe(0);
    taken = counted.symlinkSync.mock.calls.filter(([, path]) => path === lockPath).length;
    expect(taken).toBeLessThanOrEqual(1);
  }
  expect(taken).toBe(0);
  expect(held()).toBe(true);
  await gateway.close();
  // Closing the log ends its lease.
  expect(held()).toBe(false);

  const records = readRecords(join(home, 'audit.log')).filter((record) => record.runId === result.id);
  expect(records.map((record) => record.event)).toEqual(['exec.request', 'exec.started', 'exec.finished']);
  // The request keeps the time it was made, before its start's.
  expect(Date.parse(records[0].time as string)).toBeLessThanOrEqual(Date.parse(records[1].time as string));
  // Held, it is masked like any record: no value reaches the file.
  expect(fs.readFileSync(join(home, 'audit.log'), 'utf8')).not.toContain(gatewayEnv(home).EXECGATE_SECRET_X);
  expect(verify()).toMatchObject({ status: 0 });
});

test('a held record goes out ahead of whatever is written next, and at close; a write between never reorders it', () => {
  const path = join(home, 'audit.log');
  const log = new AuditLog({ home, fsync: 'never' });
  log.write('gateway.started', { pid: 1 });
  const size = fs.statSync(path).size;
  log.hold('exec.request', { runId: 'run_a', command: 'true' });
  expect(log.heldCount).toBe(1);
  // Held: nothing of it in the file yet.
  expect(fs.statSync(path).size).toBe(size);
  // Another record (a secret source's answer while the run is prepared, another run's end).
  log.write('secret.source', { runId: 'run_a', source: 's' });
  expect(log.heldCount).toBe(0);
  log.hold('exec.request', { runId: 'run_b', command: 'false' });
  log.close();
  expect(readRecords(path).map((record) => `${String(record.event)}:${String(record.runId ?? '')}`)).toEqual([
    'gateway.started:', 'exec.request:run_a', 'secret.source:run_a', 'exec.request:run_b',
  ]);
  expect(() => log.hold('exec.request', {})).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_IO' }));
  expect(verify()).toMatchObject({ status: 0 });
});

test('three processes writing runs (request held, start synced, end) at once, rotating: one intact chain, each request right before its start', async () => {
  const child = join(__dirname, 'fixtures', 'run-writer-child.js');
  const writers = [0, 1, 2].map(() => new Promise<number | null>((resolve) => {
    spawn(process.execPath, [child, home, '60', '8000'], { stdio: 'ignore', env: { PATH: process.env.PATH } }).once('exit', resolve);
  }));
  expect(await Promise.all(writers)).toEqual([0, 0, 0]);
  const result = verify();
  expect(result.stdout).toContain('540 record(s), seq 1 to 540');
  expect(result.status).toBe(0);
  // Each request went out in the same turn of the lock as its start: adjacent in the chain.
  const files = fs.readdirSync(home).filter((name) => name.startsWith('audit.log') && !name.includes('lock')).map((name) => join(home, name));
  const records = files.flatMap((file) => readRecords(file)).sort((a, b) => (a.seq as number) - (b.seq as number));
  const seqOf = new Map(records.map((record) => [`${String(record.event)}:${String(record.runId)}`, record.seq as number]));
  for (const record of records.filter((r) => r.event === 'exec.request')) {
    expect(seqOf.get(`exec.started:${String(record.runId)}`)).toBe((record.seq as number) + 1);
  }
});
