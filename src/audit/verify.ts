/*
 * Verification of a chain over a set of files, streaming, in bounded memory. It names the first
 * broken record (file, line, seq) and why, keeps going to count further breaks (re-anchoring
 * on each record it reads, so one edit is one break), and reports crash leftovers that a
 * `chain.resumed` record accounts for as notes, not breaks (see tail.ts for the policy).
 *
 * What a keyed chain cannot see: the newest records cut off at a record boundary (nothing after
 * them vouches for them), and a whole log set replaced by someone holding the audit key. Ship
 * records to a remote collector for those.
 */
import type { KeyObject } from 'node:crypto';
import { GENESIS_HASH, parseChainLine, readVerifiedLink } from './chain';
import type { AuditKeys } from './key';
import { readAuditBatches, type AuditLine } from './reader';

export interface VerifyProblem {
  readonly file: string;
  readonly line: number;
  readonly offset: number;
  readonly seq?: number;
  readonly reason: string;
}

export interface VerifiedFile {
  readonly file: string;
  records: number;
  lines: number;
  firstSeq?: number;
  lastSeq?: number;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly keyId: string;
  readonly records: number;
  readonly firstSeq?: number;
  readonly lastSeq?: number;
  readonly lastHash?: string;
  readonly files: readonly VerifiedFile[];
  /** The first breaks found (at most `maxProblems`), first one first. */
  readonly breaks: readonly VerifyProblem[];
  /** All breaks, including those not listed. */
  readonly breakCount: number;
  /** Accounted-for crash leftovers, and a start mid-chain accepted with `partial`. */
  readonly notes: readonly VerifyProblem[];
  /**
   * Files in which no record verifies under the key at hand and whose records name another key
   * id (or none): the wrong key, said once instead of once per record.
   */
  readonly wrongKey: readonly WrongKeyFile[];
}

export interface WrongKeyFile {
  readonly file: string;
  /** The key id the file's records name, when they name one. */
  readonly keyId?: string;
  readonly records: number;
}

export interface VerifyOptions {
  /** Accept a set that starts mid-chain (older files archived elsewhere). */
  partial?: boolean;
  /** Breaks listed in the result (all are counted); default 20. */
  maxProblems?: number;
}

/** MAC failures in the current file, held until the file shows whether the key is right at all. */
interface PendingMacFailures {
  problems: VerifyProblem[];
  count: number;
  /** A record of this file verified: the key is right, the failures are edits. */
  anyVerified: boolean;
  /** The key id the file's records name (the first record of a file carries it). */
  declaredKeyId: string | undefined;
}

interface Leftover {
  readonly file: string;
  readonly line: number;
  readonly offset: number;
  readonly why: string;
}

/** A streaming verifier: push lines in chain order, then finish(). */
export class ChainVerifier {
  readonly #key: KeyObject;
  readonly #keyId: string;
  readonly #partial: boolean;
  readonly #maxProblems: number;
  readonly #files: VerifiedFile[] = [];
  readonly #breaks: VerifyProblem[] = [];
  readonly #notes: VerifyProblem[] = [];
  readonly #wrongKey: WrongKeyFile[] = [];
  #pending: PendingMacFailures = { problems: [], count: 0, anyVerified: false, declaredKeyId: undefined };
  #breakCount = 0;
  #records = 0;
  #firstSeq: number | undefined;
  #last: { seq: number; hash: string; file: string } | undefined;
  #leftover: Leftover | undefined;
  #file: VerifiedFile | undefined;

  constructor(keys: AuditKeys, options: VerifyOptions = {}) {
    this.#key = keys.chain;
    this.#keyId = keys.keyId;
    this.#partial = options.partial === true;
    this.#maxProblems = options.maxProblems ?? 20;
  }

  #break(problem: VerifyProblem): void {
    this.#breakCount++;
    if (this.#breaks.length < this.#maxProblems) this.#breaks.push(problem);
  }

