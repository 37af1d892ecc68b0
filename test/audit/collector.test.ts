/*
 * `forward` against a real collector: rsyslog (Debian package `rsyslog`) with imtcp on a
 * loopback port, writing every line it receives to a file with a template that keeps the line
 * byte for byte (`%rawmsg%`). The test starts and stops its own rsyslogd (own config, pid file
 * and work directory in a temp dir; the system's rsyslog is never touched), forwards through
 * pino-socket as docs/audit.md shows, then checks the collector's copy with `audit verify --file`
 * and compares the two with `--against`. The collector-down case: runs go on and are recorded
 * locally, the copy catches up once the collector is back, and `--against` shows the gap when
 * it cannot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { makeTempDir, waitFor } from '../helpers/tmp';
import { execgate, gatewayEnv, readLines, SECRET_VALUE } from './helpers';

const RSYSLOGD = '/usr/sbin/rsyslogd';
const skipReason = existsSync(RSYSLOGD) ? undefined : `${RSYSLOGD} not found (install the Debian package rsyslog)`;

let tmp: ReturnType<typeof makeTempDir>;

async function getFreePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** The configuration docs/audit.md documents, with this test's paths and port. */
function writeConfig(dir: string, port: number, output: string): string {
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  const config = join(dir, 'rsyslog.conf');
  writeFileSync(
    config,
    `global(workDirectory="${work}" maxMessageSize="1m" parser.escapeControlCharactersOnReceive="off")
module(load="imtcp")
template(name="execgateAuditRaw" type="string" string="%rawmsg%\\n")
ruleset(name="execgateAudit") {
  action(type="omfile" file="${output}" template="execgateAuditRaw" flushOnTXEnd="on")
}
input(type="imtcp" address="127.0.0.1" port="${port}" ruleset="execgateAudit")
`,
  );
  return config;
}

class Rsyslog {
  #child: ChildProcess | undefined;
  stderr = '';
  constructor(readonly dir: string, readonly port: number, readonly output: string) {}

