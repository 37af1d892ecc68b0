/*
 * Entry point of the detached background supervisor (see detached.ts). It reads one JSON plan
 * from stdin, starts the run, replies with one JSON line on stdout, then stays alive, reading
 * and redacting the run's output into its file, until the run has ended.
 */
import { Redactor } from '../../redact';
import { getErrorCode } from '../../errors';
import type { SpawnPlan } from '../prepare';
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
  const plan = { ...input.plan, redactor } as SpawnPlan;
  const run = new BackgroundRun(plan, {
    home: input.home,
    ringBytes: input.ringBytes,
    maxFileBytes: input.maxFileBytes,
    maxRuntime: plan.limits.timeout,
  });
  let started;
  try {
    started = await run.start(process.pid);
  } catch (error) {
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
  recordEnd(input, ended, run.status.runtimeMs);
}

/** The run's end goes to the same tamper-evident audit log its start went to. */
function recordEnd(input: SupervisorInput, ended: BackgroundProcess, durationMs: number): void {
  if (!input.audit) return;
  try {
    // Loaded only here: most supervisors spend their life waiting, not auditing.
    const { AuditLog } = require('../../audit/log') as typeof import('../../audit/log');
    const env: NodeJS.ProcessEnv = input.audit.key ? { EXECGATE_AUDIT_KEY: input.audit.key } : {};
    const log = new AuditLog({ path: input.audit.path, home: input.audit.home, env });
    log.write('background.ended', getEndedFields(ended, input.plan.request.actor, durationMs));
    log.close();
  } catch {
    // The output file and the record already say how the run ended.
  }
}

main().catch(() => {
  process.exitCode = 1;
});
