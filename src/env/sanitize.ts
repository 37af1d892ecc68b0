/*
 * Build a child's environment: base (inherited, allowlisted, or nothing), the request merged on
 * top, then every variable judged once, in name order:
 *
 *   invalid name or value          -> removed   (a name with `=` or NUL, an empty name, a NUL in the value)
 *   hazard (section 1, `strip`,    -> removed   (hazard wins over secret-looking)
 *     a function-definition value,
 *     allowlist-mode TZ with / or %)
 *   EXECGATE_SECRET_*              -> withheld  (always; `allowSecrets` cannot release it)
 *   secret-looking name or value   -> withheld, or kept and listed in `passedSecrets` when
 *                                     `allowSecrets` names it
 *   anything else                  -> kept; trust/traffic redirects are also listed in `reported`
 *
 * Then execgate's own settings, none of which counts as removed:
 *   `path`                         -> PATH
 *   non-PTY runs                   -> PAGER=cat, GIT_PAGER=cat, GIT_EDITOR=true, EDITOR=true.
 *                                     A run without a terminal must never wait on a pager or an
 *                                     editor: `cat` pages nothing, and `true` "edits" by leaving
 *                                     the file as it is (git then takes its default message or
 *                                     aborts on an empty one). VISUAL, MANPAGER and
 *                                     GIT_SEQUENCE_EDITOR stay stripped, so tools fall back to
 *                                     these four. Nothing else is added or removed.
 *   PTY runs                       -> TERM=xterm-256color when TERM is missing or empty.
 *   `set`                          -> applied last, unsanitized (the policy author chose them);
 *                                     a secret-looking one is listed in `passedSecrets` so that
 *                                     its value is masked like any other.
 *
 * In allowlist mode, inherited variables that are not on the allowlist are simply not copied;
 * like the inherited environment in replace mode, they are not reported.
 *
 * The inherited `_` is never copied either (not reported): it is what the shell that started the
 * gateway set for the gateway (its program's path), not something of the run's. A shell sets
 * `_` afresh for each program it starts, and bash's `exec` passes none: a run that starts
 * through one (the descriptor closer, a warm sandbox's waiting bash) could not carry it, so
 * passing it would make a run's environment depend on how it was started. A request may set `_`.
 *
 * A request value of `undefined` unsets the inherited variable of that name, as it would in
 * child_process.spawn.
 */

import { describeValue, ExecgateError, invalidOption } from '../errors';
import {
  compileNameList,
  isHazardName,
  isHazardValue,
  isReportedName,
  matchesNameList,
  type NameList,
} from './hazards';
import { isExecgateSecretName, isSecretName, isSecretValue } from './secrets';

export interface SanitizeEnvOptions {
  inherited: Readonly<Record<string, string | undefined>>;
  requested?: Readonly<Record<string, string>>;
  replace?: boolean;
  mode?: 'inherit' | 'allowlist';
  allowlist?: readonly string[];
  allowSecrets?: readonly string[];
  strip?: readonly string[];
  secretNamePatterns?: readonly RegExp[];
  secretValuePatterns?: readonly RegExp[];
  set?: Readonly<Record<string, string>>;
  path?: string;
  pty?: boolean;
}

export interface SanitizedEnv {
  env: Record<string, string>;
  removed: string[];
  withheld: string[];
  passedSecrets: Array<{ name: string; value: string }>;
  reported: string[];
}

/** Copied from the inherited environment in allowlist mode (sudo `env_reset`, systemd). */
export const BASE_ALLOWLIST: readonly string[] = Object.freeze([
  'HOME',
  'LOGNAME',
  'PATH',
  'SHELL',
  'TERM',
  'USER',
  'LANG',
  'LC_*',
  'TZ',
  'TMPDIR',
]);

/** Set for runs without a terminal (see the top of this file). */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = Object.freeze({
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_EDITOR: 'true',
  EDITOR: 'true',
});

export const PTY_DEFAULT_TERM = 'xterm-256color';

/** A TZ naming a file (`/`, or `%` escapes) makes libc read attacker-chosen data. */
const UNSAFE_TZ = /[/%]/;

const BASE_ALLOWLIST_NAMES = compileNameList(BASE_ALLOWLIST);

