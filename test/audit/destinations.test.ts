/*
 * Where records go, and who may write them: stdout and pino transports carry the same sealed,
 * chained lines as the file (chain state kept beside the key, so it survives restarts); a
 * forward copy matches the file byte for byte; several processes writing one log at once, with
 * rotation, still produce one intact chain.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { listAuditFiles } from '../../src/audit/files';
import { AuditLog } from '../../src/audit/log';
import { makeTempDir, waitFor } from '../helpers/tmp';
import { execgate, readLines } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir('execgate-dest-');
  home = tmp.dir;
});
afterEach(() => tmp.cleanup());

const CHILD = join(__dirname, 'fixtures', 'writer-child.js');

test('stdout: sealed lines on stdout, the chain continues across runs, and the captured output verifies', () => {
  let captured = '';
  for (let run = 0; run < 2; run++) {
    const child = spawnSync(process.execPath, [CHILD, home, '3', 'stdout'], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(child.status).toBe(0);
    captured += child.stdout;
  }
  const records = captured.trim().split('\n').map((line) => JSON.parse(line) as { seq: number; prev: string; hash: string });
  expect(records.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(records[3]!.prev).toBe(records[2]!.hash);
  expect(existsSync(join(home, 'audit.log'))).toBe(false);
  const file = join(home, 'collected.log');
  writeFileSync(file, captured);
  const result = execgate(['audit', 'verify', file], home);
  expect(result.stdout).toContain('OK: the chain is intact');
  expect(result.status).toBe(0);
});

test('a pino transport (pino/file in a worker thread) receives lines that verify', async () => {
  const target = join(home, 'shipped.log');
  const log = new AuditLog({ home, destination: { target: 'pino/file', options: { destination: target, mkdir: true } } });
  for (let index = 0; index < 5; index++) log.write('exec.request', { runId: `run_${index}`, command: 'true' });
  log.close();
  expect(await waitFor(() => existsSync(target) && readLines(target).length === 5, 30_000)).toBe(true);
  const result = execgate(['audit', 'verify', target], home);
  expect(result.stdout).toContain('5 record(s), seq 1 to 5');
  expect(result.status).toBe(0);
});

test('forward: a copy of every sealed line, identical to the file', () => {
  const copies: string[] = [];
  const stream = new Writable({ write(chunk: Buffer, _encoding, callback) { copies.push(chunk.toString()); callback(); } });
  const log = new AuditLog({ home, forward: { write: (line: string) => stream.write(line) } });
  for (let index = 0; index < 4; index++) log.write('exec.request', { runId: `run_${index}` });
  log.close();
  expect(copies.join('')).toBe(readFileSync(join(home, 'audit.log'), 'utf8'));
});

test('an invalid destination is refused with a coded error', () => {
  expect(() => new AuditLog({ home, destination: 'syslog' as never })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION' }));
  expect(() => new AuditLog({ home, fsync: 'sometimes' as never })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION' }));
});

test('three processes writing one log at once, rotating as they go: one intact chain, nothing lost', async () => {
  const writers = [0, 1, 2].map(
    () =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [CHILD, home, '150', '6000'], { stdio: 'ignore', env: { PATH: process.env.PATH } });
        child.once('exit', resolve);
      }),
  );
  expect(await Promise.all(writers)).toEqual([0, 0, 0]);
  const files = listAuditFiles(join(home, 'audit.log'), existsSync);
  expect(files.length).toBeGreaterThan(3);
  const result = execgate(['audit', 'verify'], home);
  expect(result.stdout).toContain('450 record(s), seq 1 to 450');
  expect(result.status).toBe(0);
});
