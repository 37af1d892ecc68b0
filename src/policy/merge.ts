/*
 * Layering: the files of an `extends` tree merged into one document, base first and each file on
 * top of what it extends, and the problems only the merged document shows (settings that
 * contradict each other across files, a secret bound twice, an id used twice).
 *
 *   - mappings merge key by key; a scalar replaces the one below;
 *   - lists that add restrictions accumulate: `rules.list`, `secrets.restrict`, `env.strip`,
 *     `env.secretNamePatterns`, `env.secretValuePatterns`, `sandbox.filesystem.hidden`,
 *     `sandbox.filesystem.readOnly` (a base's rules come first);
 *   - lists that grant something are replaced whole: `cwd.roots`, `env.allowlist`,
 *     `env.allowSecrets`, `secrets.allow`, `sandbox.filesystem.writable`.
 * Keys no file sets keep the embedded default.
 */
import { basename } from 'node:path';
import { DEFAULT_POLICY, EXEC_MODES } from './effective';
import { formatPath, type PathSegment, type PolicyProblem } from './problems';
import type { PolicyDocument } from './schema-def';
import { locate, type PolicySource } from './source';
import { formatDuration, parseDuration } from './units';

/*
 * The layers merged: each key as some file wrote it, with a file's own `version`, `extends` and
 * `$schema` left out (they are about that file).
 */
export type MergedDocument = Omit<PolicyDocument, 'version' | 'extends' | '$schema'>;

/* Merging itself walks any mapping, key by key. */
type Mapping = Record<string, unknown>;

/** One file of the tree, as read and validated. */
export interface FileEntry {
  readonly source: PolicySource;
  readonly doc: PolicyDocument;
  /** Position in merge order (bases first). */
  order: number;
}

const ACCUMULATED = new Set([
  'rules.list', 'secrets.restrict', 'secrets.bind', 'secrets.sources', 'env.strip', 'env.secretNamePatterns', 'env.secretValuePatterns',
  'sandbox.filesystem.hidden', 'sandbox.filesystem.readOnly', 'sandbox.network.deny',
]);

export interface ItemOrigin {
  readonly entry: FileEntry;
  readonly index: number;
}

export function mergeEntries(entries: readonly FileEntry[]): { merged: MergedDocument; origins: Map<string, FileEntry>; items: Map<object, ItemOrigin> } {
  // Valid layers merged key by key keep the shapes they have: a mapping of a mapping, a list of
  // the same items, a scalar where either file could have written one.
  const merged: MergedDocument = {};
  const origins = new Map<string, FileEntry>();
  const items = new Map<object, ItemOrigin>();
  for (const entry of entries) {
    for (const list of [entry.doc.rules?.list, entry.doc.secrets?.restrict, entry.doc.secrets?.bind, entry.doc.secrets?.sources]) {
      list?.forEach((item, index) => items.set(item, { entry, index }));
    }
    mergeInto(merged, entry.doc, [], entry, origins);
  }
  return { merged, origins, items };
}

function mergeInto(target: Mapping, source: Mapping, path: string[], entry: FileEntry, origins: Map<string, FileEntry>): void {
  for (const key of Object.keys(source)) {
    if (path.length === 0 && (key === 'extends' || key === '$schema' || key === 'version')) continue;
    const keyPath = [...path, key];
    const name = keyPath.join('.');
    const value = source[key];
    if (ACCUMULATED.has(name)) {
      const before = (target[key] as unknown[] | undefined) ?? [];
      const combined = [...before, ...(value as unknown[])];
      target[key] = name.startsWith('env.') || name.startsWith('sandbox.') ? [...new Set(combined)] : combined;
      origins.set(name, entry);
    } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      // A layer may replace a scalar with an object (`sandbox.network: none` -> `{mode: allowlist}`).
      const existing = target[key];
      const child = existing !== null && typeof existing === 'object' && !Array.isArray(existing) ? (existing as Mapping) : {};
      target[key] = child;
      mergeInto(child, value as Mapping, keyPath, entry, origins);
    } else {
      target[key] = value;
      origins.set(name, entry);
    }
  }
}

