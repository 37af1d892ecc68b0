/*
 * The policy decision for one request, made on the unresolved command and the references it
 * names, before any value is resolved or anything spawns. In order:
 *   1. the mode must be allowed;
 *   2. the working directory (symlinks resolved) must be inside a root, when roots are set;
 *   3. the first command rule that matches decides, else `rules.default`;
 *   4. every reference must be allowed, and meet every restriction that applies to it.
 * A text that sets a variable steering which program runs or what it loads (`PATH=. git`) is
 * matched by no word-form allow rule and by no restriction (steering.ts).
 * The first check that fails is the decision, with the rule that made it and a reason for the
 * caller. Matching shell text is defence in depth, not a sandbox (see SECURITY.md).
 */
import { getEnvSecretName } from '../refs/sources/env';
import type { RefToken } from '../refs/types';
import type { EffectivePolicy, ExecMode } from './effective';
import { readShell, type ShellAnalysis } from '../shell';
import { describeMatch, matchesAny, matchesEvery } from './match';
import { locateInRoots } from './roots';
import { findUnsafeLookup } from './program-path';
import { describeSteering, findSteering } from './steering';

export interface Decision {
  readonly allowed: boolean;
  /** The rule that decided (its id, or the policy key for built-in checks). */
  readonly rule?: string;
  /** Why, in words the caller is shown. */
  readonly reason?: string;
}

/** The parts of a request a decision reads. */
/** What the decision reads of a request (plan/options.ts normalizes it). */
export interface DecisionInput {
  readonly command: string;
  readonly mode: ExecMode;
  readonly cwd: string;
}

const allow = (rule: string, reason: string): Decision => Object.freeze({ allowed: true, rule, reason });
const deny = (rule: string, reason: string): Decision => Object.freeze({ allowed: false, rule, reason });

/**
 * Decide on `request`. `analysis` is the shell reader's analysis of the command with `tokens`
 * (made here when not given); the same analysis places the tokens for substitution.
 */
export function decideRequest(policy: EffectivePolicy, request: DecisionInput, tokens: readonly RefToken[], analysis?: ShellAnalysis): Decision {
  const { command, mode } = request;
  if (!policy.modes[mode].allowed) {
    return deny(`exec.modes.${mode}.allowed`, `the \`${mode}\` mode is turned off by the policy`);
  }

  if (policy.cwd.roots.length > 0) {
    const { real: cwd, inside } = locateInRoots(request.cwd, policy.cwd.roots);
    if (!inside) {
      return deny('cwd.roots', `the working directory \`${cwd ?? request.cwd}\` is outside the directories this policy allows (${policy.cwd.roots.map((root) => `\`${root}\``).join(', ')})`);
    }
  }

  let parsed: ShellAnalysis | undefined = analysis;
  const getParsed = (): ShellAnalysis => (parsed ??= readShell(command, tokens));

  if (policy.rules.uncertain === 'deny') {
    const [first] = getParsed().uncertain;
    if (first) {
      return deny('rules.uncertain', `the command text cannot be read with confidence (${first.reason}), and the policy refuses such text; write the command so that its command names and code are static`);
    }
  }

  let steering: ReturnType<typeof findSteering> | null = null;
  const getSteering = (): ReturnType<typeof findSteering> => (steering === null ? (steering = findSteering(getParsed(), policy.env.strip)) : steering);

  let decision: Decision | undefined;
  // An allow rule that matched the words but not the variables the text sets: named in the denial.
  let steered: string | undefined;
  for (const rule of policy.rules.list) {
    if (rule.action === 'deny') {
      if (matchesAny(rule.match, command, getParsed())) {
        return deny(rule.id, rule.reason ?? `the command matches deny rule \`${rule.id}\` (${describeMatch(rule.match)})`);
      }
    } else if (matchesEvery(rule.match, command, getParsed())) {
      // A regex rule reads the whole text, assignments included: its author decided on them.
      const variable = rule.match.kind === 'regex' ? undefined : getSteering();
      if (variable) {
        steered ??= `rule \`${rule.id}\` matches its commands, but the text ${describeSteering(variable)}, which can make them run other code`;
        continue;
      }
      decision = allow(rule.id, rule.reason ?? `allowed by rule \`${rule.id}\` (${describeMatch(rule.match)})`);
      break;
    }
  }
  if (!decision) {
    if (policy.rules.default === 'deny') {
      return deny('rules.default', steered ? `${steered}; no other rule allows it, and the policy denies by default` : policy.rules.reason ?? 'no rule of the policy allows this command, and the policy denies by default');
    }
    decision = allow('rules.default', 'no rule matched; the policy allows by default');
  }

  for (const token of tokens) {
    const ref = `${token.kind}:${token.id}`;
    if (!policy.secrets.allow.some((pattern) => matchesRef(pattern, ref))) {
      return deny('secrets.allow', `${token.raw} is not a reference this policy allows`);
    }
    // Another spelling of a bound secret's name would read the same variable unbound.
    const bound = policy.secrets.bind.find((binding) => binding.ref !== ref && getSpelling(binding.ref) === getSpelling(ref));
    if (bound) {
      return deny('secrets.bind', `${token.raw} names the same secret as <<${bound.ref}>>, which \`secrets.bind\` binds to hosts; write it <<${bound.ref}>> so that the binding applies`);
    }
    for (const restriction of policy.secrets.restrict) {
      if (!restricts(restriction, ref)) continue;
      if (!matchesEvery(restriction.match, command, getParsed())) {
        const rule = `\`${restriction.id}\``;
        return deny(
          restriction.id,
          restriction.reason
            ? `${restriction.reason} (${token.raw}, rule ${rule})`
            : `${token.raw} may only be used in commands matching ${describeMatch(restriction.match)}, and every command in this text must`,
        );
      }
      const variable = getSteering();
      if (variable) {
        return deny(
          restriction.id,
          `${token.raw} is restricted (rule \`${restriction.id}\`), and the text ${describeSteering(variable)}, which can make the command it allows run other code; ` +
            'a restricted secret\'s command may not set PATH, HOME, XDG_*, GIT_* or any variable on the hazard list',
        );
      }
    }
  }
  return decision;
}