interface NormalizedOptions {
  inherited: Readonly<Record<string, unknown>>;
  requested: Readonly<Record<string, unknown>>;
  replace: boolean;
  allowlistMode: boolean;
  allowlist: NameList;
  allowSecrets: NameList;
  strip: NameList;
  secretNamePatterns: RegExp[];
  secretValuePatterns: RegExp[];
  set: Array<[string, string]>;
  path: string | undefined;
  pty: boolean;
}

/**
 * Builds a run's environment from the gateway's: strips secrets and loader hazards, keeps what the
 * policy allows, and sets what the request asks.
 */
export function sanitizeEnv(options: SanitizeEnvOptions): SanitizedEnv {
  const normalized = normalizeOptions(options);
  const input = mergeSources(normalized);

  const env = Object.create(null) as Record<string, string>;
  const removed: string[] = [];
  const withheld: string[] = [];
  const reported: string[] = [];
  const passedSecrets: Array<{ name: string; value: string }> = [];

  for (const name of sortedKeys(input)) {
    const value = input.get(name);
    if (typeof value !== 'string' || !isValidName(name) || value.includes('\0')) {
      removed.push(name);
      continue;
    }
    if (isHazard(name, value, normalized)) {
      removed.push(name);
      continue;
    }
    if (isExecgateSecretName(name)) {
      withheld.push(name);
      continue;
    }
    if (looksSecret(name, value, normalized)) {
      if (!matchesNameList(normalized.allowSecrets, name)) {
        withheld.push(name);
        continue;
      }
      passedSecrets.push({ name, value });
    }
    env[name] = value;
    if (isReportedName(name)) reported.push(name);
  }

  if (normalized.path !== undefined) env.PATH = normalized.path;
  if (normalized.pty) {
    if (env.TERM === undefined || env.TERM === '') env.TERM = PTY_DEFAULT_TERM;
  } else {
    Object.assign(env, NON_INTERACTIVE_ENV);
  }
  for (const [name, value] of normalized.set) {
    env[name] = value;
    if (looksSecret(name, value, normalized)) passedSecrets.push({ name, value });
  }

  return { env: sortEnv(env), removed, withheld, passedSecrets, reported };
}

function isHazard(name: string, value: string, options: NormalizedOptions): boolean {
  if (isHazardName(name) || isHazardValue(value) || matchesNameList(options.strip, name)) return true;
  return options.allowlistMode && name === 'TZ' && UNSAFE_TZ.test(value);
}

function looksSecret(name: string, value: string, options: NormalizedOptions): boolean {
  return (
    isSecretName(name) ||
    isSecretValue(value) ||
    options.secretNamePatterns.some((pattern) => pattern.test(name)) ||
    options.secretValuePatterns.some((pattern) => pattern.test(value))
  );
}

function mergeSources(options: NormalizedOptions): Map<string, unknown> {
  const input = new Map<string, unknown>();
  if (!options.replace) {
    for (const name of Object.keys(options.inherited)) {
      const value = options.inherited[name];
      if (value === undefined || name === '_') continue;
      if (options.allowlistMode && !isAllowlisted(name, options)) continue;
      input.set(name, value);
    }
  }
  for (const name of Object.keys(options.requested)) {
    const value = options.requested[name];
    if (value === undefined) input.delete(name);
    else input.set(name, value);
  }
  return input;
}

function isAllowlisted(name: string, options: NormalizedOptions): boolean {
  return matchesNameList(BASE_ALLOWLIST_NAMES, name) || matchesNameList(options.allowlist, name);
}

function isValidName(name: string): boolean {
  return name !== '' && !name.includes('=') && !name.includes('\0');
}

/** Code-unit order: locale-independent, so the output is the same on every host. */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortedKeys(map: Map<string, unknown>): string[] {
  return [...map.keys()].sort(compareNames);
}

/** Name order, except that JS objects always list integer-like names (`"2"`, `"10"`) first, numerically. */
function sortEnv(env: Record<string, string>): Record<string, string> {
  const sorted = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(env).sort(compareNames)) sorted[name] = env[name];
  return sorted;
}

// --- options -------------------------------------------------------------------------------

