/*
 * `audit verify --against FILE`: the local log set compared record by record with a copy kept
 * elsewhere (a syslog collector's file). A keyed chain cannot see its newest records cut off at
 * a record boundary, nor a whole set deleted and restarted by someone holding the key; a copy
 * the local host cannot rewrite can. Records are matched by seq and compared byte for byte:
 *
 * - missing: the copy holds a seq the local set does not (deleted, or the tail cut off locally);
 * - differing: both hold the seq with different bytes (edited, or a restarted chain);
 * - extra: only the local set holds it (the copy lags, or missed it while the collector was
 *   down: forwarding is best effort). Reported, not a break.
 *
 * The copy need not be in seq order (several writer processes forward independently), so it
 * is indexed by seq: one short digest per record (~1M records in well under 100 MB).
 */
import { createHash } from 'node:crypto';
import { readAuditBatches, type AuditLine } from './reader';

export interface CompareRecord {
  readonly seq: number;
  readonly file: string;
  readonly line: number;
}

export interface CompareResult {
  readonly ok: boolean;
  /** Records read on each side. */
  readonly local: number;
  readonly copy: number;
  readonly localLastSeq?: number;
  readonly copyLastSeq?: number;
  /** Lines of the copy that are not records (collector's own messages, damage). */
  readonly copyNotRecords: number;
  readonly missing: number;
  readonly differing: number;
  readonly extra: number;
  readonly firstMissing?: CompareRecord;
  readonly firstDiffering?: CompareRecord & { readonly localFile: string; readonly localLine: number };
  readonly firstExtra?: CompareRecord;
}

const SEQ = /"seq":(\d{1,15})[,}]/;

/** A record's seq, read without parsing the whole line (sealed lines start `{"v":1,"seq":N,`). */
function getSeq(entry: AuditLine): number | undefined {
  if (!entry.terminated || entry.overlong || entry.bytes[0] !== 0x7b) return undefined;
  const head = entry.bytes.subarray(0, 48).toString('latin1');
  const match = SEQ.exec(head);
  return match ? Number(match[1]) : undefined;
}

function digest(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('base64').slice(0, 22);
}

/** Compare the local set (`localFiles`, chain order) with a copy (`copyFiles`). */
export async function compareAuditCopies(localFiles: readonly string[], copyFiles: readonly string[]): Promise<CompareResult> {
  const copy = new Map<number, { digest: string; file: string; line: number }>();
  let copyRecords = 0;
  let copyNotRecords = 0;
  let copyLastSeq: number | undefined;
  for await (const batch of readAuditBatches(copyFiles)) {
    for (const entry of batch) {
      const seq = getSeq(entry);
      if (seq === undefined) {
        if (entry.length > 0) copyNotRecords++;
        continue;
      }
      copyRecords++;
      copyLastSeq = copyLastSeq === undefined ? seq : Math.max(copyLastSeq, seq);
      // A duplicate delivery of the same line is harmless; keep the first.
      if (!copy.has(seq)) copy.set(seq, { digest: digest(entry.bytes), file: entry.file, line: entry.line });
    }
  }
  let local = 0;
  let localLastSeq: number | undefined;
  let differing = 0;
  let extra = 0;
  let firstDiffering: CompareResult['firstDiffering'];
  let firstExtra: CompareRecord | undefined;
  for await (const batch of readAuditBatches(localFiles)) {
    for (const entry of batch) {
      const seq = getSeq(entry);
      if (seq === undefined) continue;
      local++;
      localLastSeq = seq;
      const held = copy.get(seq);
      if (held === undefined) {
        extra++;
        firstExtra ??= { seq, file: entry.file, line: entry.line };
        continue;
      }
      copy.delete(seq);
      if (held.digest !== digest(entry.bytes)) {
        differing++;
        firstDiffering ??= { seq, file: held.file, line: held.line, localFile: entry.file, localLine: entry.line };
      }
    }
  }
  let firstMissing: CompareRecord | undefined;
  for (const [seq, held] of copy) if (firstMissing === undefined || seq < firstMissing.seq) firstMissing = { seq, file: held.file, line: held.line };
  return {
    ok: copy.size === 0 && differing === 0 && local > 0,
    local,
    copy: copyRecords,
    ...(localLastSeq !== undefined ? { localLastSeq } : {}),
    ...(copyLastSeq !== undefined ? { copyLastSeq } : {}),
    copyNotRecords,
    missing: copy.size,
    differing,
    extra,
    ...(firstMissing ? { firstMissing } : {}),
    ...(firstDiffering ? { firstDiffering } : {}),
    ...(firstExtra ? { firstExtra } : {}),
  };
}
