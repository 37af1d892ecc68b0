/*
 * Background runs are recorded under `$EXECGATE_HOME/bg/` (a JSON record beside the output
 * file) so that short-lived CLI invocations can list, read and kill runs started by another
 * process. When the recording process is gone, liveness is read from /proc: a pid counts as
 * the run only if its environment still carries the run's cookie (pids are reused).
 */
import { readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findByCookie } from '../../process/terminate';
import type { BackgroundProcess } from './types';
import { isProcessAlive } from '../../fs/process';

export { isProcessAlive };

export function getBackgroundDir(home: string): string {
  return join(home, 'bg');
}

export function getRecordPath(home: string, id: string): string {
  return join(getBackgroundDir(home), `${id}.json`);
}

export function getOutputPath(home: string, id: string): string {
  return join(getBackgroundDir(home), `${id}.log`);
}

export interface BackgroundRecord extends BackgroundProcess {
  /** pid of the process that supervises the run (reads its output, writes this record). */
  readonly supervisorPid: number;
}

/** Write atomically (temp + rename) so a reader never sees half a record; throws what the disk said. */
export function writeRecord(home: string, record: BackgroundRecord): void {
  const path = getRecordPath(home, record.id);
  const temp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    renameSync(temp, path);
  } catch (error) {
    // A temporary file cut short by a full disk is not left to fill it further.
    rmSync(temp, { force: true });
    throw error;
  }
}

export function readRecord(home: string, id: string): BackgroundRecord | undefined {
  try {
    return JSON.parse(readFileSync(getRecordPath(home, id), 'utf8')) as BackgroundRecord;
  } catch {
    return undefined;
  }
}

export function listRecords(home: string): BackgroundRecord[] {
  let names: string[];
  try {
    names = readdirSync(getBackgroundDir(home));
  } catch {
    return [];
  }
  const records: BackgroundRecord[] = [];
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const record = readRecord(home, name.slice(0, -'.json'.length));
    if (record) records.push(record);
  }
  return records.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}


/** Why a run whose record says `running` is lost, or undefined while it may still be running. */
export function getLostReason(record: BackgroundRecord): string | undefined {
  if (record.state !== 'running') return undefined;
  if (isProcessAlive(record.supervisorPid)) return undefined;
  if (findByCookie(record.id).length > 0) return undefined;
  return `its supervising process (pid ${record.supervisorPid}) ended without recording how the run ended, and no process of the run is left; the exit status is unknown`;
}

/**
 * A record as it stands now: a record that says `running` whose supervisor is gone and whose
 * processes no longer exist is reported as `lost` (see lost.ts, which records it so).
 */
export function refreshRecord(record: BackgroundRecord): BackgroundRecord {
  const reason = getLostReason(record);
  if (reason === undefined) return record;
  return { ...record, state: 'lost', endedAt: record.endedAt ?? new Date().toISOString(), reason };
}
