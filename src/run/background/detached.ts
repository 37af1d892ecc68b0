/*
 * Background runs that must outlive the process that asked for them (the CLI exits at once).
 * The prepared plan, resolved values included, is handed to a detached supervisor process over
 * a pipe on its stdin (never argv, never a file), which runs it exactly as a gateway would and
 * keeps its record under $EXECGATE_HOME/bg/ up to date. A sandboxed run's egress endpoint and SSH
 * agent go along: the supervisor outlives this process, so it serves the run's proxy socket and
 * agent socket itself.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError, spawnFailed } from '../../errors';
import type { HandedOffRun } from '../../egress/proxy';
import type { HandedOffSsh } from '../../egress/ssh/run';
import type { SpawnPlan } from '../../plan/prepare';
import type { BackgroundProcess } from './types';

export interface SupervisorInput {
  readonly home: string;
  readonly minLength: number;
  readonly ringBytes: number;
  readonly maxFileBytes: number;
  readonly secrets: ReadonlyArray<{ value: string; label: string }>;
  readonly plan: Omit<SpawnPlan, 'redactor' | 'resources'>;
  /** Where the supervisor records the run's end (the gateway's audit log), if it has one. */
  readonly audit?: DetachedAudit;
  /** The run's egress endpoint, which the supervisor serves with a proxy of its own (values inside). */
  readonly egress?: HandedOffRun;
  /** The run's SSH agent, which the supervisor serves (private keys inside). */
  readonly ssh?: HandedOffSsh;
}

export interface DetachedAudit {
  readonly path: string;
  readonly home: string;
  /** EXECGATE_AUDIT_KEY of the gateway's environment, when the key came from there. */
  readonly key?: string;
}

export function launchDetached(
  plan: SpawnPlan,
  options: { home: string; minLength: number; ringBytes: number; maxFileBytes: number; audit?: DetachedAudit },
): Promise<BackgroundProcess> {
  const { redactor: _redactor, resources, ...serializable } = plan;
  // This process's proxy stops serving the run; the supervisor listens on the same socket path.
  const egress = resources.handOffEgress();
  const ssh = resources.handOffSsh();
  const input: SupervisorInput = { ...options, secrets: resources.secrets, plan: serializable, ...(egress ? { egress } : {}), ...(ssh ? { ssh } : {}) };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(__dirname, 'supervisor.js')], {
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      cwd: '/',
    });
    let reply = '';
    const fail = (message: string): void => {
      // A supervisor that never started leaves the run's egress directory behind otherwise.
      if (egress) rmSync(egress.dir, { recursive: true, force: true });
      if (ssh) rmSync(ssh.dir, { recursive: true, force: true });
      reject(spawnFailed('the command\'s background supervisor', message));
    };
    child.once('error', (error) => fail(error.message));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      reply += text;
      const newline = reply.indexOf('\n');
      if (newline === -1) return;
      child.stdout.destroy();
      child.unref();
      try {
        const message = JSON.parse(reply.slice(0, newline)) as { started?: BackgroundProcess; error?: { code: string; message: string } };
        if (message.started) resolve(message.started);
        else reject(new ExecgateError((message.error?.code ?? 'EXECGATE_ERR_SPAWN_FAILED') as 'EXECGATE_ERR_SPAWN_FAILED', message.error?.message ?? 'no reply'));
      } catch (error) {
        fail((error as Error).message);
      }
    });
    child.once('exit', (code) => {
      if (!reply.includes('\n')) fail(`the supervisor exited with status ${code} before it replied`);
    });
    child.stdin.on('error', () => { /* reported through exit */ });
    child.stdin.end(JSON.stringify(input));
  });
}
