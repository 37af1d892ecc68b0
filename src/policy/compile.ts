/*
 * The merged document compiled into the frozen EffectivePolicy the gateway reads: defaults
 * filled in, durations and sizes in numbers, `~` expanded where the value is a path of this
 * host, rules' patterns compiled, host patterns and bindings parsed.
 */
import { join, resolve } from 'node:path';
import { normalizeNetworkPolicy, normalizeSecretBindings } from './egress-settings';
import { DEFAULT_POLICY, EXEC_MODES, deepFreeze, type CommandRule, type EffectivePolicy, type ExecMode, type SecretRestriction } from './effective';
import { compileRe2, toCommandWords, type CommandMatch } from './match';
import { normalizeSecretSources } from './source-settings';
import { getItemId, type ItemOrigin, type MergedDocument } from './merge';
import type { DurationDocument, RestrictionDocument, RuleDocument, SizeDocument } from './schema-def';
import { parseDuration, parseSize } from './units';

/* The schema lets an entry have exactly one of `command`, `prefix`, `regex`. */
function compileMatch(item: RuleDocument | RestrictionDocument): CommandMatch {
  if (item.command !== undefined) {
    const commands = toCommandWords(item.command);
    return item.flags !== undefined ? { kind: 'command', commands, flags: [...item.flags] } : { kind: 'command', commands };
  }
  if (item.prefix !== undefined) return { kind: 'prefix', prefixes: typeof item.prefix === 'string' ? [item.prefix] : [...item.prefix] };
  const regex = item.regex as string;
  return { kind: 'regex', regex: compileRe2(regex), source: regex };
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

export function compilePolicy(doc: MergedDocument, items: Map<object, ItemOrigin>, source: string, homeDir: string): EffectivePolicy {
  const D = DEFAULT_POLICY;
  const { exec = {}, env = {}, secrets = {}, rules: ruleSection = {}, audit = {}, sandbox = {} } = doc;
  const duration = (value: DurationDocument | undefined, fallback: number): number => (value === undefined ? fallback : parseDuration(value));
  const size = (value: SizeDocument | undefined, fallback: number): number => (value === undefined ? fallback : parseSize(value));
  const list = <T>(value: readonly T[] | undefined, fallback: readonly T[]): T[] => [...(value ?? fallback)];

  const modes = {} as Record<ExecMode, EffectivePolicy['modes'][ExecMode]>;
  for (const mode of EXEC_MODES) {
    const written = exec.modes?.[mode] ?? {};
    const maxTimeout = duration(written.maxTimeout, D.modes[mode].maxTimeout);
    let defaultTimeout = duration(written.timeout, D.modes[mode].defaultTimeout);
    // "No default" under a maximum means the maximum: a request that names no timeout must not
    // run longer than one that asks for the longest allowed.
    if (defaultTimeout === 0 && maxTimeout > 0) defaultTimeout = maxTimeout;
    modes[mode] = { allowed: written.allowed ?? D.modes[mode].allowed, defaultTimeout, maxTimeout };
  }

  const rules: CommandRule[] = (ruleSection.list ?? []).map((item) => ({
    id: getItemId(item, items.get(item) as ItemOrigin, 'rules.list'),
    action: item.action,
    match: compileMatch(item),
    ...(item.reason !== undefined ? { reason: item.reason } : {}),
  }));
  const restrict: SecretRestriction[] = (secrets.restrict ?? []).map((item) => ({
    id: getItemId(item, items.get(item) as ItemOrigin, 'secrets.restrict'),
    refs: typeof item.ref === 'string' ? [item.ref] : [...item.ref],
    match: compileMatch(item),
    ...(item.reason !== undefined ? { reason: item.reason } : {}),
  }));

  const network = sandbox.network;

  const policy: EffectivePolicy = {
    source,
    modes,
    grace: duration(exec.grace, D.grace),
    drainTimeout: duration(exec.drainTimeout, D.drainTimeout),
    output: {
      maxBytes: size(exec.output?.maxBytes, D.output.maxBytes),
      maxFileBytes: size(exec.output?.maxFileBytes, D.output.maxFileBytes),
    },
    env: {
      mode: env.mode ?? D.env.mode,
      allowlist: list(env.allowlist, D.env.allowlist),
      allowSecrets: list(env.allowSecrets, D.env.allowSecrets),
      strip: list(env.strip, D.env.strip),
      secretNamePatterns: [...D.env.secretNamePatterns, ...list(env.secretNamePatterns, []).map((p) => new RegExp(p))],
      secretValuePatterns: [...D.env.secretValuePatterns, ...list(env.secretValuePatterns, []).map((p) => new RegExp(p))],
      set: { ...D.env.set, ...(env.set ?? {}) },
      ...(env.path !== undefined ? { path: env.path } : D.env.path !== undefined ? { path: D.env.path } : {}),
      ...(env.requestable !== undefined ? { requestable: list(env.requestable, []) } : {}),
    },
    background: {
      maxConcurrent: exec.background?.maxConcurrent ?? D.background.maxConcurrent,
      maxFileBytes: size(exec.background?.maxFileBytes, D.background.maxFileBytes),
      ringBytes: size(exec.background?.ringBytes, D.background.ringBytes),
      onClose: exec.background?.onClose ?? D.background.onClose,
    },
    secrets: {
      alias: secrets.alias ?? D.secrets.alias,
      minLength: secrets.minLength ?? D.secrets.minLength,
      allow: list(secrets.allow, D.secrets.allow),
      restrict,
      unknown: secrets.unknown ?? D.secrets.unknown,
      bind: normalizeSecretBindings(secrets.bind),
      sources: normalizeSecretSources(secrets.sources),
    },
    network: network === undefined
      ? D.network
      : normalizeNetworkPolicy(typeof network === 'string' ? { mode: network } : network),
    cwd: { roots: list(doc.cwd?.roots, D.cwd.roots).map((root) => expandHome(root, homeDir)) },
    rules: {
      default: ruleSection.default ?? D.rules.default,
      uncertain: ruleSection.uncertain ?? D.rules.uncertain,
      ...(ruleSection.reason !== undefined ? { reason: ruleSection.reason } : {}),
      list: rules,
    },
    audit: {
      enabled: audit.enabled ?? D.audit.enabled,
      ...(audit.path !== undefined ? { path: expandHome(audit.path, homeDir) } : {}),
      ...(audit.destination !== undefined ? { destination: audit.destination } : {}),
      ...(audit.maxBytes !== undefined ? { maxBytes: size(audit.maxBytes, 0) } : {}),
      ...(audit.maxFiles !== undefined ? { maxFiles: audit.maxFiles } : {}),
      ...(audit.fsync !== undefined ? { fsync: audit.fsync } : {}),
      fingerprints: audit.fingerprints ?? D.audit.fingerprints,
      env: audit.env ?? D.audit.env,
    },
    sandbox: {
      mode: sandbox.mode ?? D.sandbox.mode,
      ...(sandbox.helper !== undefined ? { helper: sandbox.helper } : {}),
      // Every spelling means the private namespace: in `open` and `allowlist` the egress proxy is
      // the way out, so the host's loopback, its abstract sockets (a session bus) and the
      // gateway's own sockets stay out of reach whatever the mode.
      network: network === undefined ? D.sandbox.network : 'none',
      filesystem: {
        // The built-in credential list always applies; a policy adds to it. `~` is kept and
        // expanded when a run is planned, against the HOME of the gateway that runs it.
        hidden: [...new Set([...D.sandbox.filesystem.hidden, ...list(sandbox.filesystem?.hidden, []).map((p) => keepHome(p))])],
        writable: list(sandbox.filesystem?.writable, D.sandbox.filesystem.writable).map((p) => keepHome(p)),
        readOnly: list(sandbox.filesystem?.readOnly, D.sandbox.filesystem.readOnly).map((p) => keepHome(p)),
      },
    },
  };
  return deepFreeze(policy);
}
