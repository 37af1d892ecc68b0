/*
 * A background run whose end was never recorded: its supervising process died (killed, the
 * machine's OOM killer) or could not write the end (a full disk). Whichever gateway process looks
 * at its record first and finds the supervisor gone and no process of the run left records it as
 * `lost`, once: under the record's own lock, the record is read again, the audit log gets
 * `background.ended` (state `lost`, with the reason) first, then the record file and a closing
 * line in the output file. A record that cannot be written yet stays `running` on disk (and
 * reads as `lost`), so the next process to look tries again.
 */
import { appendFileSync } from 'node:fs';
import { withLockSync } from '../../fs/lock';
import { ExecgateError } from '../../errors';
import { getEndedFields } from './ended';
import { getLostReason, getRecordPath, readRecord, writeRecord, type BackgroundRecord } from './records';

export type AuditHook = (event: string, fields: Record<string, unknown>) => void;

/** The record as it stands, recorded as `lost` if it is. */
export function settleRecord(home: string, record: BackgroundRecord, audit: AuditHook | undefined): BackgroundRecord {
  if (getLostReason(record) === undefined) return record;
  try {
    return withLockSync(`${getRecordPath(home, record.id)}.lock`, () => {
      const current = readRecord(home, record.id) ?? record;
      const reason = getLostReason(current);
      if (reason === undefined) return current;
      const endedAt = new Date().toISOString();
      const lost: BackgroundRecord = { ...current, state: 'lost', endedAt, reason };
      const { supervisorPid: _supervisor, ...shown } = lost;
      audit?.('background.ended', getEndedFields(shown, 'execgate', Date.parse(endedAt) - Date.parse(current.startedAt)));
      writeRecord(home, lost);
      try {
        appendFileSync(current.outputPath, `\n[background process lost: ${reason}]\n`);
      } catch { /* removed, or no room: the record says it */ }
      return lost;
    }, { timeoutMs: 5000, onTimeout: () => new ExecgateError('EXECGATE_ERR_BACKGROUND_IO', 'busy'), onError: () => new ExecgateError('EXECGATE_ERR_BACKGROUND_IO', 'no lock') });
  } catch {
    // Not recorded now (no room, or another process is at it): it reads as lost all the same.
    return { ...record, state: 'lost', endedAt: record.endedAt ?? new Date().toISOString(), reason: getLostReason(record) };
  }
}
