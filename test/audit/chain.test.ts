/*
 * The record format, the audit key, and value fingerprints.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { serializeBody, sealLine } from '../../src/audit/canonical';
import { GENESIS_HASH, parseChainLine } from '../../src/audit/chain';
import { AUDIT_KEY_ENV, deriveAuditKeys, fingerprintValue, loadAuditKeys } from '../../src/audit/key';
import { AuditLog } from '../../src/audit/log';
import { makeTempDir } from '../helpers/tmp';
import { readLines, readRecords } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-audit-'); });
afterEach(() => tmp.cleanup());

describe('canonical serialization', () => {
  test('head members first, the rest sorted (nested too), prev last; the sealed line ends with hash', () => {
    const body = serializeBody({ prev: GENESIS_HASH, zeta: 1, event: 'e', alpha: { b: 2, a: [3, { d: 1, c: 2 }] }, v: 1, time: 't', seq: 7, skip: undefined });
    expect(body).toBe(`{"v":1,"seq":7,"time":"t","event":"e","alpha":{"a":[3,{"c":2,"d":1}],"b":2},"zeta":1,"prev":"${GENESIS_HASH}"}`);
    expect(sealLine(body, 'f'.repeat(64))).toBe(`${body.slice(0, -1)},"hash":"${'f'.repeat(64)}"}\n`);
  });

  test('a JSON round trip reproduces the same bytes, for any values', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (fields) => {
        const record = { v: 1, seq: 1, time: 't', event: 'e', ...fields, prev: GENESIS_HASH };
        const body = serializeBody(record);
        expect(serializeBody(JSON.parse(body) as Record<string, unknown>)).toBe(body);
      }),
      { numRuns: 300 },
    );
  });

  test('the hash is HMAC-SHA256 over the canonical body with the chain key, and a line parses back', () => {
    const keys = deriveAuditKeys(randomBytes(32), 'test');
    const body = serializeBody({ v: 1, seq: 1, time: 't', event: 'x', prev: GENESIS_HASH });
    const hash = createHmac('sha256', keys.chain).update(body).digest('hex');
    const line = sealLine(body, hash).trimEnd();
    const parsed = parseChainLine(keys.chain, Buffer.from(line));
    expect(parsed).toMatchObject({ ok: true, macOk: true, record: { seq: 1, event: 'x', hash } });
    const other = deriveAuditKeys(randomBytes(32), 'other');
    expect(parseChainLine(other.chain, Buffer.from(line))).toMatchObject({ ok: true, macOk: false });
    expect(parseChainLine(keys.chain, Buffer.from(line.replace('"x"', '"y"')))).toMatchObject({ ok: true, macOk: false });
    expect(parseChainLine(keys.chain, Buffer.from('{"not":"a record"}'))).toMatchObject({ ok: false });
  });

  test('records written by AuditLog: v, seq, time, event first, then fields, prev, hash; reserved fields cannot be overridden', () => {
    const path = join(tmp.dir, 'audit.log');
    const log = new AuditLog({ path, key: randomBytes(32) });
    log.write('one', { runId: 'r1', seq: 99, hash: 'forged', prev: 'forged', v: 7, event: 'other' });
    log.write('two', { nested: { b: 1, a: 2 } });
    log.close();
    const lines = readLines(path);
    expect(lines[0]).toMatch(/^\{"v":1,"seq":1,"time":"[^"]+Z","event":"one","keyId":"[0-9a-f]{16}","runId":"r1","prev":"0{64}","hash":"[0-9a-f]{64}"\}$/);
    const [first, second] = readRecords(path);
    expect(second).toMatchObject({ seq: 2, event: 'two', prev: first!.hash, nested: { a: 2, b: 1 } });
    expect(second).not.toHaveProperty('keyId');
    expect(lines[1]).toContain('"nested":{"a":2,"b":1}');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});

describe('audit key', () => {
  test('created once as a 0600 file of base64 32 bytes, then reused', () => {
    const keyPath = join(tmp.dir, 'audit.key');
    const a = loadAuditKeys({ keyPath, env: {}, create: true });
    expect(statSync(keyPath).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyPath, 'utf8').trim(), 'base64')).toHaveLength(32);
    const b = loadAuditKeys({ keyPath, env: {}, create: true });
    expect(b.keyId).toBe(a.keyId);
  });

  test('EXECGATE_AUDIT_KEY wins over the file; a bad one is refused with a coded error', () => {
    const keyPath = join(tmp.dir, 'audit.key');
    const fromFile = loadAuditKeys({ keyPath, env: {}, create: true });
    const key = randomBytes(32).toString('base64');
    const fromEnv = loadAuditKeys({ keyPath, env: { [AUDIT_KEY_ENV]: key } });
    expect(fromEnv.keyId).not.toBe(fromFile.keyId);
    expect(fromEnv.source).toBe('env');
    expect(() => loadAuditKeys({ keyPath, env: { [AUDIT_KEY_ENV]: 'c2hvcnQ=' } })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_KEY_INVALID' }));
  });

  test('a key file others may read, or a symlink, is refused; a missing one is reported', () => {
    const keyPath = join(tmp.dir, 'audit.key');
    expect(() => loadAuditKeys({ keyPath, env: {} })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_KEY_MISSING' }));
    writeFileSync(keyPath, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    chmodSync(keyPath, 0o644);
    expect(() => loadAuditKeys({ keyPath, env: {} })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_KEY_PERMISSIONS' }));
    chmodSync(keyPath, 0o600);
    const link = join(tmp.dir, 'link.key');
    symlinkSync(keyPath, link);
    expect(() => loadAuditKeys({ keyPath: link, env: {} })).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_AUDIT_KEY_PERMISSIONS' }));
  });
});

describe('value fingerprints', () => {
  const master = randomBytes(32);
  const keys = deriveAuditKeys(master, 'test');

  test('same value, same fingerprint; different values, different fingerprints; shape hmac-sha256:<32 hex>', () => {
    expect(fingerprintValue(keys, 'value-long-enough-123')).toBe(fingerprintValue(keys, 'value-long-enough-123'));
    expect(fingerprintValue(keys, 'value-long-enough-123')).not.toBe(fingerprintValue(keys, 'value-long-enough-124'));
    expect(fingerprintValue(keys, 'value-long-enough-123')).toMatch(/^hmac-sha256:[0-9a-f]{32}$/);
  });

  test('is not a plain sha256 of the value, nor the chain MAC, and changes with the audit key', () => {
    const value = 'value-long-enough-123';
    const print = fingerprintValue(keys, value).slice('hmac-sha256:'.length);
    expect(createHash('sha256').update(value).digest('hex')).not.toContain(print);
    expect(createHmac('sha256', master).update(value).digest('hex')).not.toContain(print);
    expect(createHmac('sha256', keys.chain).update(value).digest('hex')).not.toContain(print);
    expect(fingerprintValue(deriveAuditKeys(randomBytes(32), 'other'), value)).not.toBe(fingerprintValue(keys, value));
  });

  test('AuditLog.fingerprint uses the log\'s key', () => {
    const key = randomBytes(32);
    const a = new AuditLog({ path: join(tmp.dir, 'a.log'), key });
    const b = new AuditLog({ path: join(tmp.dir, 'b.log'), key });
    const c = new AuditLog({ path: join(tmp.dir, 'c.log'), key: randomBytes(32) });
    expect(a.fingerprint('value-long-enough-123')).toBe(b.fingerprint('value-long-enough-123'));
    expect(a.fingerprint('value-long-enough-123')).not.toBe(c.fingerprint('value-long-enough-123'));
    for (const log of [a, b, c]) log.close();
  });
});
