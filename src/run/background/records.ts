/*
 * Background runs are recorded under `$EXECGATE_HOME/bg/` (a JSON record beside the output
 * file) so that short-lived CLI invocations can list, read and kill runs started by another
 * process. When the recording process is gone, liveness is read from /proc: a pid counts as
 * the run only if its environment still carries the run's cookie (pids are reused).
 */
import { readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
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

/** Write atomically (temp + rename) so a reader never sees half a record. */
export function writeRecord(home: string, record: BackgroundRecord): void {
  const path = getRecordPath(home, record.id);
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  renameSync(temp, path);
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


/**
 * A record as it stands now: a record that says `running` whose supervisor is gone and whose
 * processes no longer exist is reported as ended with an unknown status.
 */
export function refreshRecord(record: BackgroundRecord): BackgroundRecord {
  if (record.state !== 'running') return record;
  if (isProcessAlive(record.supervisorPid)) return record;
  if (findByCookie(record.id).length > 0) return record;
  return {
    ...record,
    state: 'exited',
    reason: 'the supervising process is gone and no process of the run is left; the exit status is unknown',
  };
}
