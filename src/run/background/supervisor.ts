/*
 * Entry point of the detached background supervisor (see detached.ts). It reads one JSON plan
 * from stdin, starts the run, replies with one JSON line on stdout, then stays alive, reading
 * and redacting the run's output into its file, until the run has ended. A sandboxed run's
 * egress proxy and SSH agent live here too, for as long as the run does.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EgressDecision, EgressProxy } from '../../egress/proxy';
import { Redactor } from '../../redact';
import { getErrorCode } from '../../errors';
import type { SpawnPlan } from '../../plan/prepare';
import { PlanResources } from '../../plan/resources';
import type { SupervisorInput } from './detached';
import { getEndedFields } from './ended';
import { BackgroundRun } from './run';
import type { BackgroundProcess } from './types';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  const input = JSON.parse(await readStdin()) as SupervisorInput;
  const redactor = new Redactor({ minLength: input.minLength });
  for (const { value, label } of input.secrets) redactor.add(value, label);
  // The egress endpoint came along as `input.egress` and this process's proxy serves it: the
  // plan here owns nothing to release.
  const plan = { ...input.plan, redactor, resources: new PlanResources() } as SpawnPlan;
  let run: BackgroundRun;
  let started;
  let egress: EgressProxy | undefined;
  let ssh: { close(): Promise<void> } | undefined;
  try {
    // Its output file is created here: a full disk is a coded answer, not a supervisor that died.
    run = new BackgroundRun(plan, {
      home: input.home,
      ringBytes: input.ringBytes,
      maxFileBytes: input.maxFileBytes,
      maxRuntime: plan.limits.timeout,
      ...(input.egress ? { egressDecisions: () => seen } : {}),
    });
    // The run's egress endpoint is served here before the run starts (it connects from its start on).
    if (input.egress) egress = await serveEgress(input);
    if (input.ssh) ssh = await serveSsh(input);
    started = await run.start(process.pid);
  } catch (error) {
    await egress?.close();
    await ssh?.close();
    if (input.ssh) rmSync(input.ssh.dir, { recursive: true, force: true });
    if (input.egress) rmSync(input.egress.dir, { recursive: true, force: true });
    const code = getErrorCode(error, 'EXECGATE_ERR_SPAWN_FAILED');
    process.stdout.write(`${JSON.stringify({ error: { code, message: (error as Error).message } })}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`${JSON.stringify({ started })}\n`);
  process.stdout.destroy();
  // SIGTERM/SIGINT to the supervisor ends the run the way `kill` would, then the supervisor.
  const stop = (): void => { void run.kill({}, { state: 'killed', reason: 'supervisor stopped' }); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // SIGUSR2 is how `execgate kill` (another process) asks for the run to be stopped.
  process.on('SIGUSR2', () => { void run.kill({}, { state: 'killed', reason: 'killed on request' }); });
  process.on('SIGHUP', () => { /* detached: a closing terminal does not end the run */ });
  const ended = await run.status.done;
  await egress?.close();
  await ssh?.close();
  decisions?.close();
  await settleEnd(input, run, ended);
}

/** How long a supervisor stays to record its run's end on a disk that is full (then the run reads as lost). */
const SETTLE_MS = 10 * 60 * 1000;

/**
 * The end goes to the audit log and the record file; on a full disk the supervisor stays and
 * tries again every second, so the end is recorded once space is back. If it never is, the
 * supervisor goes and the next gateway to look records the run as lost (lost.ts).
 */
async function settleEnd(input: SupervisorInput, run: BackgroundRun, ended: BackgroundProcess): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  let audited = !input.audit;
  for (;;) {
    audited ||= recordEnd(input, ended, run.status.runtimeMs);
    const recorded = run.status.unrecorded === undefined || run.status.record();
    if ((audited && recorded) || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

let decisions: import('../../audit/log').AuditLog | undefined;
/** The run's decisions for its record, the latest MAX_SEEN (the audit log has them all). */
const seen: EgressDecision[] = [];
const MAX_SEEN = 500;

/** The run's egress proxy (as a gateway's, with its own CA); its decisions go to the run's audit log. */
async function serveEgress(input: SupervisorInput): Promise<EgressProxy> {
  const { EgressProxy: Proxy } = require('../../egress/proxy') as typeof import('../../egress/proxy');
  const { getEgressAuditFields } = require('../../egress/audit') as typeof import('../../egress/audit');
  const handed = input.egress!;
  const proxy = new Proxy({
    // Beside the handed-over directory (the CLI's runtime directory), not in the supervisor's cwd.
    runtimeDir: dirname(dirname(handed.dir)),
    onDecision: (decision) => {
      seen.push(decision);
      if (seen.length > MAX_SEEN) seen.shift();
      try {
        decisions ??= openAudit(input);
        decisions?.write('egress.decision', getEgressAuditFields(decision));
      } catch {
        // The proxy decided and acted; a log that cannot be written must not take the run down.
      }
    },
  });
  try {
    await proxy.adoptRun(handed);
  } catch (error) {
    await proxy.close();
    throw error;
  }
  return proxy;
}

/** The run's SSH agent, served here for as long as the run lives; its answers go to the run's audit log. */
async function serveSsh(input: SupervisorInput): Promise<{ close(): Promise<void> }> {
  const { adoptRunSsh } = require('../../egress/ssh/run') as typeof import('../../egress/ssh/run');
  return adoptRunSsh(input.ssh!, (record) => {
    try {
      decisions ??= openAudit(input);
      decisions?.write('ssh.sign', { ...record });
    } catch {
      // The agent answered; a log that cannot be written must not take the run down.
    }
  });
}

function openAudit(input: SupervisorInput): import('../../audit/log').AuditLog | undefined {
  if (!input.audit) return undefined;
  const { AuditLog } = require('../../audit/log') as typeof import('../../audit/log');
  const env: NodeJS.ProcessEnv = input.audit.key ? { EXECGATE_AUDIT_KEY: input.audit.key } : {};
  return new AuditLog({ path: input.audit.path, home: input.audit.home, env });
}

/** The run's end goes to the same tamper-evident audit log its start went to. True once written. */
function recordEnd(input: SupervisorInput, ended: BackgroundProcess, durationMs: number): boolean {
  if (!input.audit) return true;
  let log: import('../../audit/log').AuditLog | undefined;
  try {
    // Loaded only here: most supervisors spend their life waiting, not auditing.
    log = openAudit(input)!;
    log.write('background.ended', getEndedFields(ended, input.plan.request.actor, durationMs));
    return true;
  } catch {
    return false;
  } finally {
    log?.close();
  }
}

main().catch(() => {
  process.exitCode = 1;
});
