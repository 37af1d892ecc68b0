/*
 * The merged document compiled into the frozen EffectivePolicy the gateway reads: defaults
 * filled in, durations and sizes in numbers, `~` expanded where the value is a path of this
 * host, rules' patterns compiled, host patterns and bindings parsed.
 */
import { join, resolve } from 'node:path';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../egress/rules';
import { RE2JS } from 're2js';
import { DEFAULT_POLICY, EXEC_MODES, deepFreeze, type CommandRule, type EffectivePolicy, type ExecMode, type SecretRestriction } from './effective';
import { toCommandWords, type CommandMatch } from './match';
import { get, getItemId, type Doc, type ItemOrigin } from './merge';
import { parseDuration, parseSize } from './units';

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

export function compilePolicy(doc: Doc, items: Map<object, ItemOrigin>, source: string, homeDir: string): EffectivePolicy {
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
