/*
 * Gateway-death containment. A process that dies by SIGKILL runs no code, so its runs cannot
 * be ended from inside it. Node has no prctl(PR_SET_CHILD_SUBREAPER), so the other side
 * watches: one small bash process per gateway process, in its own session, ignoring the
 * terminal's signals, holds the read end of a pipe that the gateway never writes. When the pipe
 * reaches EOF (this process is gone, however it died) the watchdog reads the list of runs, stops
 * and kills every process whose environment carries the cookie of a run still listed, the same
 * sweep a timeout ends with, then exits.
 * The list is a file in a private directory (0700, under the runtime directory), appended
 * `+ <runId>` when a run starts and `- <runId>` when it has settled. It went through the pipe
 * before: every line woke the watchdog, and on a busy machine that wake-up cost the run's path
 * about as much as a cookie sweep (0.5 to 1.3 ms a run in profiles at load 8 to 13); an append to
 * a file wakes no one. The file is rewritten (renamed over) with the runs still listed once it
 * has grown, so it stays small for a gateway's life. A normal exit finds every settled run taken
 * off already (removals are appended at once), so the watchdog ends without a sweep unless a run
 * is still going. Runs meant to outlive the gateway
 * (background runs kept on close) are taken off the list at once. Without bash there is no
 * watchdog; SECURITY.md says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { getRuntimeBase } from '../fs/runtime-dir';
import { getWatchdogScript } from './programs';
import { RUN_ID_VARIABLE } from './terminate';

const BASH = '/bin/bash';
/** Lines appended before the list is rewritten with only the runs still listed. */
const COMPACT_LINES = 4096;

interface Watchdog {
  readonly child: ChildProcess;
  readonly dir: string;
  readonly path: string;
  fd: number;
}

let watchdog: Watchdog | undefined | null;
/** The runs listed now (what a rewrite of the file keeps). */
const listed = new Set<string>();
let lines = 0;

function getWatchdog(): Watchdog | undefined {
  if (watchdog === undefined) {
    watchdog = null;
    if (!existsSync(BASH)) return undefined;
    let dir: string | undefined;
    try {
      dir = mkdtempSync(join(getRuntimeBase(), `execgate-watchdog-${process.pid}-`));
      const path = join(dir, 'runs');
      const fd = openSync(path, 'a', 0o600);
      // The program: src/programs/watchdog.bash.
      const child = spawn(BASH, ['--norc', '--noprofile', '-c', getWatchdogScript(), 'execgate-watchdog', RUN_ID_VARIABLE, path], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
        cwd: '/',
      });
      const made: Watchdog = { child, dir, path, fd };
      child.on('error', () => { watchdog = null; });
      child.stdin?.on('error', () => { watchdog = null; });
      child.unref();
      (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      watchdog = made;
    } catch {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      watchdog = null;
    }
  }
  return watchdog ?? undefined;
}

/** Append `line` to the list; false when the list cannot be written (no watchdog covers the run then). */
function append(line: string): boolean {
  const dog = watchdog;
  if (!dog) return false;
  try {
    writeSync(dog.fd, line);
  } catch {
    return false;
  }
  lines += 1;
  if (lines >= COMPACT_LINES) compact(dog);
  return true;
}

/** The list rewritten with the runs still listed, renamed over the old one: the watchdog reads whichever is there at its end. */
function compact(dog: Watchdog): void {
  const next = `${dog.path}.next`;
  try {
    writeFileSync(next, [...listed].map((id) => `+ ${id}\n`).join(''), { mode: 0o600 });
    const fd = openSync(next, 'a');
    renameSync(next, dog.path);
    closeSync(dog.fd);
    dog.fd = fd;
    lines = listed.size;
  } catch {
    // kept as it is: it still lists every run (it only grows)
  }
}

/**
 * List a run with the watchdog (written before this returns, so before the spawn). The
 * returned function takes it off (idempotent); with `now` or without, at once: an append wakes no one.
 */
export function watchRun(runId: string): (now?: boolean) => void {
  if (!getWatchdog()) return () => undefined;
  listed.add(runId);
  if (!append(`+ ${runId}\n`)) {
    listed.delete(runId);
    return () => undefined;
  }
  let on = true;
  return () => {
    if (!on) return;
    on = false;
    listed.delete(runId);
    append(`- ${runId}\n`);
  };
}
