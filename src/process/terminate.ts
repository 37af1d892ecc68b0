/*
 * Containment. Every run is its own session and process group (spawned detached, so
 * setsid(2)), and carries a run-id cookie in its environment. Stopping a run:
 *   1. SIGTERM to the whole group, so well-behaved programs can clean up (sandboxed: to every
 *      process in the run's PID namespace but its init, since bubblewrap's own group is only
 *      bubblewrap, and bubblewrap ending kills the namespace at once, handlers and all);
 *   2. after the grace period, SIGKILL to the group (sandboxed: bubblewrap's, which ends the
 *      namespace and everything in it);
 *   3. a sweep of /proc for processes of this user whose environment holds the cookie: this
 *      catches children that left the group (setsid, `set -m`, double-forking daemons).
 *      They are first stopped (SIGSTOP), then killed, so a forking process cannot outrun the
 *      sweep. A process that clears its own environment escapes the sweep; SECURITY.md says so.
 */
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { isSameInit, type SandboxInit } from './bwrap/verify';

export const RUN_ID_VARIABLE = 'EXECGATE_RUN_ID';

/**
 * Whether a live (non-zombie) process is left in the group `pgid`. kill(-pgid, 0) alone also
 * counts zombies, which linger where PID 1 does not reap (many containers), so a positive
 * answer is confirmed against /proc.
 */
export function isGroupAlive(pgid: number): boolean {
  const error = kill(-pgid, 0);
  if (error !== undefined && error !== 'EPERM') return false;
  return (countGroups([pgid]).get(pgid) ?? 0) > 0;
}

/** Whether any process, zombies included, is in the group `pgid`. */
function groupExists(pgid: number): boolean {
  const error = kill(-pgid, 0);
  return error === undefined || error === 'EPERM';
}

/**
 * process.kill, its error's code returned instead of thrown. The usual answer after a run is
 * ESRCH (the group is gone), and an Error with its stack trace cost about 60 µs of a run's path
 * (more than the kill); it is made here without the trace (nothing else runs meanwhile).
 */
function kill(pid: number, signal: NodeJS.Signals | 0): string | undefined {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(pid, signal);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'unknown';
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The PIDs listed in /proc from `minPid` on (none when /proc cannot be read). */
function listPids(minPid = 0): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    const pid = Number(entry);
    if (pid >= minPid) pids.push(pid);
  }
  return pids;
}

/** How many live (non-zombie) processes each of `pgids` holds: one pass over /proc/PID/stat. */
function countGroups(pgids: readonly number[]): Map<number, number> {
  const wanted = new Set(pgids);
  const counts = new Map<number, number>();
  for (const pid of listPids()) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pgrp = Number(fields[2]);
    if (fields[0] !== 'Z' && fields[0] !== 'X' && wanted.has(pgrp)) counts.set(pgrp, (counts.get(pgrp) ?? 0) + 1);
  }
  return counts;
}

/**
 * Questions asked in the same turn of the event loop share one answer, computed once for all of
 * them: when many runs stop at once (a gateway closing, 200 background runs killed), each /proc
 * scan serves them all instead of one scan per run.
 */
function batchPerTurn<K, R>(compute: (keys: K[]) => R): (key: K) => Promise<R> {
  let pending: { keys: K[]; result: Promise<R> } | undefined;
  return (key) => {
    if (!pending) {
      const keys: K[] = [];
      pending = {
        keys,
        result: new Promise<R>((resolve) => {
          setImmediate(() => {
            pending = undefined;
            resolve(compute(keys));
          });
        }),
      };
    }
    pending.keys.push(key);
    return pending.result;
  };
}

const countGroupsBatched = batchPerTurn(countGroups);

async function countGroup(pgid: number): Promise<number> {
  return (await countGroupsBatched(pgid)).get(pgid) ?? 0;
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  return kill(-pgid, signal) === undefined;
}

/** PIDs of this user's processes whose environment holds `EXECGATE_RUN_ID=<runId>`. */
export function findByCookie(runId: string): number[] {
  return findByCookies(new Set([runId])).get(runId) ?? [];
}

const COOKIE = Buffer.from(`${RUN_ID_VARIABLE}=`);

