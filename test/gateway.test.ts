import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../src/gateway';
import type { RefSource } from '../src/refs/types';
import { baseEnv, makeTempDir } from './helpers/tmp';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;

const API_KEY = 'sk-test-NOT-REAL-0123456789abcdef';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({
    home: join(tmp.dir, 'home'),
    env: baseEnv({ EXECGATE_SECRET_DB_PASSWORD: 'hunter2-correct-horse', LD_PRELOAD: '/tmp/evil.so' }),
    cwd: tmp.dir,
  });
  gateway.refs.set('secret', 'api-key', API_KEY);
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

describe('reference tokens on the one path', () => {
  test('a host-registered secret resolves, reaches the shell intact, and is masked in output', async () => {
    const result = await gateway.exec({ command: 'echo "key=<<secret:api-key>>"; printf %s <<secret:api-key>> | sha256sum' });
    expect(result.stdout).toBe(`key=[REDACTED:secret:api-key]\n${sha256(API_KEY)}  -\n`);
    expect(result.redactions).toBe(1);
    expect(result.refs).toEqual([{ kind: 'secret', id: 'api-key', ref: '<<secret:api-key>>', found: true, source: 'memory' }]);
    expect(result.command).toBe('echo "key=<<secret:api-key>>"; printf %s <<secret:api-key>> | sha256sum');
  });

  test('the {{secret:NAME}} alias resolves the same way (seed 004)', async () => {
    const result = await gateway.exec({ command: 'curl_stub() { echo "$2"; }; curl_stub -H "Auth: {{secret:api-key}}"' });
    expect(result.stdout).toBe('Auth: [REDACTED:secret:api-key]\n');
  });

  test('EXECGATE_SECRET_<NAME> in the gateway environment is the second source', async () => {
    const result = await gateway.exec({ command: 'printf %s <<secret:db.password>> | sha256sum; echo <<secret:db-password>>' });
    expect(result.stdout).toBe(`${sha256('hunter2-correct-horse')}  -\n[REDACTED:secret:db.password]\n`);
    expect(result.refs.map((r) => r.source)).toEqual(['env', 'env']);
  });

  test('host-registered values win over the environment source', async () => {
    gateway.refs.set('secret', 'db-password', 'from-memory-value');
    const result = await gateway.exec({ command: 'printf %s <<secret:db-password>> | sha256sum' });
    expect(result.stdout).toBe(`${sha256('from-memory-value')}  -\n`);
  });

  test('decrypt references resolve from host-registered values', async () => {
    gateway.refs.set('decrypt', 'uuid-123', 'decrypted-payload-value');
    const result = await gateway.exec({ command: 'echo {{decrypt:uuid-123}}' });
    expect(result.stdout).toBe('[REDACTED:decrypt:uuid-123]\n');
    expect(result.refs[0]).toMatchObject({ kind: 'decrypt', id: 'uuid-123', found: true });
  });

  test('an unknown reference is passed to the shell unchanged', async () => {
    const result = await gateway.exec({ command: "echo {{secret:unknown}} '<<secret:also-unknown>>'" });
    expect(result.stdout).toBe('{{secret:unknown}} <<secret:also-unknown>>\n');
    expect(result.refs).toEqual([
      { kind: 'secret', id: 'unknown', ref: '<<secret:unknown>>', found: false, source: undefined, suggestions: [] },
      { kind: 'secret', id: 'also-unknown', ref: '<<secret:also-unknown>>', found: false, source: undefined, suggestions: [] },
    ]);
  });

  test('a command without references runs unchanged', async () => {
    const result = await gateway.exec({ command: "echo '<<notatoken>>' {{secret:}} '<<secret:bad name>>'" });
    expect(result.stdout).toBe('<<notatoken>> {{secret:}} <<secret:bad name>>\n');
    expect(result.refs).toEqual([]);
  });

  test('a source that cannot answer fails closed: coded error naming the reference, nothing runs', async () => {
    const marker = join(tmp.dir, 'ran');
    const broken: RefSource = {
      name: 'broken-vault',
      kinds: ['secret'],
      lookup() {
        throw new Error('vault is locked');
      },
    };
    gateway.refs.addSource(broken);
    const error = await gateway.exec({ command: `touch ${marker}; echo <<secret:not-in-memory>>` }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'EXECGATE_ERR_REF_SOURCE_FAILED' });
    expect((error as Error).message).toContain('<<secret:not-in-memory>>');
    expect((error as Error).message).toContain('broken-vault');
    expect(existsSync(marker)).toBe(false);
  });

  test('a value shorter than the minimum maskable length fails closed with an explanation', async () => {
    gateway.refs.set('secret', 'pin', '1234');
    const marker = join(tmp.dir, 'ran');
    const error = await gateway.exec({ command: `touch ${marker}; echo <<secret:pin>>` }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'EXECGATE_ERR_REF_TOO_SHORT' });
    expect((error as Error).message).toMatch(/shorter than 8 characters/);
    expect((error as Error).message).not.toContain('1234');
    expect(existsSync(marker)).toBe(false);
  });

  test("the value never appears in the child's argv (/proc/PID/cmdline)", async () => {
    const result = await gateway.exec({ command: 'cat /proc/$$/cmdline > argv.bin; echo "<<secret:api-key>>" > /dev/null; sleep 0' });
    expect(result.exitCode).toBe(0);
    const argv = readFileSync(join(tmp.dir, 'argv.bin'));
    expect(argv.includes(Buffer.from(API_KEY))).toBe(false);
    expect(argv.toString()).toContain('${EXECGATE_REF_0}');
  });

  test('a value full of shell syntax is never interpreted', async () => {
    const nasty = `'; touch pwned #"$(touch pwned2)\`touch pwned3\`\n*`;
    gateway.refs.set('secret', 'nasty', nasty);
    const result = await gateway.exec({ command: "printf %s <<secret:nasty>> | sha256sum; printf %s '<<secret:nasty>>' | sha256sum; printf %s \"x<<secret:nasty>>\" | sha256sum" });
    expect(result.stdout).toBe(`${sha256(nasty)}  -\n${sha256(nasty)}  -\n${sha256(`x${nasty}`)}  -\n`);
    for (const file of ['pwned', 'pwned2', 'pwned3']) expect(existsSync(join(tmp.dir, file))).toBe(false);
  });
});

