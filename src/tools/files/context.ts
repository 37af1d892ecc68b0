/*
 * What every file tool shares: the roots it is confined to and its limits. Defaults are applied
 * once here; each limit is validated by the module that owns the option.
 */
import { ExecgateError, describeValue } from '../../errors';
import { FileRoots } from './roots';

/**
 * Limits of the file tools: sizes read and written, entries listed, files searched.
 */
export interface FileToolLimits {
  /** Largest file `read_file` returns (bytes; default 1 MiB). */
  readonly maxReadBytes: number;
  /** Largest content `write_file` writes (bytes; default 1 MiB). */
  readonly maxWriteBytes: number;
  /** Most entries `list_dir` shows (default 1000). */
  readonly maxListEntries: number;
  /** Most files `search_text` reads (default 5000). */
  readonly maxSearchFiles: number;
  /** Most matching lines `search_text` reports (default 200). */
  readonly maxSearchMatches: number;
  /** Files larger than this are skipped by `search_text` (bytes; default 1 MiB). */
  readonly maxSearchFileBytes: number;
  /** Characters of each line `search_text` matches against (default 10000). */
  readonly maxLineLength: number;
  /** Time one `search_text` call may spend matching, in ms (default 5000). */
  readonly searchTimeout: number;
  /** Most paths `search_files` reports (default 1000). */
  readonly maxGlobResults: number;
  /** Most directory entries a search visits (default 50000). */
  readonly maxWalkEntries: number;
}

/**
 * The file tools' default limits.
 */
export const DEFAULT_FILE_LIMITS: FileToolLimits = Object.freeze({
  maxReadBytes: 1024 * 1024,
  maxWriteBytes: 1024 * 1024,
  maxListEntries: 1000,
  maxSearchFiles: 5000,
  maxSearchMatches: 200,
  maxSearchFileBytes: 1024 * 1024,
  maxLineLength: 10_000,
  searchTimeout: 5000,
  maxGlobResults: 1000,
  maxWalkEntries: 50_000,
});

/** Directories the searches do not descend into unless asked to search inside them. */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set(['.git', 'node_modules']);

/** Where the file operations run when not in this process (sandboxed.ts). */
export interface FileHost {
  /** Runs the tool `name` there; resolves to its text, rejects with its coded error. */
  call(name: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export interface FileToolContext {
  readonly roots: FileRoots;
  readonly limits: FileToolLimits;
  /** Set: the operations run in the host (inside the sandbox), not in this process. */
  readonly host?: FileHost;
}

export function createFileToolContext(roots: readonly string[], limits: Partial<FileToolLimits> = {}, base?: string, host?: FileHost): FileToolContext {
  const merged: Record<string, number> = { ...DEFAULT_FILE_LIMITS };
  for (const [name, value] of Object.entries(limits)) {
    if (value === undefined) continue;
    if (!(name in DEFAULT_FILE_LIMITS)) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Unknown file tool limit \`${name}\`. Known limits: ${Object.keys(DEFAULT_FILE_LIMITS).join(', ')}.`, { option: name });
    }
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', `Expected the \`${name}\` limit to be a positive integer, got ${describeValue(value)}.`, { option: name });
    }
    merged[name] = value;
  }
  return Object.freeze({ roots: new FileRoots(roots, base), limits: Object.freeze(merged) as unknown as FileToolLimits, ...(host ? { host } : {}) });
}