/**
 * One pass over /proc for any number of run ids: each process's environment is read once and
 * its cookie looked up in `runIds`. Killing many runs at once (gateway shutdown, a session
 * closing) then costs one scan per round instead of one per run.
 */
export function findByCookies(runIds: ReadonlySet<string>, sincePid = 0): Map<string, number[]> {
  const found = new Map<string, number[]>();
  const { pids, sessionsFrom } = listCandidates(sincePid);
  for (const pid of pids) {
    if (pid === process.pid) continue;
    if (sessionsFrom > 0 && !inSessionFrom(pid, sessionsFrom)) continue;
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue; // gone, or another user's process
    }
    for (let at = environ.indexOf(COOKIE); at !== -1; at = environ.indexOf(COOKIE, at + 1)) {
      if (at > 0 && environ[at - 1] !== 0) continue; // the name must start a variable
      const start = at + COOKIE.length;
      const end = environ.indexOf(0, start);
      const runId = environ.toString('latin1', start, end === -1 ? environ.length : end);
      if (!runIds.has(runId)) continue;
      const list = found.get(runId);
      if (list) list.push(pid);
      else found.set(runId, [pid]);
      break;
    }
  }
  return found;
}

/**
 * Whether `pid` is a live process whose session began at `sincePid` or later, from
 * /proc/PID/stat. A run's shell is spawned detached (its own session, its pid), and every process
 * it starts stays in that session or makes a new one with its own, later pid: so with pids not
 * wrapped since the shell's, no process of the run is in an earlier session. The stat read takes
 * no lock of the process's memory; opening its environ does (mm_access), and waits while that
 * process is in an exec: on a busy host, other programs' processes started meanwhile made the
 * sweep wait there, milliseconds a run. Those (and threads of older processes) are skipped.
 */
function inSessionFrom(pid: number, sessionsFrom: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false; // gone
  }
  // `pid (comm) state ppid pgrp session ...`; comm may hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 4);
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  return Number(fields[3]) >= sessionsFrom;
}

/** Up to this many pids allocated since the shell's are looked up one by one instead of listing /proc. */
const PROBE_LIMIT = 256;

/** /proc/sys/kernel/ns_last_pid, held open: read again at offset 0 for each sweep (one pread, not an open, a read and a close). */
let lastPidFd: number | undefined;

function readLastPid(): number {
  try {
    lastPidFd ??= openSync('/proc/sys/kernel/ns_last_pid', 'r');
    const buffer = Buffer.allocUnsafe(24);
    return Number(buffer.toString('latin1', 0, readSync(lastPidFd, buffer, 0, buffer.length, 0)));
  } catch {
    if (lastPidFd !== undefined) {
      try { closeSync(lastPidFd); } catch { /* already closed */ }
    }
    lastPidFd = undefined;
    return Number.NaN; // no such file (old kernel, another /proc): list everything
  }
}

/*
 * Which pids can hold a run's cookie. Every process a run starts gets a pid allocated after its
 * shell's (`sincePid`), so the scan skips the lower ones (most of /proc on a busy host), unless
 * pids wrapped around since: the kernel's last allocated pid is then below the shell's, and the
 * whole of /proc is read, every session included. When the last allocated pid is the shell's
 * own, the run started no process and the only candidate is the shell; when few pids were
 * allocated since, each is looked up rather than listing all of /proc (a thread id answers too:
 * its environ is its process's, and a signal sent to it goes to the process). `sessionsFrom`:
 * the first session a process of the run can be in (inSessionFrom), 0 for any.
 */
function listCandidates(sincePid: number): { pids: number[]; sessionsFrom: number } {
  const last = sincePid > 0 ? readLastPid() : Number.NaN;
  if (!Number.isSafeInteger(last) || last < sincePid) return { pids: listPids(), sessionsFrom: 0 };
  if (last - sincePid > PROBE_LIMIT) return { pids: listPids(sincePid), sessionsFrom: sincePid };
  const pids: number[] = [];
  // Each pid is looked up by its stat (inSessionFrom): one that is gone fails there.
  for (let pid = sincePid; pid <= last; pid++) pids.push(pid);
  return { pids, sessionsFrom: sincePid };
}

const findByCookiesBatched = batchPerTurn((keys: { runId: string; sincePid: number }[]) =>
  findByCookies(new Set(keys.map((key) => key.runId)), Math.min(...keys.map((key) => key.sincePid))));

