/*
 * Killing a background run that another (possibly finished) process started: signal its process
 * group, wait the grace period, SIGKILL, sweep by cookie, and if its supervisor is gone, close
 * its record and output file with what happened.
 */
import { appendFileSync } from 'node:fs';
import { ExecgateError } from '../../errors';
import { DEFAULT_POLICY } from '../../policy/effective';
import { terminateRun } from '../../process/terminate';
import { isProcessAlive, readRecord, refreshRecord, writeRecord } from './records';
import type { BackgroundProcess, KillOptions } from './types';

export async function killRecorded(home: string, id: string, options: KillOptions = {}): Promise<BackgroundProcess> {
  const record = readRecord(home, id);
  if (!record) {
    throw new ExecgateError('EXECGATE_ERR_BACKGROUND_NOT_FOUND', `No background process has the id \`${id}\`.`, { id });
  }
  const grace = options.grace ?? DEFAULT_POLICY.grace;
  if (refreshRecord(record).state === 'running') {
    if (isProcessAlive(record.supervisorPid) && !options.signal) {
      // The supervisor stops the run itself and records why; wait for it to say so.
      try { process.kill(record.supervisorPid, 'SIGUSR2'); } catch { /* gone meanwhile */ }
      const deadline = Date.now() + grace + 3000;
      while (Date.now() < deadline && readRecord(home, id)?.state === 'running') await new Promise((r) => setTimeout(r, 25));
    }
    if (readRecord(home, id)?.state === 'running') {
      await terminateRun({ pgid: record.pgid, runId: id, grace, signal: options.signal });
    }
  }
  // Give a live supervisor the moment it needs to record the end itself.
  for (let i = 0; i < 80 && isProcessAlive(record.supervisorPid); i++) {
    const current = readRecord(home, id);
    if (current && current.state !== 'running') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const current = readRecord(home, id) ?? record;
  if (current.state === 'running' && !isProcessAlive(current.supervisorPid)) {
    const line = '[background process killed (killed on request; its supervisor was gone)]';
    try { appendFileSync(current.outputPath, `\n${line}\n`); } catch { /* file removed */ }
    const ended = { ...current, state: 'killed' as const, endedAt: new Date().toISOString(), reason: 'killed on request' };
    writeRecord(home, ended);
    const { supervisorPid: _s, ...shown } = ended;
    return shown;
  }
  const { supervisorPid: _s, ...shown } = refreshRecord(current);
  return shown;
}
