/*
 * Loading a policy file: read, validate against the schema, check what a schema cannot say
 * (regular expressions compile, limits are in range, settings do not contradict each other),
 * follow `extends` (cycles refused), merge, and compile into a frozen EffectivePolicy.
 *
 * Every problem found is reported with its file, line, column and JSON path; a policy with any
 * problem does not load at all. Loading is synchronous so that a gateway can refuse to start
 * (fail closed) from its constructor.
 *
 * Merging, base first and each file on top of what it extends:
 *   - mappings merge key by key; a scalar replaces the one below;
 *   - lists that add restrictions accumulate: `rules.list`, `secrets.restrict`, `env.strip`,
 *     `env.secretNamePatterns`, `env.secretValuePatterns`, `sandbox.filesystem.hidden`,
 *     `sandbox.filesystem.readOnly` (a base's rules come first);
 *   - lists that grant something are replaced whole: `cwd.roots`, `env.allowlist`,
 *     `env.allowSecrets`, `secrets.allow`, `sandbox.filesystem.writable`.
 * Keys no file sets keep the embedded default.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { isExecgateError } from '../errors';
import { parseHostPattern } from '../egress/hosts';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../egress/rules';
import { RE2JS } from 're2js';
import { getHazardCategory } from '../env/hazards';
import { DEFAULT_POLICY, EXEC_MODES, deepFreeze, type CommandRule, type EffectivePolicy, type ExecMode, type SecretRestriction } from './effective';
import { toCommandWords, type CommandMatch } from './match';
import { createPolicyError, formatPath, type PathSegment, type PolicyErrorCode, type PolicyProblem } from './problems';
import { validateSource } from './schema';
import { locate, readPolicySource, type PolicySource } from './source';
import { MAX_DURATION_MS, formatDuration, parseDuration, parseSize } from './units';

export const SHIPPED_POLICIES_DIR = join(__dirname, '..', '..', 'policies');

/** At most this many files in one `extends` tree. */
export const MAX_POLICY_FILES = 32;

export interface LoadPolicyOptions {
  /** What `~` means in `cwd.roots` and `audit.path`; default the user's home directory. */
  readonly homeDir?: string;
  /** Relative file names are resolved (and shown) against this directory; default process.cwd(). */
  readonly cwd?: string;
}

/**
 * A policy file once loaded: the effective policy, every file read (bases first) and a digest
 * naming the version in force.
 */
export interface LoadedPolicy {
  readonly policy: EffectivePolicy;
  /** Absolute paths of every file read, bases first. */
  readonly files: readonly string[];
  /** SHA-256 over the files' contents: which version of the policy is in force. */
  readonly digest: string;
}

export type CheckResult =
  | { readonly ok: true; readonly loaded: LoadedPolicy; readonly problems: readonly [] }
  | { readonly ok: false; readonly problems: readonly PolicyProblem[]; readonly files: readonly string[] };

type Doc = Record<string, unknown>;

interface FileEntry {
  readonly source: PolicySource;
  readonly doc: Doc;
  /** Position in merge order (bases first). */
  order: number;
}

interface Via {
  readonly source: PolicySource;
  readonly path: PathSegment[];
}

/** Load and compile a policy file; throws an ExecgateError listing every problem when it is not valid. */
export function loadPolicyFile(file: string, options: LoadPolicyOptions = {}): LoadedPolicy {
  const result = checkPolicyFile(file, options);
  if (!result.ok) throw createPolicyError(file, result.problems);
  return result.loaded;
}

/** Like loadPolicyFile, but returns the problems instead of throwing. */
export function checkPolicyFile(file: string, options: LoadPolicyOptions = {}): CheckResult {
  const cwd = options.cwd ?? process.cwd();
  const loader = new Loader(cwd);
  const absolute = resolve(cwd, file);
  loader.visit(file, absolute, [], undefined);
  const files = loader.entries.map((entry) => entry.source.absolute);
  if (loader.problems.length > 0) return { ok: false, problems: sortProblems(loader.problems), files };
  const { merged, origins, items } = mergeEntries(loader.entries);
  const conflicts = checkConflicts(merged, origins, items);
  if (conflicts.length > 0) return { ok: false, problems: sortProblems(conflicts), files };
  const policy = compilePolicy(merged, items, absolute, options.homeDir ?? homedir());
  const digest = createHash('sha256');
  for (const entry of loader.entries) digest.update(`${entry.source.absolute}\0${entry.source.digest}\n`);
  return { ok: true, loaded: Object.freeze({ policy, files: Object.freeze(files), digest: digest.digest('hex') }), problems: [] };
}