async function findByCookieBatched(runId: string, sincePid: number): Promise<number[]> {
  return (await findByCookiesBatched({ runId, sincePid })).get(runId) ?? [];
}

/** Stop then kill every process carrying the cookie; repeat until none is left. */
export async function sweepByCookie(runId: string, rounds = 5, sincePid = 0): Promise<number[]> {
  const killed = new Set<number>();
  for (let round = 0; round < rounds; round++) {
    const pids = await findByCookieBatched(runId, sincePid);
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

/**
 * The processes of the sandbox's PID namespace (as this process sees them), init aside, live
 * ones only; none once the init the gate saw is gone (its namespace went with it).
 */
export function listNamespace(init: SandboxInit): number[] {
  if (!isSameInit(init)) return [];
  const found: number[] = [];
  for (const pid of listPids()) {
    if (pid === init.pid || pid === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${pid}/ns/pid`) !== init.namespace) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const state = stat.charAt(stat.lastIndexOf(')') + 2);
      if (state !== 'Z' && state !== 'X') found.push(pid);
    } catch {
      // gone, or not ours to look at
    }
  }
  return found;
}

/** Signal every process of a sandbox's PID namespace but its init; whether any was there. */
function signalNamespace(init: SandboxInit, signal: NodeJS.Signals): boolean {
  const pids = listNamespace(init);
  for (const pid of pids) {
    // A pid read from /proc may have been reused since: only one still in the namespace is signalled.
    try {
      if (readlinkSync(`/proc/${pid}/ns/pid`) === init.namespace) process.kill(pid, signal);
    } catch { /* gone */ }
  }
  return pids.length > 0;
}

export interface TerminateOptions {
  readonly pgid: number;
  readonly runId: string;
  readonly grace: number;
  readonly signal?: NodeJS.Signals;
  /** The run's shell pid when it was spawned in this process's view: the sweep reads only later pids. */
  readonly sincePid?: number;
  /**
   * False skips the cookie sweep: for a sandboxed run that has exited. Its PID namespace holds
   * everything it started (`setsid` daemons included), and bubblewrap's exit ends the namespace's
   * init (`--die-with-parent`), upon which the kernel kills the rest: a sweep would only find
   * processes already being killed.
   */
  readonly sweep?: boolean;
  /**
   * Sandboxed: the sandbox's init (PID 1 inside). The signal goes to the processes inside, and
   * the grace is theirs; then bubblewrap's group is killed, which ends the namespace.
   */
  readonly sandboxInit?: SandboxInit;
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
  if (options.sandboxInit !== undefined && signal !== 'SIGKILL') {
    if (signalNamespace(options.sandboxInit, signal)) {
      // The namespace ends by itself once its first program exits (bubblewrap's init follows it).
      const deadline = Date.now() + grace;
      let pause = 2;
      while (Date.now() < deadline && groupExists(pgid) && listNamespace(options.sandboxInit).length > 0) {
        await delay(Math.min(pause, Math.max(1, deadline - Date.now())));
        pause = Math.min(25, pause * 2);
      }
    }
    if (groupExists(pgid) && (await countGroup(pgid)) > 0) {
      escalated = listNamespace(options.sandboxInit).length > 0;
      signalGroup(pgid, 'SIGKILL');
    }
  } else if (signalGroup(pgid, signal) && signal !== 'SIGKILL') {
    const started = Date.now();
    const deadline = started + grace;
    // kill(-pgid, 0) is a cheap syscall; the /proc scan that tells zombies from live processes
    // is only worth it once the group has outlived a short wait (many runs may stop at once).
    let pause = 2;
    while (Date.now() < deadline && groupExists(pgid)) {
      if (Date.now() - started >= 50 && (await countGroup(pgid)) === 0) break;
      await delay(Math.min(pause, Math.max(1, deadline - Date.now())));
      pause = Math.min(25, pause * 2);
    }
    if (groupExists(pgid) && (await countGroup(pgid)) > 0) {
      escalated = true;
      signalGroup(pgid, 'SIGKILL');
    }
  }
  const swept = options.sweep === false ? [] : await sweepByCookie(runId, 5, options.sincePid ?? 0);
  return { escalated, swept: swept.length };
}
