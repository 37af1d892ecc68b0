/*
 * Whether a process id names a live process. kill(pid, 0) sends nothing; EPERM means the
 * process exists but belongs to someone else, which still counts as alive (a lock holder
 * under another uid must not be judged dead). A zombie answers kill(0) too but runs nothing,
 * and lingers where PID 1 does not reap (many containers): /proc tells it apart.
 */
import { readFileSync } from 'node:fs';

export function isProcessAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (or not readable): kill(0) has answered
  }
}
