/*
 * The checks of one policy file that its schema cannot say: durations and sizes within the limits
 * execgate can keep, no writable /tmp, regular expressions that compile, host patterns and secret
 * bindings that parse, no hazardous variable set, no allowlist that an `inherit` mode in the same
 * file ignores. Each problem is positioned at the value it is about.
 */
import { ExecgateError, isExecgateError } from '../errors';
import { parseHostPattern } from '../egress/hosts';
import { getHazardCategory } from '../env/hazards';
import { normalizeHostServices, normalizeNetworkPolicy, normalizeSecretBindings, normalizeTcp } from './egress-settings';
import { EXEC_MODES } from './effective';
import { normalizeSecretSources } from './source-settings';
import { formatPath, valueAt, type PathSegment, type PolicyProblem } from './problems';
import type { DurationDocument, PolicyDocument, SizeDocument } from './schema-def';
import { compileRe2 } from './match';
import { locate, type PolicySource } from './source';
import { MAX_DURATION_MS, parseDuration, parseSize } from './units';

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

export function checkFile(source: PolicySource, doc: PolicyDocument): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  const report = (path: PathSegment[], message: string): void => {
    const where = locate(source, path);
    problems.push({ code: 'EXECGATE_ERR_POLICY_INVALID', file: source.file, line: where.line, column: where.column, path: formatPath(path), message });
  };

  // The schema bounds plain milliseconds; a duration with a unit (`30d`) is a number only once
  // parsed.
  for (const path of DURATION_PATHS) {
    const value = valueAt(doc, path) as DurationDocument | undefined;
    if (value === undefined) continue;
    const ms = parseDuration(value);
    if (ms > MAX_DURATION_MS) report(path, `expected at most ${MAX_DURATION_MS} ms (about 24.8 days, the longest timer Node.js keeps), got \`${String(value)}\``);
  }
  // The schema says how a size is spelt; the limits (at least 1KiB, some at most 1GiB) are
  // execgate's, in bytes.
  for (const [path, min, max] of SIZE_LIMITS) {
    const value = valueAt(doc, path) as SizeDocument | undefined;
    if (value === undefined) continue;
    const bytes = parseSize(value);
    if (bytes < min) report(path, `expected at least 1KiB (${min} bytes), got \`${String(value)}\``);
    else if (bytes > max) report(path, `expected at most ${max === GIB ? '1GiB' : `${max} bytes`}, got \`${String(value)}\``);
  }

  // Every sandboxed run gets a private, empty /tmp (sandbox/paths.ts): a writable root there
  // would hold nothing a run could see, and a run's cwd below it would not exist inside.
  const writable: Array<[PathSegment[], readonly string[] | undefined]> = [
    [['cwd', 'roots'], doc.cwd?.roots],
    [['sandbox', 'filesystem', 'writable'], doc.sandbox?.filesystem?.writable],
  ];
  for (const [path, entries] of writable) {
    entries?.forEach((entry, index) => {
      if (/^\/tmp\/*$/.test(entry)) {
        report([...path, index], `\`${entry}\` cannot be writable: every sandboxed run gets a private, empty /tmp, so nothing of the host's would be there; name a directory inside it (\`/tmp/work\`, say), or leave it out (each run may write its own /tmp)`);
      }
    });
  }

  // A pattern must compile, in the engine that runs it: no schema keyword says so.
  const regexes: Array<[PathSegment[], string]> = [];
  doc.rules?.list?.forEach((rule, index) => {
    if (rule.regex !== undefined) regexes.push([['rules', 'list', index, 'regex'], rule.regex]);
  });
  doc.secrets?.restrict?.forEach((restriction, index) => {
    if (restriction.regex !== undefined) regexes.push([['secrets', 'restrict', index, 'regex'], restriction.regex]);
  });
  for (const key of ['secretNamePatterns', 'secretValuePatterns'] as const) {
    doc.env?.[key]?.forEach((pattern, index) => regexes.push([['env', key, index], pattern]));
  }
  for (const [path, pattern] of regexes) {
    if (path[0] !== 'env') {
      // Command rules run on RE2 (linear time on agent-controlled text); it has no
      // backreferences or lookaround.
      try {
        compileRe2(pattern);
      } catch (error) {
        report(path, `invalid regular expression (RE2 syntax, which runs in linear time): ${(error as Error).message.replace(/^error parsing regexp: /, '')}`);
      }
      continue;
    }
    try {
      new RegExp(pattern);
    } catch (error) {
      report(path, `invalid regular expression: ${(error as Error).message.replace(/^Invalid regular expression: /, '')}`);
    }
  }

  // Host patterns and bindings are checked here so that a typo is reported with its position and
  // its own code, not discovered when a run needs the network.
  const egressProblem = (path: PathSegment[], error: unknown): void => {
    const where = locate(source, path);
    const code = isExecgateError(error) && (error.code === 'EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID' || error.code === 'EXECGATE_ERR_EGRESS_BIND_INVALID' || error.code === 'EXECGATE_ERR_EGRESS_UPSTREAM_INVALID' || error.code === 'EXECGATE_ERR_EGRESS_TCP_INVALID' || error.code === 'EXECGATE_ERR_SSH_HOST_KEY_INVALID')
      ? error.code
      : 'EXECGATE_ERR_POLICY_INVALID';
    problems.push({ code, file: source.file, line: where.line, column: where.column, path: formatPath(path), message: (error as Error).message });
  };
  const network = typeof doc.sandbox?.network === 'object' ? doc.sandbox.network : undefined;
  const upstream = network?.upstream;
  if (upstream !== undefined) {
    try {
      normalizeNetworkPolicy({ upstream });
    } catch (error) {
      egressProblem(['sandbox', 'network', 'upstream'], error);
    }
  }
  // Raw TCP destinations and host services, each with its position (`mode: none` at the list).
  const networkMode = typeof doc.sandbox?.network === 'string' ? doc.sandbox.network : network?.mode;
  network?.tcp?.forEach((entry, index) => {
    try {
      normalizeTcp([entry], 'allowlist', index);
    } catch (error) {
      egressProblem(['sandbox', 'network', 'tcp', index], error);
    }
  });
  network?.hostServices?.forEach((entry, index) => {
    try {
      normalizeHostServices([entry], 'allowlist', index);
    } catch (error) {
      egressProblem(typeof entry === 'object' ? ['sandbox', 'network', 'hostServices', index, 'unix'] : ['sandbox', 'network', 'hostServices', index], error);
    }
  });
  for (const key of ['tcp', 'hostServices'] as const) {
    if (networkMode === 'none' && (network?.[key]?.length ?? 0) > 0) {
      egressProblem(['sandbox', 'network', key], new ExecgateError('EXECGATE_ERR_EGRESS_TCP_INVALID', `\`sandbox.network.${key}\` is set with \`mode: none\`, where nothing leaves a run; remove it, or choose \`mode: allowlist\`.`));
    }
  }
  for (const key of ['allow', 'deny'] as const) {
    network?.[key]?.forEach((pattern, index) => {
      try {
        parseHostPattern(pattern, `sandbox.network.${key}[${index}]`);
      } catch (error) {
        egressProblem(['sandbox', 'network', key, index], error);
      }
    });
  }
  doc.secrets?.bind?.forEach((binding, index) => {
    try {
      normalizeSecretBindings([binding]);
    } catch (error) {
      egressProblem(['secrets', 'bind', index], error);
    }
  });
  // The hazard list is execgate's own (env/hazards.ts), not the file format's.
  for (const name of Object.keys(doc.env?.set ?? {})) {
    const hazard = getHazardCategory(name);
    if (hazard) report(['env', 'set', name], `sets \`${name}\`, a variable execgate strips from every child (${hazard.why}); remove it, or run a command that sets it itself`);
  }

  doc.secrets?.sources?.forEach((entry, index) => {
    try {
      normalizeSecretSources([entry]);
    } catch (error) {
      const where = locate(source, ['secrets', 'sources', index]);
      const code = isExecgateError(error) && error.code === 'EXECGATE_ERR_POLICY_SOURCE_INVALID' ? error.code : 'EXECGATE_ERR_POLICY_INVALID';
      problems.push({ code, file: source.file, line: where.line, column: where.column, path: formatPath(['secrets', 'sources', index]), message: (error as Error).message });
    }
  });

  // Two keys that contradict each other: a message must say which one wins and what to change.
  const { mode, allowlist } = doc.env ?? {};
  if (mode === 'inherit' && allowlist && allowlist.length > 0) {
    report(['env', 'allowlist'], 'has no effect with `env.mode: inherit` (set in the same file), which copies every variable; set `env.mode: allowlist` or remove the list');
  }
  return problems;
}