describe('redaction', () => {
  test('a value written one byte per write() on both streams is still masked', async () => {
    const command = 'V=<<secret:api-key>>; for ((i=0; i<${#V}; i++)); do printf %s "${V:i:1}"; printf %s "${V:i:1}" >&2; sleep 0.002; done; echo';
    const result = await gateway.exec({ command });
    expect(result.stdout).toBe('[REDACTED:secret:api-key]\n');
    expect(result.stderr).toBe('[REDACTED:secret:api-key]');
    expect(result.output).not.toContain(API_KEY.slice(0, 8));
    expect(result.redactions).toBe(2);
  });

  test('the value is masked wherever it appears in a line, repeatedly', async () => {
    const result = await gateway.exec({ command: 'echo "a<<secret:api-key>>b<<secret:api-key>>c"; env | grep EXECGATE_REF_ | sort' });
    expect(result.stdout).toBe('a[REDACTED:secret:api-key]b[REDACTED:secret:api-key]c\nEXECGATE_REF_0=[REDACTED:secret:api-key]\n');
  });
});

describe('environment', () => {
  test('hazards are stripped, EXECGATE_SECRET_* never reaches the child, names are reported', async () => {
    const result = await gateway.exec({ command: 'env', env: { BASH_ENV: '/tmp/evil.sh', MY_VAR: 'visible' } });
    expect(result.stdout).toContain('MY_VAR=visible');
    expect(result.stdout).not.toContain('LD_PRELOAD');
    expect(result.stdout).not.toContain('BASH_ENV');
    expect(result.stdout).not.toContain('EXECGATE_SECRET_');
    expect(result.stdout).not.toContain('hunter2');
    expect(result.env.removed).toEqual(expect.arrayContaining(['LD_PRELOAD', 'BASH_ENV']));
    expect(result.env.withheld).toContain('EXECGATE_SECRET_DB_PASSWORD');
  });
});

describe('audit', () => {
  test('each run writes request, started and finished records with the unresolved command and no value', async () => {
    const result = await gateway.exec({ command: 'echo <<secret:api-key>> {{secret:nope}}', actor: 'test-suite' });
    await gateway.close();
    const text = readFileSync(join(gateway.home, 'audit.log'), 'utf8');
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('hunter2');
    const records = text.trim().split('\n').map((line) => JSON.parse(line)).filter((r) => r.runId === result.id);
    expect(records.map((r) => r.event)).toEqual(['exec.request', 'exec.started', 'exec.finished']);
    for (const record of records) {
      expect(record.command).toBe('echo <<secret:api-key>> {{secret:nope}}');
      expect(record.actor).toBe('test-suite');
      expect(typeof record.time).toBe('string');
    }
    expect(records[1].refs).toEqual([
      { kind: 'secret', id: 'api-key', ref: '<<secret:api-key>>', found: true, source: 'memory', fingerprint: expect.stringMatching(/^hmac-sha256:[0-9a-f]{32}$/) },
      { kind: 'secret', id: 'nope', ref: '<<secret:nope>>', found: false },
    ]);
    expect(records[1].env.removed).toContain('LD_PRELOAD');
    expect(records[1].env.withheld).toContain('EXECGATE_SECRET_DB_PASSWORD');
    expect(records[2]).toMatchObject({ exitCode: 0, timedOut: false, redactions: 1 });
  });

  test('a refused request is audited with its code', async () => {
    await gateway.exec({ command: 'true', cwd: '/definitely/not/here' }).catch(() => undefined);
    await gateway.close();
    const records = readFileSync(join(gateway.home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(records.map((r) => r.event)).toEqual(['gateway.started', 'exec.rejected', 'gateway.stopped']);
    expect(records[1]).toMatchObject({ event: 'exec.rejected', code: 'EXECGATE_ERR_CWD_NOT_FOUND', command: 'true' });
  });
});

describe('many runs at once', () => {
  // In its own node process (the built gateway, as a host loads it): Node prints the warning on
  // that process's stderr, which jest's sandbox would not show to a listener here.
  test('twelve runs in progress together on one gateway raise no listener-leak warning', async () => {
    const file = join(tmp.dir, 'started');
    // Each run ends only once all twelve have started, so all twelve are in progress together.
    const command = `echo x >> ${file}; while [ "$(wc -l < ${file})" -lt 12 ]; do sleep 0.01; done`;
    const script = `
      const { createGateway } = require(${JSON.stringify(join(__dirname, '..', 'dist', 'gateway.js'))});
      const gateway = createGateway({ home: ${JSON.stringify(join(tmp.dir, 'home12'))}, audit: false, keyring: false });
      Promise.all(Array.from({ length: 12 }, () => gateway.exec({ command: ${JSON.stringify(command)}, timeout: 60000 })))
        .then((results) => { console.log(results.map((r) => r.exitCode).join(',')); return gateway.close(); });
    `;
    const child = spawnSync(process.execPath, ['-e', script], { cwd: tmp.dir, encoding: 'utf8', timeout: 90_000, env: baseEnv() });
    expect(child.stdout.trim()).toBe(Array(12).fill(0).join(','));
    expect(child.stderr).not.toContain('MaxListenersExceeded');
  }, 90_000);
});