  async start(): Promise<void> {
    const config = writeConfig(this.dir, this.port, this.output);
    const child = spawn(RSYSLOGD, ['-n', '-f', config, '-i', join(this.dir, 'rsyslogd.pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk: Buffer) => { this.stderr += chunk.toString(); });
    child.stderr!.on('data', (chunk: Buffer) => { this.stderr += chunk.toString(); });
    this.#child = child;
    let ready = false;
    for (let attempt = 0; attempt < 600 && !ready && child.exitCode === null; attempt++) {
      ready = await canConnect(this.port);
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!ready) throw new Error(`rsyslogd did not listen on ${this.port}: ${this.stderr}`);
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    this.#child = undefined;
  }
}

function forwardTo(port: number): Record<string, unknown> {
  // The fleet configuration of docs/audit.md: reconnect, and hold what cannot be sent meanwhile.
  return { target: 'pino-socket', options: { address: '127.0.0.1', port, mode: 'tcp', reconnect: true, recovery: true, recoveryQueueMaxSize: 16 * 1024 * 1024 } };
}

async function runSome(home: string, port: number, tag: string): Promise<void> {
   
  const { createGateway } = require('../../src/gateway') as typeof import('../../src/gateway');
   
  const { DEFAULT_POLICY } = require('../../src/policy/effective') as typeof import('../../src/policy/effective');
  const policy = {
    ...DEFAULT_POLICY,
    // The runs' cwd is the state directory, which a sandbox hides.
    sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' as const },
    rules: { default: 'allow' as const, list: [{ id: 'no-network', action: 'deny' as const, match: { kind: 'regex' as const, regex: /\bcurl\b/ }, reason: 'network tools are not allowed' }] },
  };
  const gateway = createGateway({ home, env: gatewayEnv(home), cwd: home, policy, audit: { forward: forwardTo(port) as never } });
  try {
    const ok = await gateway.exec({ command: `echo "${tag} <<secret:x>>" 'é ✓ \u202e'`, actor: 'mcp:fleet/1' });
    expect(ok.stdout).not.toContain(SECRET_VALUE);
    await gateway.exec({ command: 'exit 3', actor: 'mcp:fleet/1' });
    await expect(gateway.exec({ command: 'curl -H "x: <<secret:x>>" https://example.com', actor: 'mcp:fleet/1' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_POLICY_DENIED' });
    const bg = await gateway.exec({ command: 'echo bg', mode: 'background', actor: 'mcp:fleet/1' });
    await gateway.background.wait(bg.id);
  } finally {
    await gateway.close();
  }
}

if (skipReason !== undefined) {
   
  console.warn(`SKIPPED collector test: ${skipReason}`);
  test.skip(`forward to a real rsyslog [SKIPPED: ${skipReason}]`, () => undefined);
} else {
  let rsyslog: Rsyslog | undefined;
  beforeEach(() => {
    tmp = makeTempDir('execgate-collector-');
  });
  afterEach(async () => {
    await rsyslog?.stop();
    tmp.cleanup();
  });

  test('forward to rsyslog imtcp: the collector keeps every line byte for byte; verify --file on its copy and --against agree', async () => {
    const home = join(tmp.dir, 'home');
    mkdirSync(home);
    const copy = join(tmp.dir, 'collector', 'execgate-audit.log');
    rsyslog = new Rsyslog(tmp.dir, await getFreePort(), copy);
    await rsyslog.start();
    await runSome(home, rsyslog.port, 'first');
    const local = join(home, 'audit.log');
    const count = readLines(local).length;
    expect(count).toBeGreaterThan(10);
    // rsyslog writes asynchronously: wait for the lines, then stop it so the file is complete.
    await waitFor(() => existsSync(copy) && readLines(copy).length >= count, 30_000, 50);
    await rsyslog.stop();
    expect(readFileSync(copy, 'utf8')).toBe(readFileSync(local, 'utf8'));

    const verified = execgate(['audit', 'verify', '--file', copy], home);
    expect(verified.stdout).toContain(`1 file(s), ${count} record(s), seq 1 to ${count}`);
    expect(verified.stdout).toContain('OK: the chain is intact');
    expect(verified.status).toBe(0);
    const against = execgate(['audit', 'verify', '--against', copy], home);
    expect(against.stdout).toContain('OK: every record the copy holds is in the local log, byte for byte.');
    expect(against.status).toBe(0);

    // Someone on the host cuts the newest records off at a record boundary: only the copy can tell.
    writeFileSync(local, readLines(local).slice(0, count - 2).map((line) => `${line}\n`).join(''));
    expect(execgate(['audit', 'verify'], home).status).toBe(0);
    const cut = execgate(['audit', 'verify', '--against', copy], home);
    expect(cut.status).toBe(1);
    expect(cut.stdout).toContain(`MISSING: seq ${count - 1} (${copy} line ${count - 1}) is in the copy but not in the local log: the newest local records were cut off`);
  }, 120_000);

  test('collector down: runs are neither blocked nor lost locally; the copy catches up on reconnect', async () => {
    const home = join(tmp.dir, 'home');
    mkdirSync(home);
    const copy = join(tmp.dir, 'collector', 'execgate-audit.log');
    rsyslog = new Rsyslog(tmp.dir, await getFreePort(), copy);
    await rsyslog.start();
     
    const { createGateway } = require('../../src/gateway') as typeof import('../../src/gateway');
     
    const { DEFAULT_POLICY } = require('../../src/policy/effective') as typeof import('../../src/policy/effective');
    const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' as const } };
    const gateway = createGateway({ home, env: gatewayEnv(home), cwd: home, policy, audit: { forward: forwardTo(rsyslog.port) as never } });
    try {
      await gateway.exec({ command: 'echo before', actor: 'mcp:fleet/2' });
      await waitFor(() => existsSync(copy) && readLines(copy).length >= 4, 30_000, 50);
      await rsyslog.stop();
      // The collector is gone: every run still runs and is recorded in the local file.
      for (let index = 0; index < 5; index++) {
        const result = await gateway.exec({ command: `echo during-${index}`, actor: 'mcp:fleet/2' });
        expect(result.stdout).toBe(`during-${index}\n`);
      }
      const local = readLines(join(home, 'audit.log'));
      expect(local.filter((line) => line.includes('"event":"exec.finished"'))).toHaveLength(6);
      await rsyslog.start();
      await gateway.exec({ command: 'echo after', actor: 'mcp:fleet/2' });
      // pino-socket reconnects with a backoff and then sends what it held and what came since.
      expect(await waitFor(() => existsSync(copy) && readFileSync(copy, 'utf8').includes('echo after'), 60_000, 100)).toBe(true);
    } finally {
      await gateway.close();
    }
    const count = readLines(join(home, 'audit.log')).length;
    await waitFor(() => readLines(copy).length >= count, 30_000, 50);
    await rsyslog.stop();
    const against = execgate(['audit', 'verify', '--against', copy], home);
    // TCP cannot tell which bytes the dead collector took in before it went away: a record may
    // be missing from the copy. Missing from the copy is a note; nothing may differ or be missing here.
    expect(against.stdout).not.toMatch(/MISSING|DIFFERS/);
    expect(against.status).toBe(0);
    const copied = readLines(copy);
    expect(copied.some((line) => line.includes('echo after'))).toBe(true);
    expect(copied.filter((line) => line.includes('during-')).length).toBeGreaterThan(0);
  }, 120_000);

  test('collector down from the start: runs are recorded locally, close does not hang, and --against names what the copy lacks', async () => {
    const home = join(tmp.dir, 'home');
    mkdirSync(home);
    const port = await getFreePort();
    await runSome(home, port, 'nobody-listening');
    const local = readLines(join(home, 'audit.log'));
    expect(local.some((line) => line.includes('nobody-listening'))).toBe(true);
    const copy = join(tmp.dir, 'empty-copy.log');
    writeFileSync(copy, '');
    const against = execgate(['audit', 'verify', '--against', copy], home);
    expect(against.stdout).toContain(`note: seq 1 (${join(home, 'audit.log')} line 1) is only in the local log`);
  }, 120_000);
}
