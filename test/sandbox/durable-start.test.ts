/*
 * A sandboxed run's start record is made durable while its sandbox is set up: the sandbox (cold,
 * warm, or on a terminal) is started and checked at once, and its gate lets the command go only
 * once the record is durable. A record that cannot be made durable ends the sandbox with nothing
 * of the command run. Real bubblewrap and bash, and a host sink whose durability the test holds
 * back or refuses.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { AuditFields, AuditSink } from '../../src/audit/log';
import { ExecgateError } from '../../src/errors';
import { createGateway, type Gateway } from '../../src/gateway';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { RUN_ID_VARIABLE } from '../../src/process/terminate';
import { baseEnv, isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, findProcesses, ownDescendants, sandboxPolicy } from './helpers';

jest.setTimeout(120_000);

const OFFLINE = sandboxPolicy({ mode: 'required' }, { network: { ...DEFAULT_POLICY.network, mode: 'none', allow: [], deny: [] } });

let tmp: ReturnType<typeof makeTempDir>;
let work: string;
let gateway: Gateway | undefined;

beforeEach(() => {
  tmp = makeTempDir('execgate-durable-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  mkdirSync(join(tmp.dir, 'home'));
});

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
});

/** Host processes whose environment carries this run id (bubblewrap and its gate, for a cold start). */
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

/** Whether `pid` has `dir` as its working directory (a warm sandbox's bash has read its frame). */
function inDir(pid: number, dir: string): boolean {
  try {
    const cwd = statSync(`/proc/${pid}/cwd`);
    const want = statSync(dir);
    return cwd.dev === want.dev && cwd.ino === want.ino;
  } catch {
    return false;
  }
}

/** A host sink that makes `exec.started` durable only when told (each start is held on its own). */
function heldSink(): AuditSink & { events: string[]; runIds: string[]; release(error?: Error): void; asked(): Promise<void> } {
  const events: string[] = [];
  const runIds: string[] = [];
  const held: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  let waiting: (() => void) | undefined;
  return {
    events,
    runIds,
    asked: () => (held.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => { waiting = resolve; })),
    write(event: string, fields: AuditFields) {
      events.push(event);
      if (typeof fields.runId === 'string' && !runIds.includes(fields.runId)) runIds.push(fields.runId);
    },
    writeAndSync(event: string, fields: AuditFields) {
      events.push(event);
      if (typeof fields.runId === 'string' && !runIds.includes(fields.runId)) runIds.push(fields.runId);
      return new Promise<void>((resolve, reject) => {
        held.push({ resolve, reject });
        waiting?.();
        waiting = undefined;
      });
    },
    release(error?: Error) {
      const next = held.shift();
      if (error) next?.reject(error);
      else next?.resolve();
    },
    close() { /* memory */ },
  };
}

