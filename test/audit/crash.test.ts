/*
 * Durability and the crash policy. A child writes records and reports each one acknowledged; it
 * is killed with SIGKILL right after an acknowledgement. Every acknowledged record must be in
 * the file, and the chain must verify: at once, or, when the kill cut a later write short,
 * after the next writer set the partial line aside with a `chain.resumed` record.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditLog } from '../../src/audit/log';
import { makeTempDir } from '../helpers/tmp';
import { execgate, readLines, SECRET_VALUE } from './helpers';
import { expectNoLeak } from '../helpers/leak';

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir('execgate-crash-');
  home = tmp.dir;
});
afterEach(() => tmp.cleanup());

const CHILD = join(__dirname, 'fixtures', 'crash-child.js');

/** Run the child until `acks` acknowledgements, SIGKILL it in the same tick, return the last ack seen. */
function runAndKill(mode: 'writer' | 'gateway', acks: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, mode, home], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, EXECGATE_SECRET_X: SECRET_VALUE } });
    let buffer = '';
    let seen: string[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      seen = seen.concat(lines.filter((line) => line.startsWith('ack ')).map((line) => line.slice(4)));
      if (seen.length >= acks && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child exited with ${code ?? signal}: ${stderr}`));
      else resolve(seen.at(-1)!);
    });
  });
}

function verify(): { status: number | null; stdout: string } {
  const result = execgate(['audit', 'verify'], home);
  return { status: result.status, stdout: result.stdout + result.stderr };
}

/** Verify: intact, or (only) the last line cut by the kill; then a restart resumes and it is intact. */
function expectVerifiesAfterRestart(): void {
  const first = verify();
  if (first.status !== 0) {
    expect(first.stdout).toMatch(/BROKEN: \S+ line \d+: the file ends in the middle of a line/);
    expect(first.stdout).not.toMatch(/more break/);
  }
  const log = new AuditLog({ home });
  log.write('gateway.started', { pid: 0 });
  log.close();
  const second = verify();
  expect(second.stdout).toContain('OK: the chain is intact');
  expect(second.status).toBe(0);
}

test('writer killed right after an acknowledgement: the acknowledged record is in the file, the chain verifies', async () => {
  const acked = Number(await runAndKill('writer', 300));
  const records = readLines(join(home, 'audit.log'))
    .map((line) => { try { return JSON.parse(line) as { seq: number }; } catch { return undefined; } })
    .filter((record) => record !== undefined);
  expect(records.some((record) => record.seq === acked)).toBe(true);
  expectVerifiesAfterRestart();
});

test('gateway killed right after a run returned: its finished record is in the file, no value in the log, the chain verifies', async () => {
  const runId = await runAndKill('gateway', 3);
  const text = readFileSync(join(home, 'audit.log'), 'utf8');
  const events = text.split('\n').filter((line) => line.includes(`"runId":"${runId}"`)).map((line) => (JSON.parse(line) as { event: string }).event);
  expect(events).toEqual(['exec.request', 'exec.started', 'exec.finished']);
  expectNoLeak(text, [SECRET_VALUE]);
  expectVerifiesAfterRestart();
});

test('a partial last line: verify reports it; the next writer sets it aside with chain.resumed and verify notes it', () => {
  const path = join(home, 'audit.log');
  const log = new AuditLog({ home });
  for (let index = 0; index < 5; index++) log.write('exec.request', { runId: `run_${index}`, command: 'true' });
  log.close();
  // What a write cut short leaves: the first bytes of a record, no newline.
  const cut = readLines(path)[2]!.slice(0, 57);
  appendFileSync(path, cut);
  let result = verify();
  expect(result.status).toBe(1);
  expect(result.stdout).toContain(`BROKEN: ${path} line 6: the file ends in the middle of a line (57 bytes with no line end)`);

  const offset = readFileSync(path).length - 57;
  const next = new AuditLog({ home });
  next.write('gateway.started', { pid: 0 });
  next.close();
  const lines = readFileSync(path, 'utf8').split('\n');
  expect(lines[5]).toBe(cut);
  const resumed = JSON.parse(lines[6]!) as Record<string, unknown>;
  expect(resumed).toMatchObject({ seq: 6, event: 'chain.resumed', recovered: { offset, bytes: 58 } });
  expect(JSON.parse(lines[7]!)).toMatchObject({ seq: 7, event: 'gateway.started', prev: resumed.hash });
  result = verify();
  expect(result.status).toBe(0);
  expect(result.stdout).toContain(`note: ${path} line 6: 58 bytes here are not a record (a write cut short by a crash); the writer set them aside in chain.resumed seq 6`);

  // The leftover cannot be swapped for something else afterwards: chain.resumed names its size.
  const tampered = readFileSync(path, 'utf8').replace(`\n${cut}\n`, `\n${cut}xx\n`);
  require('node:fs').writeFileSync(path, tampered);
  result = verify();
  expect(result.status).toBe(1);
  expect(result.stdout).toMatch(/BROKEN: .* line 6: this line is not an audit record .*no chain.resumed record accounts for it/);
});

test('start records made durable off the event loop: many at once, across rotations and close, each settles and the chain verifies', async () => {
  const log = new AuditLog({ home, maxBytes: 4096 });
  const synced: Array<Promise<void>> = [];
  for (let index = 0; index < 60; index++) {
    synced.push(log.writeAndSync('exec.started', { runId: `run_${index}`, command: `echo ${'y'.repeat(index * 7)}` }));
    // Plain records between them, as other runs' requests and ends would be.
    log.write('exec.finished', { runId: `run_${index - 1}` });
  }
  // Closing the log while syncs are still running: their descriptors stay open until they end.
  log.close();
  await expect(Promise.all(synced)).resolves.toHaveLength(60);
  const result = verify();
  expect(result.stdout).toMatch(/\b120 record\(s\), seq 1 to 120\b/);
  expect(result.status).toBe(0);
});
