/*
 * Loading a policy file: read, validate against the schema, check what a schema cannot say
 * (check-file.ts), follow `extends` (cycles refused), merge (merge.ts), and compile into a frozen
 * EffectivePolicy (compile.ts).
 *
 * Every problem found is reported with its file, line, column and JSON path; a policy with any
 * problem does not load at all. Loading is synchronous so that a gateway can refuse to start
 * (fail closed) from its constructor.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { EffectivePolicy } from './effective';
import { checkFile } from './check-file';
import { compilePolicy } from './compile';
import { checkConflicts, mergeEntries, type FileEntry } from './merge';
import { createPolicyError, formatPath, type PathSegment, type PolicyErrorCode, type PolicyProblem } from './problems';
import { validateSource } from './schema';
import type { PolicyDocument } from './schema-def';
import { locate, readPolicySource, type PolicySource } from './source';

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
    // The schema has just said what it is.
    const doc = source.value as PolicyDocument;
    this.problems.push(...checkFile(source, doc));

    const targets = doc.extends === undefined ? [] : Array.isArray(doc.extends) ? doc.extends : [doc.extends];
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