function normalizeOptions(options: SanitizeEnvOptions): NormalizedOptions {
  if (!isRecord(options)) {
    throw new ExecgateError(
      'EXECGATE_ERR_INVALID_OPTION',
      `Expected the environment \`options\` to be an object, got ${describeValue(options)}.`,
      { option: 'options' },
    );
  }
  const mode = options.mode ?? 'inherit';
  if (mode !== 'inherit' && mode !== 'allowlist') fail('mode', '`inherit` or `allowlist`', mode);
  const path = options.path;
  if (path !== undefined && (typeof path !== 'string' || path.includes('\0'))) {
    fail('path', 'a string without NUL bytes', path);
  }
  return {
    inherited: getRecord('inherited', options.inherited, false),
    requested: getRecord('requested', options.requested, true),
    replace: getBoolean('replace', options.replace),
    allowlistMode: mode === 'allowlist',
    allowlist: getNameList('allowlist', options.allowlist),
    allowSecrets: getNameList('allowSecrets', options.allowSecrets),
    strip: getNameList('strip', options.strip),
    secretNamePatterns: getPatterns('secretNamePatterns', options.secretNamePatterns),
    secretValuePatterns: getPatterns('secretValuePatterns', options.secretValuePatterns),
    set: getSet(options.set),
    path,
    pty: getBoolean('pty', options.pty),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function getRecord(option: string, value: unknown, optional: boolean): Readonly<Record<string, unknown>> {
  if (value === undefined && optional) return {};
  if (!isRecord(value)) fail(option, 'an object of environment variables', value);
  return value;
}

function getBoolean(option: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') fail(option, 'a boolean', value);
  return value;
}

function getNameList(option: string, value: unknown): NameList {
  if (value === undefined) return compileNameList([]);
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string' && entry !== '')) {
    fail(option, 'an array of non-empty variable names (a trailing `*` makes a prefix)', value);
  }
  return compileNameList(value as string[]);
}

/** Copies without `g`/`y`, whose `lastIndex` would make `test()` depend on earlier calls. */
function getPatterns(option: string, value: unknown): RegExp[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((entry) => entry instanceof RegExp)) {
    fail(option, 'an array of regular expressions', value);
  }
  return (value).map((pattern) => new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '')));
}

function getSet(value: unknown): Array<[string, string]> {
  if (value === undefined) return [];
  if (!isRecord(value)) fail('set', 'an object of environment variables', value);
  const entries: Array<[string, string]> = [];
  for (const name of Object.keys(value).sort(compareNames)) {
    const entry = value[name];
    // The value is never echoed: a policy may force a credential.
    if (!isValidName(name) || typeof entry !== 'string' || entry.includes('\0')) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_OPTION',
        `Expected the \`set\` option to map valid variable names to strings without NUL bytes, got an invalid entry for ${describeValue(name)}.`,
        { option: 'set', name },
      );
    }
    entries.push([name, entry]);
  }
  return entries;
}

function fail(option: string, expected: string, value: unknown): never {
  throw invalidOption(option, value, expected);
}

const PORTABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Check the names a request's `env` sets, before anything resolves: a name a shell cannot hold (a
 * space, a reference token, `=`) is an error rather than a silent drop, and with a policy's
 * `env.requestable` list only the names it lists may be set (a command allowlist cannot be undone
 * by pointing HOME, PATH or GIT_* at a crafted configuration).
 */
export function validateRequestedEnv(requested: Readonly<Record<string, unknown>> | undefined, requestable: readonly string[] | undefined): void {
  if (!requested) return;
  const allowed = requestable ? compileNameList(requestable) : null;
  for (const name of Object.keys(requested)) {
    if (!PORTABLE_NAME.test(name)) {
      throw new ExecgateError(
        'EXECGATE_ERR_INVALID_ENV',
        `Expected the names in \`env\` to be variable names ([A-Za-z_][A-Za-z0-9_]*), got ${describeValue(name)}; a reference token or a space cannot be part of a name. Nothing was run.`,
        { option: 'env' },
      );
    }
    if (allowed && !matchesNameList(allowed, name)) {
      throw new ExecgateError(
        'EXECGATE_ERR_ENV_NOT_REQUESTABLE',
        `The request sets \`${name}\`, which the policy's \`env.requestable\` list does not name (${requestable!.length > 0 ? requestable!.map((entry) => `\`${entry}\``).join(', ') : 'it is empty'}). Drop it from the request's \`env\`, or ask an operator to add it. Nothing was run.`,
        { name },
      );
    }
  }
}
