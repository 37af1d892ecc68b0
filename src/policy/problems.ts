/*
 * What is wrong with a policy file, in the form editors and CI annotate:
 * `FILE:LINE:COL: \`json.path\`: message`. Lines and columns count from 1.
 */
import { ExecgateError, type ErrorCode } from '../errors';

export type PolicyErrorCode = Extract<
  ErrorCode,
  | 'EXECGATE_ERR_POLICY_INVALID' | 'EXECGATE_ERR_POLICY_NOT_FOUND' | 'EXECGATE_ERR_POLICY_EXTENDS_CYCLE' | 'EXECGATE_ERR_POLICY_TOO_LARGE'
  | 'EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID' | 'EXECGATE_ERR_EGRESS_BIND_INVALID' | 'EXECGATE_ERR_EGRESS_UPSTREAM_INVALID' | 'EXECGATE_ERR_EGRESS_TCP_INVALID'
  | 'EXECGATE_ERR_POLICY_SOURCE_INVALID' | 'EXECGATE_ERR_SSH_HOST_KEY_INVALID'
>;

export interface PolicyProblem {
  readonly code: PolicyErrorCode;
  /** The file as the user named it (or as found through `extends`). */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** The JSON path of the offending value (`exec.modes.sync.timeout`, `rules.list[2].regex`), when there is one. */
  readonly path?: string;
  readonly message: string;
}

export type PathSegment = string | number;

/** `['rules', 'list', 2, 'regex']` -> `rules.list[2].regex`. */
export function formatPath(path: readonly PathSegment[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

export function formatProblem(problem: PolicyProblem): string {
  const where = `${problem.file}:${problem.line}:${problem.column}`;
  return problem.path ? `${where}: \`${problem.path}\`: ${problem.message}` : `${where}: ${problem.message}`;
}

/** One error for a policy that did not load, carrying every problem found. */
export function createPolicyError(file: string, problems: readonly PolicyProblem[]): ExecgateError {
  const first = problems[0];
  const lines = problems.map(formatProblem);
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more; \`execgate policy check ${file}\` lists them all)` : '';
  return new ExecgateError(first.code, `The policy ${file} was not loaded: ${lines[0]}${more}`, {
    file,
    problems: lines,
  });
}

/** How a value looks in a message: short, never a whole document. */
export function describeJson(value: unknown): string {
  if (value === null || value === undefined) return '`null` (nothing)';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string': {
      const text = value.length > 40 ? `${value.slice(0, 37)}...` : value;
      return `\`${JSON.stringify(text)}\` (string)`;
    }
    case 'number':
      return `\`${value}\` (${Number.isInteger(value) ? 'whole number' : 'number'})`;
    case 'boolean':
      return `\`${value}\` (boolean)`;
    case 'object':
      return 'a mapping';
    default:
      return `a ${typeof value}`;
  }
}

/** The closest candidate to a misspelled word, if one is close enough to be a likely typo. */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = candidate.toLowerCase() === lower ? 0 : editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const limit = word.length <= 3 ? 1 : word.length <= 6 ? 2 : 3;
  return bestDistance <= limit ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((d[i - 1])[j] + 1, (d[i])[j - 1] + 1, (d[i - 1])[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, (d[i - 2])[j - 2] + 1);
      (d[i])[j] = value;
    }
  }
  return (d[rows - 1])[cols - 1];
}

/** The value at `path` in a parsed policy document (undefined where the path leaves it). */
export function valueAt(root: unknown, path: readonly PathSegment[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}