function sortProblems(problems: PolicyProblem[]): PolicyProblem[] {
  // Keep files in the order they were read; positions in order within a file.
  const fileOrder = new Map<string, number>();
  for (const problem of problems) if (!fileOrder.has(problem.file)) fileOrder.set(problem.file, fileOrder.size);
  return [...problems].sort((a, b) => (fileOrder.get(a.file) as number) - (fileOrder.get(b.file) as number) || a.line - b.line || a.column - b.column);
}

class Loader {
  readonly entries: FileEntry[] = [];
  readonly problems: PolicyProblem[] = [];
  readonly #seen = new Set<string>();
  readonly #cwd: string;

  constructor(cwd: string) {
    this.#cwd = cwd;
  }

  #display(absolute: string): string {
    const rel = relative(this.#cwd, absolute);
    return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : absolute;
  }

  #at(via: Via, code: PolicyErrorCode, message: string): PolicyProblem {
    const where = locate(via.source, via.path);
    return { code, file: via.source.file, line: where.line, column: where.column, path: formatPath(via.path), message };
  }

  visit(file: string, absolute: string, stack: readonly string[], via: Via | undefined): void {
    // Files are identified by their real path, so a symlink cannot hide a cycle or a repeat.
    const identity = realpathOrSelf(absolute);
    if (stack.includes(identity)) {
      const chain = [...stack.slice(stack.indexOf(identity)), identity].map((path) => this.#display(path)).join(' -> ');
      this.problems.push(this.#at(via as Via, 'EXECGATE_ERR_POLICY_EXTENDS_CYCLE', `circular \`extends\`: ${chain}; a policy cannot extend itself`));
      return;
    }
    if (this.#seen.has(identity)) return; // reached twice through different bases: merged once
    if (this.#seen.size >= MAX_POLICY_FILES) {
      this.problems.push(this.#at(via as Via, 'EXECGATE_ERR_POLICY_INVALID', `more than ${MAX_POLICY_FILES} policy files in one \`extends\` tree`));
      return;
    }
    this.#seen.add(identity);

    const read = readPolicySource(file, absolute);
    if (!read.source) {
      if (via && read.problems[0]?.code === 'EXECGATE_ERR_POLICY_NOT_FOUND') {
        const why = read.problems[0].message.replace(/^cannot read the policy file: /, '');
        this.problems.push(this.#at(via, 'EXECGATE_ERR_POLICY_NOT_FOUND', `cannot read the extended policy \`${file}\` (${absolute}): ${why}`));
      } else {
        this.problems.push(...read.problems);
      }
      return;
    }
    const source = read.source;
    const schemaProblems = validateSource(source);
    if (schemaProblems.length > 0) {
      this.problems.push(...schemaProblems);
      return;
    }
    const doc = source.value as Doc;
    this.problems.push(...checkFile(source, doc));

    const targets = doc.extends === undefined ? [] : Array.isArray(doc.extends) ? (doc.extends as string[]) : [doc.extends as string];
    targets.forEach((target, index) => {
      const path: PathSegment[] = Array.isArray(doc.extends) ? ['extends', index] : ['extends'];
      const resolved = this.#resolveTarget(target, source, { source, path });
      if (resolved) this.visit(resolved.display, resolved.absolute, [...stack, identity], { source, path });
    });
    this.entries.push({ source, doc, order: this.entries.length });
  }

  #resolveTarget(target: string, from: PolicySource, via: Via): { display: string; absolute: string } | undefined {
    const shipped = /^execgate:(.*)$/.exec(target);
    if (shipped) {
      const name = shipped[1];
      const available = listShippedPolicies();
      if (!available.includes(name)) {
        this.problems.push(this.#at(via, 'EXECGATE_ERR_POLICY_NOT_FOUND', `no policy named \`${target}\` ships with execgate; shipped: ${available.map((n) => `\`execgate:${n}\``).join(', ')}`));
        return undefined;
      }
      const absolute = join(SHIPPED_POLICIES_DIR, `${name}.yaml`);
      return { display: target, absolute };
    }
    const absolute = resolve(dirname(from.absolute), target);
    return { display: this.#display(absolute), absolute };
  }
}

function realpathOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Names of the policies shipped in policies/ (`default`, `strict`, ...). */
export function listShippedPolicies(): string[] {
  try {
    return readdirSync(SHIPPED_POLICIES_DIR)
      .filter((name) => name.endsWith('.yaml'))
      .map((name) => name.slice(0, -'.yaml'.length))
      .sort();
  } catch {
    return [];
  }
}

export function getShippedPolicyPath(name: string): string | undefined {
  const path = join(SHIPPED_POLICIES_DIR, `${name}.yaml`);
  return /^[a-z0-9-]+$/.test(name) && existsSync(path) ? path : undefined;
}

// --- checks of one file ----------------------------------------------------------------------

const DURATION_PATHS: readonly PathSegment[][] = [
  ['exec', 'grace'],
  ['exec', 'drainTimeout'],
  ...EXEC_MODES.flatMap((mode): PathSegment[][] => [
    ['exec', 'modes', mode, 'timeout'],
    ['exec', 'modes', mode, 'maxTimeout'],
  ]),
];

const GIB = 1024 ** 3;
const SIZE_LIMITS: ReadonlyArray<readonly [PathSegment[], number, number]> = [
  [['exec', 'output', 'maxBytes'], 1024, GIB],
  [['exec', 'output', 'maxFileBytes'], 1024, Number.MAX_SAFE_INTEGER],
  [['exec', 'background', 'maxFileBytes'], 1024, Number.MAX_SAFE_INTEGER],
  [['exec', 'background', 'ringBytes'], 1024, GIB],
];

function get(doc: unknown, path: readonly PathSegment[]): unknown {
  let value = doc;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

function checkFile(source: PolicySource, doc: Doc): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  const report = (path: PathSegment[], message: string): void => {
    const where = locate(source, path);
    problems.push({ code: 'EXECGATE_ERR_POLICY_INVALID', file: source.file, line: where.line, column: where.column, path: formatPath(path), message });
  };

  for (const path of DURATION_PATHS) {
    const value = get(doc, path);
    if (value === undefined) continue;
    const ms = parseDuration(value as number | string) as number;
    if (ms > MAX_DURATION_MS) report(path, `expected at most ${MAX_DURATION_MS} ms (about 24.8 days, the longest timer Node.js keeps), got \`${String(value)}\``);
  }
  for (const [path, min, max] of SIZE_LIMITS) {
    const value = get(doc, path);
    if (value === undefined) continue;
    const bytes = parseSize(value as number | string) as number;
    if (bytes < min) report(path, `expected at least 1KiB (${min} bytes), got \`${String(value)}\``);
    else if (bytes > max) report(path, `expected at most ${max === GIB ? '1GiB' : `${max} bytes`}, got \`${String(value)}\``);
  }

  // Every sandboxed run gets a private, empty /tmp (sandbox/paths.ts): a writable root there
  // would hold nothing a run could see, and a run's cwd below it would not exist inside.
  for (const path of [['cwd', 'roots'], ['sandbox', 'filesystem', 'writable']]) {
    (get(doc, path) as unknown[] | undefined)?.forEach((entry, index) => {
      if (typeof entry === 'string' && /^\/tmp\/*$/.test(entry)) {
        report([...path, index], `\`${entry}\` cannot be writable: every sandboxed run gets a private, empty /tmp, so nothing of the host's would be there; name a directory inside it (\`/tmp/work\`, say), or leave it out (each run may write its own /tmp)`);
      }
    });
  }

  const regexes: Array<[PathSegment[], unknown]> = [];
  (get(doc, ['rules', 'list']) as Doc[] | undefined)?.forEach((rule, index) => {
    if (rule.regex !== undefined) regexes.push([['rules', 'list', index, 'regex'], rule.regex]);
  });
  (get(doc, ['secrets', 'restrict']) as Doc[] | undefined)?.forEach((restriction, index) => {
    if (restriction.regex !== undefined) regexes.push([['secrets', 'restrict', index, 'regex'], restriction.regex]);
  });
  for (const key of ['secretNamePatterns', 'secretValuePatterns']) {
    (get(doc, ['env', key]) as string[] | undefined)?.forEach((pattern, index) => regexes.push([['env', key, index], pattern]));
  }
  for (const [path, pattern] of regexes) {
    if (path[0] !== 'env') {
      // Command rules run on RE2 (linear time on agent-controlled text); it has no
      // backreferences or lookaround.
      try {
        RE2JS.compile(pattern as string);
      } catch (error) {
        report(path, `invalid regular expression (RE2 syntax, which runs in linear time): ${(error as Error).message.replace(/^error parsing regexp: /, '')}`);
      }
      continue;
    }
    try {
      new RegExp(pattern as string);
    } catch (error) {
      report(path, `invalid regular expression: ${(error as Error).message.replace(/^Invalid regular expression: /, '')}`);
    }
  }

  // Host patterns and bindings are checked here so that a typo is reported with its position and
  // its own code, not discovered when a run needs the network.
  const egressProblem = (path: PathSegment[], error: unknown): void => {
    const where = locate(source, path);
    const code = isExecgateError(error) && (error.code === 'EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID' || error.code === 'EXECGATE_ERR_EGRESS_BIND_INVALID' || error.code === 'EXECGATE_ERR_EGRESS_UPSTREAM_INVALID')
      ? error.code
      : 'EXECGATE_ERR_POLICY_INVALID';
    problems.push({ code, file: source.file, line: where.line, column: where.column, path: formatPath(path), message: (error as Error).message });
  };
  const upstream = get(doc, ['sandbox', 'network', 'upstream']);
  if (upstream !== undefined) {
    try {
      normalizeNetworkPolicy({ upstream });
    } catch (error) {
      egressProblem(['sandbox', 'network', 'upstream'], error);
    }
  }
  for (const key of ['allow', 'deny']) {
    (get(doc, ['sandbox', 'network', key]) as unknown[] | undefined)?.forEach((pattern, index) => {
      try {
        parseHostPattern(pattern, `sandbox.network.${key}[${index}]`);
      } catch (error) {
        egressProblem(['sandbox', 'network', key, index], error);
      }
    });
  }
  (get(doc, ['secrets', 'bind']) as Doc[] | undefined)?.forEach((binding, index) => {
    try {
      normalizeSecretBindings([binding]);
    } catch (error) {
      egressProblem(['secrets', 'bind', index], error);
    }
  });
  for (const name of Object.keys((get(doc, ['env', 'set']) as Record<string, string> | undefined) ?? {})) {
    const hazard = getHazardCategory(name);
    if (hazard) report(['env', 'set', name], `sets \`${name}\`, a variable execgate strips from every child (${hazard.why}); remove it, or run a command that sets it itself`);
  }

  const mode = get(doc, ['env', 'mode']);
  const allowlist = get(doc, ['env', 'allowlist']) as string[] | undefined;
  if (mode === 'inherit' && allowlist && allowlist.length > 0) {
    report(['env', 'allowlist'], 'has no effect with `env.mode: inherit` (set in the same file), which copies every variable; set `env.mode: allowlist` or remove the list');
  }
  return problems;
}

// --- merging ---------------------------------------------------------------------------------

const ACCUMULATED = new Set([
  'rules.list', 'secrets.restrict', 'secrets.bind', 'env.strip', 'env.secretNamePatterns', 'env.secretValuePatterns',
  'sandbox.filesystem.hidden', 'sandbox.filesystem.readOnly', 'sandbox.network.deny',
]);

interface ItemOrigin {
  readonly entry: FileEntry;
  readonly index: number;
}

function mergeEntries(entries: readonly FileEntry[]): { merged: Doc; origins: Map<string, FileEntry>; items: Map<object, ItemOrigin> } {
  const merged: Doc = {};
  const origins = new Map<string, FileEntry>();
  const items = new Map<object, ItemOrigin>();
  for (const entry of entries) {
    for (const key of ['rules.list', 'secrets.restrict', 'secrets.bind']) {
      (get(entry.doc, key.split('.')) as object[] | undefined)?.forEach((item, index) => items.set(item, { entry, index }));
    }
    mergeInto(merged, entry.doc, [], entry, origins);
  }
  return { merged, origins, items };
}

function mergeInto(target: Doc, source: Doc, path: string[], entry: FileEntry, origins: Map<string, FileEntry>): void {
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
      const child = existing !== null && typeof existing === 'object' && !Array.isArray(existing) ? (existing as Doc) : {};
      target[key] = child;
      mergeInto(child, value as Doc, keyPath, entry, origins);
    } else {
      target[key] = value;
      origins.set(name, entry);
    }
  }
}

function checkConflicts(merged: Doc, origins: Map<string, FileEntry>, items: Map<object, ItemOrigin>): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  const report = (entry: FileEntry, path: PathSegment[], message: string): void => {
    const where = locate(entry.source, path);
    problems.push({ code: 'EXECGATE_ERR_POLICY_INVALID', file: entry.source.file, line: where.line, column: where.column, path: formatPath(path), message });
  };

  for (const mode of EXEC_MODES) {
    const base = ['exec', 'modes', mode];
    const timeout = get(merged, [...base, 'timeout']);
    const max = get(merged, [...base, 'maxTimeout']);
    const timeoutMs = timeout === undefined ? DEFAULT_POLICY.modes[mode].defaultTimeout : (parseDuration(timeout as string | number) as number);
    const maxMs = max === undefined ? DEFAULT_POLICY.modes[mode].maxTimeout : (parseDuration(max as string | number) as number);
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

  const envMode = get(merged, ['env', 'mode']) ?? DEFAULT_POLICY.env.mode;
  const allowlist = get(merged, ['env', 'allowlist']) as string[] | undefined;
  const listFrom = origins.get('env.allowlist');
  const modeFrom = origins.get('env.mode');
  if (envMode === 'inherit' && allowlist && allowlist.length > 0 && listFrom && (!modeFrom || listFrom.order > modeFrom.order)) {
    report(listFrom, ['env', 'allowlist'], 'has no effect: `env.mode` is `inherit`, which copies every variable; set `env.mode: allowlist` or remove the list');
  }

  const bound = new Map<string, ItemOrigin>();
  for (const item of (get(merged, ['secrets', 'bind']) as Doc[] | undefined) ?? []) {
    const origin = items.get(item) as ItemOrigin;
    const previous = bound.get(item.ref as string);
    if (previous) {
      const where = locate(origin.entry.source, ['secrets', 'bind', origin.index, 'ref']);
      const first = previous.entry === origin.entry ? 'earlier in this file' : `in ${previous.entry.source.file}`;
      problems.push({
        code: 'EXECGATE_ERR_EGRESS_BIND_INVALID', file: origin.entry.source.file, line: where.line, column: where.column,
        path: formatPath(['secrets', 'bind', origin.index, 'ref']),
        message: `\`${String(item.ref)}\` is already bound ${first}; list all its hosts in one entry`,
      });
    } else {
      bound.set(item.ref as string, origin);
    }
  }

  const ids = new Map<string, { entry: FileEntry; path: PathSegment[] }>();
  for (const [key, prefix] of [['rules.list', 'rules'], ['secrets.restrict', 'secrets']] as const) {
    const list = (get(merged, key.split('.')) as Doc[] | undefined) ?? [];
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

function getItemId(item: Doc, origin: ItemOrigin, key: string): string {
  if (typeof item.id === 'string') return item.id;
  const file = basename(origin.entry.source.absolute).replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[^A-Za-z0-9]+/, '') || 'policy';
  return `${file}:${key}[${origin.index}]`;
}

// --- compiling -------------------------------------------------------------------------------

function compileMatch(item: Doc): CommandMatch {
  if (item.command !== undefined) {
    const commands = toCommandWords(item.command as string | string[]);
    return item.flags !== undefined ? { kind: 'command', commands, flags: [...(item.flags as string[])] } : { kind: 'command', commands };
  }
  if (item.prefix !== undefined) return { kind: 'prefix', prefixes: typeof item.prefix === 'string' ? [item.prefix] : [...(item.prefix as string[])] };
  return { kind: 'regex', regex: RE2JS.compile(item.regex as string), source: item.regex as string };
}

function expandHome(path: string, homeDir: string): string {
  if (path === '~') return homeDir;
  if (path.startsWith('~/')) return join(homeDir, path.slice(2));
  return resolve(path);
}

/** `~` forms stay as they are (expanded per run); anything else becomes a normalized absolute path. */
function keepHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? path : resolve(path);
}

function compilePolicy(doc: Doc, items: Map<object, ItemOrigin>, source: string, homeDir: string): EffectivePolicy {
  const D = DEFAULT_POLICY;
  const at = (path: string): unknown => get(doc, path.split('.'));
  const duration = (path: string, fallback: number): number => {
    const value = at(path);
    return value === undefined ? fallback : (parseDuration(value as string | number) as number);
  };
  const size = (path: string, fallback: number): number => {
    const value = at(path);
    return value === undefined ? fallback : (parseSize(value as string | number) as number);
  };
  const list = <T>(path: string, fallback: readonly T[]): T[] => [...((at(path) as T[] | undefined) ?? fallback)];

  const modes = {} as Record<ExecMode, EffectivePolicy['modes'][ExecMode]>;
  for (const mode of EXEC_MODES) {
    const maxTimeout = duration(`exec.modes.${mode}.maxTimeout`, D.modes[mode].maxTimeout);
    let defaultTimeout = duration(`exec.modes.${mode}.timeout`, D.modes[mode].defaultTimeout);
    // "No default" under a maximum means the maximum: a request that names no timeout must not
    // run longer than one that asks for the longest allowed.
    if (defaultTimeout === 0 && maxTimeout > 0) defaultTimeout = maxTimeout;
    modes[mode] = { allowed: (at(`exec.modes.${mode}.allowed`) as boolean | undefined) ?? D.modes[mode].allowed, defaultTimeout, maxTimeout };
  }

  const rules: CommandRule[] = ((at('rules.list') as Doc[] | undefined) ?? []).map((item) => ({
    id: getItemId(item, items.get(item) as ItemOrigin, 'rules.list'),
    action: item.action as 'allow' | 'deny',
    match: compileMatch(item),
    ...(item.reason !== undefined ? { reason: item.reason as string } : {}),
  }));
  const restrict: SecretRestriction[] = ((at('secrets.restrict') as Doc[] | undefined) ?? []).map((item) => ({
    id: getItemId(item, items.get(item) as ItemOrigin, 'secrets.restrict'),
    refs: typeof item.ref === 'string' ? [item.ref] : [...(item.ref as string[])],
    match: compileMatch(item),
    ...(item.reason !== undefined ? { reason: item.reason as string } : {}),
  }));

  const envPath = at('env.path') as string | undefined;
  const auditPath = at('audit.path') as string | undefined;
  const rulesReason = at('rules.reason') as string | undefined;

  const policy: EffectivePolicy = {
    source,
    modes,
    grace: duration('exec.grace', D.grace),
    drainTimeout: duration('exec.drainTimeout', D.drainTimeout),
    output: {
      maxBytes: size('exec.output.maxBytes', D.output.maxBytes),
      maxFileBytes: size('exec.output.maxFileBytes', D.output.maxFileBytes),
    },
    env: {
      mode: (at('env.mode') as 'inherit' | 'allowlist' | undefined) ?? D.env.mode,
      allowlist: list('env.allowlist', D.env.allowlist),
      allowSecrets: list('env.allowSecrets', D.env.allowSecrets),
      strip: list('env.strip', D.env.strip),
      secretNamePatterns: [...D.env.secretNamePatterns, ...list<string>('env.secretNamePatterns', []).map((p) => new RegExp(p))],
      secretValuePatterns: [...D.env.secretValuePatterns, ...list<string>('env.secretValuePatterns', []).map((p) => new RegExp(p))],
      set: { ...D.env.set, ...((at('env.set') as Record<string, string> | undefined) ?? {}) },
      ...(envPath !== undefined ? { path: envPath } : D.env.path !== undefined ? { path: D.env.path } : {}),
      ...(at('env.requestable') !== undefined ? { requestable: list<string>('env.requestable', []) } : {}),
    },
    background: {
      maxConcurrent: (at('exec.background.maxConcurrent') as number | undefined) ?? D.background.maxConcurrent,
      maxFileBytes: size('exec.background.maxFileBytes', D.background.maxFileBytes),
      ringBytes: size('exec.background.ringBytes', D.background.ringBytes),
      onClose: (at('exec.background.onClose') as 'kill' | 'keep' | undefined) ?? D.background.onClose,
    },
    secrets: {
      alias: (at('secrets.alias') as boolean | undefined) ?? D.secrets.alias,
      minLength: (at('secrets.minLength') as number | undefined) ?? D.secrets.minLength,
      allow: list('secrets.allow', D.secrets.allow),
      restrict,
      unknown: (at('secrets.unknown') as EffectivePolicy['secrets']['unknown'] | undefined) ?? D.secrets.unknown,
      bind: normalizeSecretBindings(at('secrets.bind')),
    },
    network: at('sandbox.network') === undefined
      ? D.network
      : normalizeNetworkPolicy(typeof at('sandbox.network') === 'string' ? { mode: at('sandbox.network') } : at('sandbox.network')),
    cwd: { roots: list<string>('cwd.roots', D.cwd.roots).map((root) => expandHome(root, homeDir)) },
    rules: {
      default: (at('rules.default') as 'allow' | 'deny' | undefined) ?? D.rules.default,
      uncertain: (at('rules.uncertain') as 'allow' | 'deny' | undefined) ?? D.rules.uncertain,
      ...(rulesReason !== undefined ? { reason: rulesReason } : {}),
      list: rules,
    },
    audit: {
      enabled: (at('audit.enabled') as boolean | undefined) ?? D.audit.enabled,
      ...(auditPath !== undefined ? { path: expandHome(auditPath, homeDir) } : {}),
      ...(at('audit.destination') !== undefined ? { destination: at('audit.destination') as 'file' | 'stdout' } : {}),
      ...(at('audit.maxBytes') !== undefined ? { maxBytes: size('audit.maxBytes', 0) } : {}),
      ...(at('audit.maxFiles') !== undefined ? { maxFiles: at('audit.maxFiles') as number } : {}),
      ...(at('audit.fsync') !== undefined ? { fsync: at('audit.fsync') as 'always' | 'before-spawn' | 'never' } : {}),
      fingerprints: (at('audit.fingerprints') as boolean | undefined) ?? D.audit.fingerprints,
      env: (at('audit.env') as boolean | undefined) ?? D.audit.env,
    },
    sandbox: {
      mode: (at('sandbox.mode') as 'required' | 'auto' | 'off' | undefined) ?? D.sandbox.mode,
      ...(at('sandbox.helper') !== undefined ? { helper: at('sandbox.helper') as string } : {}),
      // Every spelling means the private namespace: in `open` and `allowlist` the egress proxy is
      // the way out, so the host's loopback, its abstract sockets (a session bus) and the
      // gateway's own sockets stay out of reach whatever the mode.
      network: at('sandbox.network') === undefined ? D.sandbox.network : 'none',
      filesystem: {
        // The built-in credential list always applies; a policy adds to it. `~` is kept and
        // expanded when a run is planned, against the HOME of the gateway that runs it.
        hidden: [...new Set([...D.sandbox.filesystem.hidden, ...list<string>('sandbox.filesystem.hidden', []).map((p) => keepHome(p))])],
        writable: list<string>('sandbox.filesystem.writable', D.sandbox.filesystem.writable).map((p) => keepHome(p)),
        readOnly: list<string>('sandbox.filesystem.readOnly', D.sandbox.filesystem.readOnly).map((p) => keepHome(p)),
      },
    },
  };
  return deepFreeze(policy);
}