/** Whether `restriction` applies to `ref`, in any spelling the environment source reads as the same secret. */
function restricts(restriction: EffectivePolicy['secrets']['restrict'][number], ref: string): boolean {
  return restriction.refs.some((pattern) => matchesRef(pattern, ref) || matchesRef(getSpelling(pattern), getSpelling(ref)));
}

/**
 * The part of the decision that needs the run's plan: a restricted secret's command must not
 * reach its program through a PATH entry that is relative or writable by the run
 * (program-path.ts). `path` is the child's PATH; `isWritable` says what the run can write.
 */
export function decideProgramLookup(policy: EffectivePolicy, tokens: readonly RefToken[], analysis: ShellAnalysis, path: string | undefined, isWritable: (directory: string) => boolean): Decision | undefined {
  const token = tokens.find((each) => policy.secrets.restrict.some((restriction) => restricts(restriction, `${each.kind}:${each.id}`)));
  if (!token) return undefined;
  const programs = analysis.commands.flatMap((simple) => (simple.words[0] && !simple.words[0].dynamic ? [simple.words[0].text] : []));
  const unsafe = findUnsafeLookup(programs, path, isWritable);
  if (!unsafe) return undefined;
  const restriction = policy.secrets.restrict.find((each) => restricts(each, `${token.kind}:${token.id}`))!;
  const entry = unsafe.entry === '' ? 'an empty entry (the working directory)' : `\`${unsafe.entry}\``;
  return deny(
    restriction.id,
    `${token.raw} is restricted (rule \`${restriction.id}\`), and \`${unsafe.program}\` would be looked up through PATH ${entry}, which is ${unsafe.why === 'relative' ? 'relative' : 'writable by the run'}: ` +
      'a program an earlier run put there would get the secret. Set `env.path` in the policy to directories runs cannot write, or name the program by its absolute path',
  );
}

/*
 * The environment source reads `secret:github-token`, `secret:GITHUB_TOKEN` and
 * `secret:github.token` from one variable (EXECGATE_SECRET_GITHUB_TOKEN): a restriction applies
 * to every spelling of the names it lists, and a bound secret must be written as its binding
 * spells it. `*` in a pattern is kept.
 */
function getSpelling(ref: string): string {
  return ref.startsWith('secret:') ? `secret:${getEnvSecretName(ref.slice(7))}` : ref;
}

const refPatterns = new Map<string, RegExp>();

/** `secret:ci/*` against `secret:ci/deploy-key`: `*` matches any characters, all else literally. */
export function matchesRef(pattern: string, ref: string): boolean {
  let regex = refPatterns.get(pattern);
  if (!regex) {
    regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('.*')}$`);
    if (refPatterns.size < 1024) refPatterns.set(pattern, regex);
  }
  return regex.test(ref);
}
