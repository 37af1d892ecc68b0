/*
 * Gateway-death containment. A process that dies by SIGKILL runs no code, so its runs cannot
 * be ended from inside it. Node has no prctl(PR_SET_CHILD_SUBREAPER), so the other side
 * watches: one small bash process per gateway process, in its own session, ignoring the
 * terminal's signals, holds the read end of a pipe. The gateway writes `+ <runId>` when a run
 * starts and `- <runId>` when it has settled. When the pipe reaches EOF (this process is gone,
 * however it died) the watchdog stops and kills every process whose environment carries the
 * cookie of a run still listed, the same sweep a timeout ends with, then exits.
 * Runs meant to outlive the gateway (background runs kept on close) are taken off the list at
 * once. A settled run's removal waits for the next write (the next run's `+`, a timer, or this
 * process's exit): every write wakes the watchdog, and a wake-up on a busy machine costs about
 * as much as the cookie sweep, while a settled run left listed a moment longer costs nothing
 * (nothing carries its cookie any more). The list is kept by awk, which reads the pipe in
 * blocks where bash's `read` takes a system call per byte, in a batch-scheduled process.
 * Without bash there is no watchdog; SECURITY.md says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { getWatchdogScript } from './programs';
import { RUN_ID_VARIABLE } from './terminate';


const BASH = '/bin/bash';

let watchdog: ChildProcess | undefined | null;

function getWatchdog(): ChildProcess | undefined {
  if (watchdog === undefined) {
    watchdog = null;
    if (!existsSync(BASH)) return undefined;
    try {
      // The program: src/programs/watchdog.bash.
      const child = spawn(BASH, ['--norc', '--noprofile', '-c', getWatchdogScript(), 'execgate-watchdog', RUN_ID_VARIABLE], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
        cwd: '/',
      });
      child.on('error', () => { watchdog = null; });
      child.stdin?.on('error', () => { watchdog = null; });
      child.unref();
      // A normal exit leaves the list empty, so the watchdog ends without a sweep.
      process.once('exit', () => send(''));
      (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      watchdog = child;
    } catch {
      watchdog = null;
    }
  }
  return watchdog ?? undefined;
}

/** Removals not yet written: they go with the next write. */
let pending = '';
let flushTimer: NodeJS.Timeout | undefined;

function send(line: string): void {
  const stdin = watchdog?.stdin;
  const data = pending + line;
  pending = '';
  if (flushTimer) clearTimeout(flushTimer);
  flushTimer = undefined;
  if (data && stdin && !stdin.destroyed) stdin.write(data);
}

function flushSoon(): void {
  if (flushTimer) return;
  flushTimer = setTimeout(() => send(''), 1000);
  flushTimer.unref();
}

/**
 * List a run with the watchdog (written before this returns, so before the spawn). The
 * returned function takes it off (idempotent): with `now`, at once (the run is to outlive this
 * process); otherwise with the next write.
 */
export function watchRun(runId: string): (now?: boolean) => void {
  const child = getWatchdog();
  if (!child?.stdin || child.stdin.destroyed) return () => undefined;
  send(`+ ${runId}\n`);
  let listed = true;
  return (now = false) => {
    if (!listed) return;
    listed = false;
    pending += `- ${runId}\n`;
    if (now) send('');
    else flushSoon();
  };
}