export function checkConflicts(merged: MergedDocument, origins: Map<string, FileEntry>, items: Map<object, ItemOrigin>): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  const report = (entry: FileEntry, path: PathSegment[], message: string): void => {
    const where = locate(entry.source, path);
    problems.push({ code: 'EXECGATE_ERR_POLICY_INVALID', file: entry.source.file, line: where.line, column: where.column, path: formatPath(path), message });
  };

  for (const mode of EXEC_MODES) {
    const base = ['exec', 'modes', mode];
    const { timeout, maxTimeout: max } = merged.exec?.modes?.[mode] ?? {};
    const timeoutMs = timeout === undefined ? DEFAULT_POLICY.modes[mode].defaultTimeout : parseDuration(timeout);
    const maxMs = max === undefined ? DEFAULT_POLICY.modes[mode].maxTimeout : parseDuration(max);
    if (maxMs > 0 && timeoutMs > maxMs) {
      const timeoutFrom = origins.get([...base, 'timeout'].join('.'));
      const maxFrom = origins.get([...base, 'maxTimeout'].join('.'));
      // Point at whichever of the two was set last (the file that made them contradict).
      const blameMax = maxFrom !== undefined && (timeoutFrom === undefined || maxFrom.order >= timeoutFrom.order);
      const entry = (blameMax ? maxFrom : timeoutFrom) as FileEntry;
      const other = (from: FileEntry | undefined): string => (from === undefined ? 'the embedded default' : from === entry ? 'this file' : from.source.file);
      report(
        entry,
        [...base, blameMax ? 'maxTimeout' : 'timeout'],
        `conflicting settings: \`timeout\` (${formatDuration(timeoutMs)}, from ${other(timeoutFrom)}) is longer than \`maxTimeout\` (${formatDuration(maxMs)}, from ${other(maxFrom)}); the default must not exceed the maximum`,
      );
    }
  }

  const envMode = merged.env?.mode ?? DEFAULT_POLICY.env.mode;
  const allowlist = merged.env?.allowlist;
  const listFrom = origins.get('env.allowlist');
  const modeFrom = origins.get('env.mode');
  if (envMode === 'inherit' && allowlist && allowlist.length > 0 && listFrom && (!modeFrom || listFrom.order > modeFrom.order)) {
    report(listFrom, ['env', 'allowlist'], 'has no effect: `env.mode` is `inherit`, which copies every variable; set `env.mode: allowlist` or remove the list');
  }

  const bound = new Map<string, ItemOrigin>();
  for (const item of merged.secrets?.bind ?? []) {
    const origin = items.get(item) as ItemOrigin;
    const previous = bound.get(item.ref);
    if (previous) {
      const where = locate(origin.entry.source, ['secrets', 'bind', origin.index, 'ref']);
      const first = previous.entry === origin.entry ? 'earlier in this file' : `in ${previous.entry.source.file}`;
      problems.push({
        code: 'EXECGATE_ERR_EGRESS_BIND_INVALID', file: origin.entry.source.file, line: where.line, column: where.column,
        path: formatPath(['secrets', 'bind', origin.index, 'ref']),
        message: `\`${item.ref}\` is already bound ${first}; list all its hosts in one entry`,
      });
    } else {
      bound.set(item.ref, origin);
    }
  }

  const named = new Map<string, ItemOrigin>();
  for (const item of merged.secrets?.sources ?? []) {
    const origin = items.get(item) as ItemOrigin;
    const previous = named.get(item.name);
    if (previous) {
      const where = locate(origin.entry.source, ['secrets', 'sources', origin.index, 'name']);
      const first = previous.entry === origin.entry ? 'earlier in this file' : `in ${previous.entry.source.file}`;
      problems.push({
        code: 'EXECGATE_ERR_POLICY_SOURCE_INVALID', file: origin.entry.source.file, line: where.line, column: where.column,
        path: formatPath(['secrets', 'sources', origin.index, 'name']),
        message: `a source named \`${item.name}\` is already defined ${first}; names must differ (they name the source in results and audit records)`,
      });
    } else {
      named.set(item.name, origin);
    }
  }

  const ids = new Map<string, { entry: FileEntry; path: PathSegment[] }>();
  const lists = [['rules.list', 'rules', merged.rules?.list], ['secrets.restrict', 'secrets', merged.secrets?.restrict]] as const;
  for (const [key, prefix, list = []] of lists) {
    for (const item of list) {
      const origin = items.get(item) as ItemOrigin;
      const id = getItemId(item, origin, key);
      const path: PathSegment[] = [prefix, key.split('.')[1], origin.index, ...(item.id !== undefined ? ['id'] : [])];
      const previous = ids.get(id);
      if (previous) {
        const where = previous.entry === origin.entry ? 'earlier in this file' : `in ${previous.entry.source.file}`;
        report(origin.entry, path, `duplicate id \`${id}\`: already used ${where} (${formatPath(previous.path)}); ids name one rule each in decisions and audit records`);
      } else {
        ids.set(id, { entry: origin.entry, path });
      }
    }
  }
  return problems;
}

export function getItemId(item: { readonly id?: string }, origin: ItemOrigin, key: string): string {
  if (item.id !== undefined) return item.id;
  const file = basename(origin.entry.source.absolute).replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[^A-Za-z0-9]+/, '') || 'policy';
  return `${file}:${key}[${origin.index}]`;
}