  #flushPending(): void {
    const pending = this.#pending;
    for (const problem of pending.problems) this.#break(problem);
    this.#breakCount += pending.count - pending.problems.length;
    this.#pending = { problems: [], count: 0, anyVerified: pending.anyVerified, declaredKeyId: pending.declaredKeyId };
  }

  #macFailure(problem: VerifyProblem): void {
    if (this.#pending.anyVerified) {
      this.#break(problem);
      return;
    }
    this.#pending.count++;
    if (this.#pending.problems.length < this.#maxProblems) this.#pending.problems.push(problem);
  }

  #endFile(): void {
    const pending = this.#pending;
    const file = this.#file;
    // Not one record of the file verifies, and the file does not claim our key id: the wrong key.
    if (file !== undefined && pending.count > 0 && !pending.anyVerified && pending.declaredKeyId !== this.#keyId) {
      this.#wrongKey.push({ file: file.file, ...(pending.declaredKeyId !== undefined ? { keyId: pending.declaredKeyId } : {}), records: pending.count });
      this.#pending = { problems: [], count: 0, anyVerified: false, declaredKeyId: undefined };
    } else {
      this.#flushPending();
    }
    this.#pending = { problems: [], count: 0, anyVerified: false, declaredKeyId: undefined };
    const leftover = this.#leftover;
    if (leftover !== undefined) {
      this.#break({
        file: leftover.file,
        line: leftover.line,
        offset: leftover.offset,
        reason: `this line is ${leftover.why}, and no record after it accounts for it (junk appended, or a record damaged at the end of the file)`,
      });
      this.#leftover = undefined;
    }
  }

  push(entry: AuditLine): void {
    if (this.#file === undefined || this.#file.file !== entry.file) {
      this.#endFile();
      this.#file = { file: entry.file, records: 0, lines: 0 };
      this.#files.push(this.#file);
    }
    const file = this.#file;
    file.lines++;
    const where = { file: entry.file, line: entry.line, offset: entry.offset };
    if (!entry.terminated) {
      this.#endFile();
      this.#break({
        ...where,
        reason: `the file ends in the middle of a line (${entry.length} bytes with no line end): it was truncated mid-record, or a write was cut short and no writer has resumed the chain since`,
      });
      return;
    }
    // Most lines: an intact ordinary record, linked without parsing its JSON.
    const link = entry.overlong ? undefined : readVerifiedLink(this.#key, entry.bytes);
    if (link !== undefined) {
      if (!this.#pending.anyVerified) {
        this.#pending.anyVerified = true;
        this.#flushPending();
      }
      const leftover = this.#leftover;
      this.#leftover = undefined;
      if (leftover !== undefined) this.#unaccounted(leftover);
      this.#link(link.seq, link.prev, { ...where, seq: link.seq });
      this.#accept(link.seq, link.hash, file);
      return;
    }
    const parsed = entry.overlong ? ({ ok: false, why: `longer than any record (${entry.length} bytes)` } as const) : parseChainLine(this.#key, entry.bytes);
    if (!parsed.ok) {
      this.#leftover ??= { ...where, why: `not an audit record (${parsed.why})` };
      return;
    }
    const record = parsed.record;
    const at = { ...where, seq: record.seq };
    const leftover = this.#leftover;
    this.#leftover = undefined;
    const recovered = record.recovered as { offset?: unknown; bytes?: unknown } | undefined;
    if (typeof record.keyId === 'string') this.#pending.declaredKeyId ??= record.keyId;
    if (!parsed.macOk) {
      if (leftover !== undefined) this.#break({ ...leftover, reason: `this line is ${leftover.why}` });
      const keyNote =
        typeof record.keyId === 'string' && record.keyId !== this.#keyId
          ? `it was sealed under audit key id ${record.keyId}, but the key at hand has id ${this.#keyId}: verify with the key the log was written under`
          : 'it was edited, or forged by someone without the audit key';
      this.#macFailure({ ...at, reason: `its hash does not match its content: ${keyNote}` });
    } else {
      if (!this.#pending.anyVerified) {
        this.#pending.anyVerified = true;
        this.#flushPending();
      }
      if (leftover !== undefined) {
        const accounted =
          record.event === 'chain.resumed' &&
          recovered !== undefined &&
          recovered.offset === leftover.offset &&
          recovered.bytes === entry.offset - leftover.offset &&
          leftover.file === entry.file;
        if (accounted) {
          this.#notes.push({ file: leftover.file, line: leftover.line, offset: leftover.offset, reason: `${String(recovered.bytes)} bytes here are not a record (a write cut short by a crash); the writer set them aside in chain.resumed seq ${record.seq}` });
        } else {
          this.#unaccounted(leftover);
        }
      } else if (record.event === 'chain.resumed' && recovered !== undefined) {
        this.#break({ ...at, reason: `this chain.resumed record sets aside ${String(recovered.bytes)} bytes at offset ${String(recovered.offset)} that are not there (they were removed or the file was spliced)` });
      }
      this.#link(record.seq, record.prev, at);
    }
    this.#accept(record.seq, record.hash, file);
  }

  #unaccounted(leftover: Leftover): void {
    this.#break({ file: leftover.file, line: leftover.line, offset: leftover.offset, reason: `this line is ${leftover.why}, and no chain.resumed record accounts for it (inserted junk, or a damaged record)` });
  }

  #accept(seq: number, hash: string, file: VerifiedFile): void {
    this.#last = { seq, hash, file: file.file };
    this.#firstSeq ??= seq;
    this.#records++;
    file.records++;
    file.firstSeq ??= seq;
    file.lastSeq = seq;
  }

  #link(seq: number, prev: string, at: Omit<VerifyProblem, 'reason'>): void {
    const last = this.#last;
    if (last === undefined) {
      if (seq === 1) {
        if (prev !== GENESIS_HASH) this.#break({ ...at, reason: 'it is the first record of the chain (seq 1) but names a previous record' });
      } else if (this.#partial) {
        this.#notes.push({ ...at, reason: `the files start mid-chain at seq ${seq} (accepted with --partial: earlier records were not checked)` });
      } else {
        this.#break({
          ...at,
          reason: `the chain does not start here: seq ${seq} links to a record that is not in the files read (the first file of the set or the first records are missing); pass --partial if older files were archived on purpose`,
        });
      }
      return;
    }
    const expected = last.seq + 1;
    const otherFile = last.file !== at.file ? ` (at the start of ${at.file}: a file of the set may be missing)` : '';
    if (seq === expected) {
      if (prev !== last.hash) {
        this.#break({ ...at, reason: `it does not link to seq ${last.seq} before it (its prev is not that record's hash): a record was replaced or inserted before it` });
      }
    } else if (seq === 1 && prev === GENESIS_HASH) {
      this.#break({ ...at, reason: `a new chain starts here (seq 1) after seq ${last.seq}: the log was restarted (key or files replaced), so nothing vouches for the records before it` });
    } else if (seq > expected) {
      const missing = seq - expected === 1 ? `seq ${expected} is missing` : `seq ${expected} to ${seq - 1} are missing`;
      this.#break({ ...at, reason: `seq ${seq} follows seq ${last.seq}: ${missing} (records deleted or moved)${otherFile}` });
    } else {
      this.#break({ ...at, reason: `seq ${seq} comes after seq ${last.seq}: out of order (records moved, copied or replayed)${otherFile}` });
    }
  }

  finish(): VerifyResult {
    this.#endFile();
    // Failures held back until their file showed a verifying record join the list late: put it in file order again.
    const order = new Map(this.#files.map((file, index) => [file.file, index]));
    this.#breaks.sort((a, b) => (order.get(a.file) ?? 0) - (order.get(b.file) ?? 0) || a.line - b.line);
    return {
      ok: this.#breakCount === 0 && this.#wrongKey.length === 0 && this.#records > 0,
      keyId: this.#keyId,
      records: this.#records,
      ...(this.#firstSeq !== undefined ? { firstSeq: this.#firstSeq } : {}),
      ...(this.#last !== undefined ? { lastSeq: this.#last.seq, lastHash: this.#last.hash } : {}),
      files: this.#files,
      breaks: this.#breaks,
      breakCount: this.#breakCount,
      notes: this.#notes,
      wrongKey: this.#wrongKey,
    };
  }
}

/** Verify the chain through `files` (in chain order). */
export async function verifyAuditFiles(files: readonly string[], keys: AuditKeys, options: VerifyOptions = {}): Promise<VerifyResult> {
  const verifier = new ChainVerifier(keys, options);
  for await (const batch of readAuditBatches(files)) for (const line of batch) verifier.push(line);
  return verifier.finish();
}
