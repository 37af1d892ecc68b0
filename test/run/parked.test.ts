/*
 * A run's start record is written before its shell is spawned and made durable (the audit log's
 * fdatasync, off the event loop) while the shell starts: an unsandboxed sync run's shell starts
 * parked and its command acts only once the gateway releases it. Real bash, a real audit log,
 * and a host sink whose durability the test holds back or refuses.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { AuditLog, type AuditFields, type AuditSink } from '../../src/audit/log';
import { ExecgateError } from '../../src/errors';
import { createGateway, type Gateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { RUN_ID_VARIABLE } from '../../src/process/terminate';
import { baseEnv, makeTempDir } from '../helpers/tmp';

/** Processes whose environment carries this run id (the run's shell and what it started). */
function processesOfRun(runId: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`${RUN_ID_VARIABLE}=${runId}`)) found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

const UNSANDBOXED = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' as const } };

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway | undefined;

beforeEach(() => {
  tmp = makeTempDir();
});

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  tmp.cleanup();
});

/** A host sink that records events in memory and makes `exec.started` durable only when told. */
function heldSink(): AuditSink & { events: string[]; runIds: string[]; release(error?: Error): void; asked: Promise<void> } {
  const events: string[] = [];
  const runIds: string[] = [];
  let settle: { resolve: () => void; reject: (error: Error) => void } | undefined;
  let asked: () => void = () => undefined;
  const askedPromise = new Promise<void>((resolve) => { asked = resolve; });
  return {
    events,
    runIds,
    asked: askedPromise,
    write(event: string, fields: AuditFields) {
      events.push(event);
      if (typeof fields.runId === 'string') runIds.push(fields.runId);
    },
    writeAndSync(event: string) {
      events.push(event);
      asked();
      return new Promise<void>((resolve, reject) => { settle = { resolve, reject }; });
    },
    release(error?: Error) {
      if (error) settle?.reject(error);
      else settle?.resolve();
    },
    close() { /* memory */ },
  };
}

test('the shell of an unsandboxed run is spawned at once but its command acts only once the start record is durable', async () => {
  const sink = heldSink();
  gateway = createGateway({ policy: UNSANDBOXED, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, audit: sink });
  const marker = join(tmp.dir, 'acted');
  const run = gateway.exec({ command: `touch ${marker}; echo done` });
  await sink.asked;
  // The shell was spawned (it overlaps the sync) and has had every chance to run: it is parked.
  await delay(300);
  expect(processesOfRun(sink.runIds[0])).toHaveLength(1);
  expect(existsSync(marker)).toBe(false);
  sink.release();
  const result = await run;
  expect(result.output).toBe('done\n');
  expect(existsSync(marker)).toBe(true);
  expect(sink.events).toEqual(['gateway.started', 'exec.request', 'exec.started', 'exec.finished']);
});

test('a start record that cannot be made durable fails the run with that error, and its command never runs', async () => {
  const sink = heldSink();
  gateway = createGateway({ policy: UNSANDBOXED, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, audit: sink });
  const marker = join(tmp.dir, 'acted');
  const run = gateway.exec({ command: `touch ${marker}` });
  await sink.asked;
  sink.release(new ExecgateError('EXECGATE_ERR_AUDIT_IO', 'Cannot write the audit log: EIO.'));
  await expect(run).rejects.toMatchObject({ code: 'EXECGATE_ERR_AUDIT_IO' });
  expect(existsSync(marker)).toBe(false);
  expect(sink.events).toEqual(['gateway.started', 'exec.request', 'exec.started', 'exec.failed']);
});

test('a released shell runs the command as written: stdin is /dev/null, lines and messages are numbered as written, $? starts at 0', async () => {
  gateway = createGateway({ policy: UNSANDBOXED, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir });
  const result = await gateway.exec({ command: 'echo "status $?"; cat; echo "line $LINENO"\nno_such_command_xyz' });
  expect(result.stdout).toBe('status 0\nline 1\n');
  expect(result.stderr).toMatch(/line 2: no_such_command_xyz: command not found/);
  expect(result.exitCode).toBe(127);
  // A syntax error on the first line quotes that line as the caller wrote it, without the park.
  for (const command of ['foo(', 'echo a; foo)', 'echo $((1+)) )']) {
    const syntax = await gateway.exec({ command });
    expect(syntax.stderr).toContain(`line 1: \`${command}'`);
    expect(syntax.output).not.toMatch(/__execgate_(go|fd)|exit 125/);
  }
  for (const shell of ['/bin/sh', '/bin/bash']) {
    const other = await gateway.exec({ command: 'read x && echo "read $x" || echo eof', shell });
    expect(other.output).toBe('eof\n');
  }
  // The default log: the start record is on disk before the command acts, and the chain is whole.
  const events = readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { event: string }).event);
  expect(events.filter((event) => event === 'exec.started')).toHaveLength(6);
});

test('an audit log with `fsync: never` starts shells unparked; `before-spawn` parks them', async () => {
  const home = join(tmp.dir, 'home');
  const never = new AuditLog({ home, fsync: 'never' });
  expect(never.syncsBeforeSpawn).toBe(false);
  never.close();
  const sync = new AuditLog({ home });
  expect(sync.syncsBeforeSpawn).toBe(true);
  await expect(sync.writeAndSync('exec.started', { runId: 'run_x' })).resolves.toBeUndefined();
  sync.close();
});