describeSandboxed('a sandboxed run acts only once its start record is durable', () => {
  test.each([
    ['sync, cold', 0, 'sync'],
    ['sync, warm', 1, 'sync'],
    ['pty', 0, 'pty'],
  ] as const)('%s: the sandbox is set up meanwhile, the command waits, then runs', async (_name, warmSandboxes, mode) => {
    const sink = heldSink();
    gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: join(tmp.dir, 'home') }), cwd: work, audit: sink, warmSandboxes });
    if (warmSandboxes > 0) {
      // The first run sets the warm sandbox up once it has ended.
      const first = gateway.exec({ command: 'true' });
      await sink.asked();
      sink.release();
      await first;
      expect(await waitFor(() => (gateway!.warmSandboxes?.waiting ?? 0) > 0, 30_000)).toBe(true);
    }
    const warmBefore = gateway.warmSandboxes?.warm ?? 0;
    const marker = join(work, 'acted');
    const run = gateway.exec({ command: `touch ${marker}; echo done`, mode });
    await sink.asked();
    const runId = sink.runIds[sink.runIds.length - 1]!;
    if (warmSandboxes === 0) {
      // bubblewrap was started with the run's environment while the record was being made durable.
      expect(await waitFor(() => processesOfRun(runId).length > 0, 30_000)).toBe(true);
    }
    // Every chance to act: it has not.
    await delay(300);
    expect(existsSync(marker)).toBe(false);
    sink.release();
    const result = await run;
    expect(result.output.replace(/\r/g, '')).toBe('done\n');
    expect(result.sandbox.sandboxed).toBe(true);
    expect(existsSync(marker)).toBe(true);
    if (warmSandboxes > 0) expect(gateway.warmSandboxes!.warm).toBe(warmBefore + 1);
  });

  test.each([
    ['sync, cold', 0, 'sync'],
    ['sync, warm', 1, 'sync'],
    ['pty', 0, 'pty'],
  ] as const)('%s: a start record that cannot be made durable fails the run and nothing of it runs or stays', async (_name, warmSandboxes, mode) => {
    const sink = heldSink();
    gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: join(tmp.dir, 'home') }), cwd: work, audit: sink, warmSandboxes });
    if (warmSandboxes > 0) {
      const first = gateway.exec({ command: 'true' });
      await sink.asked();
      sink.release();
      await first;
      expect(await waitFor(() => (gateway!.warmSandboxes?.waiting ?? 0) > 0, 30_000)).toBe(true);
    }
    // The waiting sandbox's processes (bubblewrap, its init, the waiting bash: the stub's text is
    // on their argv), this gateway's only (another test file's warm sandboxes may run beside it).
    const waiting = warmSandboxes > 0 ? ownDescendants(findProcesses('read -r -a l')) : [];
    const marker = join(work, 'acted');
    const run = gateway.exec({ command: `touch ${marker}`, mode });
    await sink.asked();
    const runId = sink.runIds[sink.runIds.length - 1]!;
    if (warmSandboxes === 0) expect(await waitFor(() => processesOfRun(runId).length > 0, 30_000)).toBe(true);
    else {
      // The frame went out before the record was durable: the waiting bash has read it and
      // entered the run's directory, and waits for `go`.
      const dir = statSync(work);
      const inWork = (pid: number): boolean => {
        try {
          const cwd = statSync(`/proc/${pid}/cwd`);
          return cwd.dev === dir.dev && cwd.ino === dir.ino;
        } catch {
          return false;
        }
      };
      expect(await waitFor(() => waiting.some(inWork), 30_000)).toBe(true);
    }
    sink.release(new ExecgateError('EXECGATE_ERR_AUDIT_IO', 'Cannot write the audit log: EIO.'));
    await expect(run).rejects.toMatchObject({ code: 'EXECGATE_ERR_AUDIT_IO' });
    expect(await waitFor(() => processesOfRun(runId).length === 0, 30_000)).toBe(true);
    expect(await waitFor(() => waiting.every((pid) => !isAlive(pid)), 30_000)).toBe(true);
    expect(existsSync(marker)).toBe(false);
    expect(sink.events.filter((event) => event === 'exec.failed')).toHaveLength(1);
    // The gateway goes on: the next run (its record released at once) runs.
    const next = gateway.exec({ command: 'echo next', mode });
    await sink.asked();
    sink.release();
    expect((await next).output.replace(/\r/g, '')).toBe('next\n');
  });

  test.each([
    ['sync, cold', 0, 'sync'],
    ['sync, warm', 1, 'sync'],
    ['pty', 0, 'pty'],
  ] as const)('%s: close() while the start record is made durable: the command never runs, though the record becomes durable after', async (_name, warmSandboxes, mode) => {
    const sink = heldSink();
    gateway = createGateway({ policy: OFFLINE, home: join(tmp.dir, 'state'), env: baseEnv({ HOME: join(tmp.dir, 'home') }), cwd: work, audit: sink, warmSandboxes });
    if (warmSandboxes > 0) {
      const first = gateway.exec({ command: 'true' });
      await sink.asked();
      sink.release();
      await first;
      expect(await waitFor(() => (gateway!.warmSandboxes?.waiting ?? 0) > 0, 30_000)).toBe(true);
    }
    const waiting = warmSandboxes > 0 ? ownDescendants(findProcesses('read -r -a l')) : [];
    const marker = join(work, 'acted');
    const run = gateway.exec({ command: `touch ${marker}; echo ran`, mode }).then((result) => `ran: ${result.exitCode}`, (error: { code?: string }) => `rejected ${error.code}`);
    await sink.asked();
    const runId = sink.runIds[sink.runIds.length - 1]!;
    // The sandbox is set up (cold) or holds the frame (warm), and waits for `go`.
    if (warmSandboxes === 0) expect(await waitFor(() => processesOfRun(runId).length > 0, 30_000)).toBe(true);
    else expect(await waitFor(() => waiting.some((pid) => inDir(pid, work)), 30_000)).toBe(true);
    const closing = gateway.close();
    await delay(200);
    sink.release();
    await closing;
    // Not started, then stopped: never started (before, the program got `go` once the record was
    // durable and ran all, part or none of its command before the closing gateway stopped it).
    expect(await run).toBe('rejected EXECGATE_ERR_GATEWAY_CLOSED');
    expect(await waitFor(() => processesOfRun(runId).length === 0 && waiting.every((pid) => !isAlive(pid)), 30_000)).toBe(true);
    expect(existsSync(marker)).toBe(false);
    expect(sink.events.filter((event) => event === 'exec.failed')).toHaveLength(1);
  });
});
