/*
 * Playing the attacker against a log, then `execgate audit verify`: each kind of tampering is
 * detected, and the report names the first broken record (file, line, seq) and why.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { AuditLog } from '../../src/audit/log';
import { listAuditFiles } from '../../src/audit/files';
import { makeTempDir } from '../helpers/tmp';
import { execgate, readLines, writeLines } from './helpers';
import { existsSync } from 'node:fs';

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let path: string;

function writeLog(records: number, options: { maxBytes?: number } = {}): void {
  const log = new AuditLog({ home, path, ...options });
  for (let index = 1; index <= records; index++) {
    log.write(index % 3 === 0 ? 'exec.finished' : 'exec.request', { runId: `run_${index}`, command: `echo ${index}`, exitCode: 0, actor: 'tool:test' });
  }
  log.close();
}

function verify(args: string[] = []): { status: number | null; out: string; first: string } {
  const result = execgate(['audit', 'verify', ...args], home);
  const first = result.stdout.split('\n').find((line) => line.startsWith('BROKEN: ')) ?? '';
  return { status: result.status, out: result.stdout + result.stderr, first };
}

beforeEach(() => {
  tmp = makeTempDir('execgate-tamper-');
  home = tmp.dir;
  path = join(home, 'audit.log');
});
afterEach(() => tmp.cleanup());

describe('one file', () => {
  beforeEach(() => writeLog(12));

  test('an intact log verifies (exit 0)', () => {
    const result = verify();
    expect(result.out).toContain('1 file(s), 12 record(s), seq 1 to 12');
    expect(result.out).toContain('OK: the chain is intact');
    expect(result.status).toBe(0);
  });

  test('editing a field is named at its record', () => {
    const lines = readLines(path);
    lines[4] = lines[4]!.replace('"command":"echo 5"', '"command":"echo 5; curl evil"');
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toBe(`BROKEN: ${path} line 5 (seq 5): its hash does not match its content: it was edited, or forged by someone without the audit key`);
  });

  test('editing a record and recomputing a plain sha256 hash does not help', () => {
    const lines = readLines(path);
    const record = JSON.parse(lines[6]!) as Record<string, unknown>;
    record.exitCode = 1;
    delete record.hash;
    const body = JSON.stringify(record);
    const hash = require('node:crypto').createHash('sha256').update(body).digest('hex') as string;
    lines[6] = `${body.slice(0, -1)},"hash":"${hash}"}`;
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toMatch(/line 7 \(seq 7\): its hash does not match its content/);
  });

  test('deleting a record is named at the record after it', () => {
    const lines = readLines(path);
    lines.splice(4, 1);
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toBe(`BROKEN: ${path} line 5 (seq 6): seq 6 follows seq 4: seq 5 is missing (records deleted or moved)`);
  });

  test('reordering two records is named, and the second break says out of order', () => {
    const lines = readLines(path);
    [lines[4], lines[5]] = [lines[5]!, lines[4]!];
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toBe(`BROKEN: ${path} line 5 (seq 6): seq 6 follows seq 4: seq 5 is missing (records deleted or moved)`);
    expect(result.out).toContain(`${path} line 6 (seq 5): seq 5 comes after seq 6: out of order (records moved, copied or replayed)`);
  });

  test('inserting a forged record is named at the forgery', () => {
    const lines = readLines(path);
    const forged = JSON.parse(lines[3]!) as Record<string, unknown>;
    forged.seq = 5;
    forged.prev = forged.hash;
    forged.command = 'echo innocent';
    forged.hash = randomBytes(32).toString('hex');
    lines.splice(4, 0, JSON.stringify(forged));
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toMatch(new RegExp(`^BROKEN: ${path} line 5 \\(seq 5\\): its hash does not match its content`));
  });

  test('inserting a copy of a genuine record (replay) is named', () => {
    const lines = readLines(path);
    lines.splice(8, 0, lines[2]!);
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toBe(`BROKEN: ${path} line 9 (seq 3): seq 3 comes after seq 8: out of order (records moved, copied or replayed)`);
  });

  test('inserting a line that is not a record is named', () => {
    const lines = readLines(path);
    lines.splice(2, 0, 'hello, reviewer');
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toMatch(new RegExp(`^BROKEN: ${path} line 3: this line is not an audit record .*no chain.resumed record accounts for it`));
  });

  test('truncating the file mid-record is named', () => {
    truncateSync(path, statSync(path).size - 40);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toMatch(new RegExp(`^BROKEN: ${path} line 12: the file ends in the middle of a line \\(\\d+ bytes with no line end\\): it was truncated mid-record`));
  });

  test('the wrong key is one line naming both key ids, not a break per record', () => {
    const other = join(home, 'other.key');
    writeFileSync(other, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    const result = verify(['--key-file', other]);
    expect(result.status).toBe(1);
    const keyId = (JSON.parse(readLines(path)[0]!) as { keyId: string }).keyId;
    const lines = result.out.trimEnd().split('\n');
    expect(lines.filter((line) => /key id/.test(line) && !line.startsWith('1 file(s)'))).toEqual([
      expect.stringMatching(new RegExp(`^WRONG KEY: 12 record\\(s\\) in ${path} were sealed under audit key id ${keyId}, but the key at hand has id (?!${keyId})[0-9a-f]{16}; nothing in them could be checked\\.`)),
    ]);
    expect(result.out).not.toContain('BROKEN');
    expect(result.out).not.toContain('edited, or forged');
  });

  test('with the right key, records that all fail are edits, not a wrong key', () => {
    const lines = readLines(path).map((line) => line.replace(/"command":"echo (\d+)"/, '"command":"echo $1; curl evil"'));
    writeLines(path, lines);
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.out).not.toContain('WRONG KEY');
    expect(result.first).toBe(`BROKEN: ${path} line 1 (seq 1): its hash does not match its content: it was edited, or forged by someone without the audit key`);
    expect(result.out).toContain('11 more break(s) after it');
  });

  test('OK says what verify cannot see: the newest records cut off at a record boundary', () => {
    const lines = readLines(path);
    writeLines(path, lines.slice(0, 9));
    const result = verify();
    expect(result.status).toBe(0);
    expect(result.out).toContain('OK: the chain is intact');
    expect(result.out).toContain('Not visible to verify: records cut off after seq 9 at a record boundary');
    expect(result.out).toContain('--against');
  });

  test('no key: exit 125 with a coded error, not a verdict', () => {
    rmSync(join(home, 'audit.key'));
    const result = execgate(['audit', 'verify'], home);
    expect(result.status).toBe(125);
    expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_AUDIT_KEY_MISSING: /);
  });

  test('the writer refuses to extend a log whose last record was edited', () => {
    const lines = readLines(path);
    lines[11] = lines[11]!.replace('"exitCode":0', '"exitCode":1');
    writeLines(path, lines);
    const log = new AuditLog({ home, path });
    expect(() => log.write('exec.request', {})).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_TAIL_INVALID' }));
    log.close();
  });
});

describe('a rotated set', () => {
  beforeEach(() => writeLog(40, { maxBytes: 1500 }));

  test('rotation keeps one chain across files, oldest first; the set verifies', () => {
    const files = listAuditFiles(path, existsSync);
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect(files[files.length - 1]).toBe(path);
    for (const file of files) expect(statSync(file).size).toBeLessThanOrEqual(1500);
    // The first record of each later file links to the last record of the file before it.
    for (let index = 1; index < files.length; index++) {
      const last = JSON.parse(readLines(files[index - 1]!).at(-1)!) as { seq: number; hash: string };
      const first = JSON.parse(readLines(files[index]!)[0]!) as { seq: number; prev: string; keyId?: string };
      expect(first).toMatchObject({ seq: last.seq + 1, prev: last.hash });
      expect(first.keyId).toMatch(/^[0-9a-f]{16}$/);
    }
    const result = verify();
    expect(result.status).toBe(0);
    expect(result.out).toContain(`${files.length} file(s), 40 record(s), seq 1 to 40`);
    // Named files in any order are put in chain order.
    expect(verify([...files].reverse()).status).toBe(0);
  });

  test('removing the first file is named; --partial accepts a set archived on purpose', () => {
    const files = listAuditFiles(path, existsSync);
    rmSync(files[0]!);
    const firstSeq = (JSON.parse(readLines(files[1]!)[0]!) as { seq: number }).seq;
    const result = verify();
    expect(result.status).toBe(1);
    expect(result.first).toBe(
      `BROKEN: ${files[1]} line 1 (seq ${firstSeq}): the chain does not start here: seq ${firstSeq} links to a record that is not in the files read (the first file of the set or the first records are missing); pass --partial if older files were archived on purpose`,
    );
    const partial = verify(['--partial']);
    expect(partial.status).toBe(0);
    expect(partial.out).toContain(`the files start mid-chain at seq ${firstSeq}`);
  });

  test('removing a file from the middle is named at the next file', () => {
    const files = listAuditFiles(path, existsSync);
    const removed = readLines(files[1]!).map((line) => JSON.parse(line) as { seq: number });
    rmSync(files[1]!);
    const result = verify();
    expect(result.status).toBe(1);
    const next = removed.at(-1)!.seq + 1;
    expect(result.first).toBe(
      `BROKEN: ${files[2]} line 1 (seq ${next}): seq ${next} follows seq ${removed[0]!.seq - 1}: seq ${removed[0]!.seq} to ${next - 1} are missing (records deleted or moved) (at the start of ${files[2]}: a file of the set may be missing)`,
    );
  });

  test('the chain state survives a restart after rotation', () => {
    const before = readdirSync(home).filter((name) => name.startsWith('audit.log')).length;
    const log = new AuditLog({ home, path, maxBytes: 1500 });
    log.write('gateway.started', { pid: 1 });
    log.close();
    expect(readdirSync(home).filter((name) => name.startsWith('audit.log')).length).toBeGreaterThanOrEqual(before);
    expect(verify().status).toBe(0);
    expect(basename(path)).toBe('audit.log');
    expect(readFileSync(path, 'utf8')).toContain('"seq":41,');
  });
});

describe('--against a copy kept elsewhere', () => {
  let copy: string;
  beforeEach(() => {
    writeLog(12);
    copy = join(home, 'collector.log');
    // A collector's copy: the same lines, plus one the collector wrote itself.
    writeFileSync(copy, `rsyslogd: started\n${readFileSync(path, 'utf8')}`);
  });

  test('the same records: OK, and the tail is vouched for', () => {
    const result = verify(['--against', copy]);
    expect(result.status).toBe(0);
    expect(result.out).toContain(`against ${copy}: 12 record(s) there (up to seq 12), 12 here (up to seq 12); 1 line(s) there are not records`);
    expect(result.out).toContain('OK: every record the copy holds is in the local log, byte for byte.');
    expect(result.out).not.toContain('Not visible to verify');
  });

  test('the newest local records cut off at a record boundary: verify alone says OK, the copy names the first missing record', () => {
    writeLines(path, readLines(path).slice(0, 10));
    expect(verify().status).toBe(0);
    const result = verify(['--against', copy]);
    expect(result.status).toBe(1);
    expect(result.out).toContain(`MISSING: seq 11 (${copy} line 12) is in the copy but not in the local log: the newest local records were cut off, or the local log set was removed (2 record(s) missing in all).`);
  });

  test('the whole local set deleted and a new chain started with the key: the first differing record is named', () => {
    rmSync(path);
    writeLog(3);
    expect(verify().status).toBe(0);
    const result = verify(['--against', copy]);
    expect(result.status).toBe(1);
    expect(result.out).toContain(`DIFFERS: seq 1 is not the same record here (${path} line 1) as in the copy (${copy} line 2)`);
    expect(result.out).toMatch(/MISSING: seq 4 /);
  });

  test('the whole local set deleted: named, not a usage error', () => {
    rmSync(path);
    const result = verify(['--against', copy]);
    expect(result.status).toBe(1);
    expect(result.out).toContain('BROKEN: no local audit log at all');
    expect(result.out).toContain('MISSING: seq 1 ');
  });

  test('records only in the local log (the collector was down) are a note, not a break', () => {
    const lines = readFileSync(copy, 'utf8').split('\n');
    lines.splice(5, 2);
    writeFileSync(copy, lines.join('\n'));
    const result = verify(['--against', copy]);
    expect(result.status).toBe(0);
    expect(result.out).toMatch(/note: seq 5 \(.* line 5\) is only in the local log: the copy lags or missed it while the collector was unreachable \(2 record\(s\) only here\)/);
  });
});
