/*
 * Containment. Every run is its own session and process group (spawned detached, so
 * setsid(2)), and carries a run-id cookie in its environment. Stopping a run:
 *   1. SIGTERM to the whole group, so well-behaved programs can clean up;
 *   2. after the grace period, SIGKILL to the group;
 *   3. a sweep of /proc for processes of this user whose environment holds the cookie: this
 *      catches children that left the group (setsid, `set -m`, double-forking daemons).
 *      They are first stopped (SIGSTOP), then killed, so a forking process cannot outrun the
 *      sweep. A process that clears its own environment escapes the sweep; SECURITY.md says so.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

export const RUN_ID_VARIABLE = 'EXECGATE_RUN_ID';

/**
 * Whether a live (non-zombie) process is left in the group `pgid`. kill(-pgid, 0) alone also
 * counts zombies, which linger where PID 1 does not reap (many containers), so a positive
 * answer is confirmed against /proc.
 */
export function isGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return listGroup(pgid).length > 0;
}

/** Non-zombie PIDs whose process group is `pgid`, read from /proc/PID/stat. */
export function listGroup(pgid: number): number[] {
  const members: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return members;
  }
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && fields[0] !== 'X' && Number(fields[2]) === pgid) members.push(Number(entry));
  }
  return members;
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** PIDs of this user's processes whose environment holds `EXECGATE_RUN_ID=<runId>`. */
export function findByCookie(runId: string): number[] {
  const needle = Buffer.from(`\0${RUN_ID_VARIABLE}=${runId}\0`);
  const first = Buffer.from(`${RUN_ID_VARIABLE}=${runId}\0`);
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${entry}/environ`);
    } catch {
      continue; // gone, or another user's process
    }
    if (environ.indexOf(needle) !== -1 || environ.subarray(0, first.length).equals(first)) found.push(pid);
  }
  return found;
}

/** Stop then kill every process carrying the cookie; repeat until none is left. */
export async function sweepByCookie(runId: string, rounds = 5): Promise<number[]> {
  const killed = new Set<number>();
  for (let round = 0; round < rounds; round++) {
    const pids = findByCookie(runId);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try { process.kill(pid, 'SIGSTOP'); } catch { /* already gone */ }
    }
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch { /* already gone */ }
    }
    await delay(5);
  }
  return [...killed];
}

export interface TerminateOptions {
  readonly pgid: number;
  readonly runId: string;
  readonly grace: number;
  readonly signal?: NodeJS.Signals;
}

export interface TerminateReport {
  readonly escalated: boolean;
  readonly swept: number;
}

/** SIGTERM (or `signal`) to the group, SIGKILL after `grace`, then the cookie sweep. */
export async function terminateRun(options: TerminateOptions): Promise<TerminateReport> {
  const { pgid, runId, grace } = options;
  const signal = options.signal ?? 'SIGTERM';
  let escalated = false;
  if (signalGroup(pgid, signal) && signal !== 'SIGKILL') {
    const deadline = Date.now() + grace;
    while (isGroupAlive(pgid) && Date.now() < deadline) await delay(Math.min(25, Math.max(1, deadline - Date.now())));
    if (isGroupAlive(pgid)) {
      escalated = true;
      signalGroup(pgid, 'SIGKILL');
    }
  }
  const swept = await sweepByCookie(runId);
  return { escalated, swept: swept.length };
}
