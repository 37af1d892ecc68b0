/*
 * Credential-process sources (`secrets.sources` in a policy): a team's own secret manager asked
 * through its command-line client, the way git's credential helpers and AWS's
 * `credential_process` work. A source names a program and its arguments (`op read
 * op://Private/{name}/credential`, `vault kv get -field=value secret/{name}`, `gh auth token`)
 * and the references it answers (`secret:gh-*`); the gateway runs it when such a reference is
 * used, and its output is the value.
 *
 * How it is run, and why:
 *  - outside every sandbox, as the gateway (the program needs the user's session: an unlocked
 *    1Password, a Vault token, `gh`'s login), so a policy that names a source is as trusted as
 *    the gateway's own code (SECURITY.md says so; policy files are read-only inside runs);
 *  - found where no run can have put it: a program named without a path is looked up in the
 *    absolute entries of the gateway's PATH (relative and empty ones are skipped), and one that
 *    lies in a directory the run could write (its workspace, say: an earlier run may have written
 *    `./op`) is refused, as is a relative path; the program is then started by its full path;
 *  - without a shell: `{name}` (the reference's name) and `{ref}` are replaced inside the
 *    arguments, never parsed, so a name cannot become shell code; a name is 1-128 characters of
 *    A-Z a-z 0-9 . _ - / starting with a letter or digit, so it cannot become an option either,
 *    and a name with a `.`, `..` or empty path segment is refused before the program runs (the
 *    policy's patterns match names as text: `secret:team/../admin/root` matches `secret:team/*`,
 *    and a client that reads the name as a path would leave `team/`);
 *  - with its own process group, a timeout (the whole group is killed) and a bounded stdout
 *    (64 KiB: a value, not a stream); stdin is closed (a helper that prompts gets end of file
 *    at once, not a wait for the timeout);
 *  - its output is text (the value, one trailing newline dropped) or JSON (`{"value": ...}`
 *    with an optional expiry: `expiresAt`/`expiration`/`Expiration` as an ISO date or epoch
 *    seconds, or `expiresIn` seconds); no output at all means "not found" (resolution goes on);
 *    output that is not UTF-8, holds a NUL, or is not the JSON said is a failure;
 *  - a failure fails the request closed (EXECGATE_ERR_REF_SOURCE_FAILED) with a message that
 *    names the source and the reference and quotes the first line of the program's stderr,
 *    never its stdout.
 *
 * Values are kept in memory until they expire, never longer than the source's `maxAge`; one
 * with less than a quarter of its life (at most a minute) left is asked for again, so a value
 * handed to a run has time left to be used (a program that fails then leaves the kept value in use
 * until it expires). Concurrent uses of one reference share one call.
 * Every call (not a cached answer) is reported through `record` (`secret.source`: source,
 * reference, outcome, duration, expiry; never a value).
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { ExecgateError } from '../../errors';
import type { RefKind, RefSource, SourceAnswer, LookupContext } from '../types';

/** Largest stdout a source program may write: a value, not a stream. */
export const PROCESS_SOURCE_MAX_OUTPUT = 64 * 1024;
/** How much of a failing program's stderr is kept for the message (its first line is quoted). */
const STDERR_KEPT = 4096;
/** A value with less than this share of its life left is asked for again. */
const REFRESH_SHARE = 0.25;
const REFRESH_MAX_MS = 60_000;

export interface ProcessSourceSpec {
  /** Short name, in results, errors and audit records (`onepassword`). */
  readonly name: string;
  /** Program and arguments; `{name}` and `{ref}` are replaced in each argument. */
  readonly command: readonly string[];
  /** Reference patterns (`secret:gh-*`) this source answers; `*` matches any characters. */
  readonly refs: readonly string[];
  readonly format: 'text' | 'json';
  readonly timeoutMs: number;
  /** Longest a value is kept; 0 = asked for on every use. */
  readonly maxAgeMs: number;
}

export interface ProcessSourceCall {
  readonly source: string;
  readonly reference: string;
  readonly runId?: string;
  /** `found`, `not-found` or `failed`. */
  readonly outcome: 'found' | 'not-found' | 'failed';
  readonly durationMs: number;
  /** When the value stops being used (ISO), for a found one. */
  readonly expiresAt?: string;
  readonly reason?: string;
}

export interface ProcessSourcesOptions {
  /** The sources in force (read on every lookup: a policy reload changes them). */
  readonly specs: () => readonly ProcessSourceSpec[];
  /** The program's environment (the gateway's). */
  readonly env: NodeJS.ProcessEnv;
  /** Where programs run. */
  readonly cwd: string;
  /** Told of every call. */
  readonly record?: (call: ProcessSourceCall) => void;
  /** The clock (tests). */
  readonly now?: () => number;
}

interface Cached {
  readonly value: string;
  /** When it stops being handed out. */
  readonly until: number;
  /** When it is asked for again (before `until`). */
  readonly refreshAt: number;
  /** The spec it came from: a reload that changes the source drops it. */
  readonly spec: ProcessSourceSpec;
}

type Outcome = { found: false } | { found: true; value: string; expiresAt?: number };

/** `secret:gh-*` as a test of `secret:NAME`. */
export function compileRefPattern(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('.*')}$`);
}

/** The spec that answers `kind:id`: the first whose patterns match. */
export function findProcessSource(specs: readonly ProcessSourceSpec[], kind: RefKind, id: string): ProcessSourceSpec | undefined {
  const ref = `${kind}:${id}`;
  return specs.find((spec) => spec.refs.some((pattern) => compileRefPattern(pattern).test(ref)));
}

/** The program's argv for a reference: placeholders replaced in each argument, nothing parsed. */
export function expandCommand(spec: ProcessSourceSpec, kind: RefKind, id: string): string[] {
  return spec.command.map((arg) => arg.replaceAll('{name}', id).replaceAll('{ref}', `${kind}:${id}`));
}

/**
 * One RefSource for every `secrets.sources` entry of the policy in force. Its name is
 * `process`; an answer names the entry that gave it (ResolvedRef.source).
 */
export function createProcessSources(options: ProcessSourcesOptions): RefSource & { clear(): void } {
  const now = options.now ?? Date.now;
  const cache = new Map<string, Cached>();
  const pending = new Map<string, Promise<Outcome>>();

  async function lookup(kind: RefKind, id: string, context?: LookupContext): Promise<SourceAnswer> {
    const spec = findProcessSource(options.specs(), kind, id);
    if (!spec) return { found: false };
    const key = `${spec.name}\0${kind}:${id}`;
    const cached = cache.get(key);
    const at = now();
    if (cached && cached.spec === spec && at < cached.refreshAt) return { found: true, value: cached.value, source: spec.name };
    let call = pending.get(key);
    if (!call) {
      call = ask(spec, kind, id, context).finally(() => pending.delete(key));
      pending.set(key, call);
    }
    let outcome: Outcome;
    try {
      outcome = await call;
    } catch (error) {
      // A value asked for again before it expires is still good when the program fails now.
      if (cached && cached.spec === spec && now() < cached.until) return { found: true, value: cached.value, source: spec.name };
      throw error;
    }
    if (!outcome.found) {
      cache.delete(key);
      return { found: false };
    }
    return { found: true, value: outcome.value, source: spec.name };
  }

  async function ask(spec: ProcessSourceSpec, kind: RefKind, id: string, context: LookupContext | undefined): Promise<Outcome> {
    const reference = `<<${kind}:${id}>>`;
    const started = now();
    const report = (call: Omit<ProcessSourceCall, 'source' | 'reference' | 'durationMs' | 'runId'>): void => {
      options.record?.({ source: spec.name, reference, ...(context?.runId ? { runId: context.runId } : {}), durationMs: now() - started, ...call });
    };
    let outcome: Outcome;
    try {
      if (hasDotSegment(id)) {
        throw new SourceProgramError(`the name has a \`.\`, \`..\` or empty path segment, by which a program that reads it as a path would leave the source's patterns (\`${spec.refs.join('`, `')}\`); it was not run`);
      }
      const argv = expandCommand(spec, kind, id);
      argv[0] = findProgram(argv[0], options.env.PATH, context?.isWritable);
      const output = await runProgram(argv, spec, options);
      outcome = readOutput(output, spec, now());
    } catch (error) {
      const reason = error instanceof SourceProgramError ? error.message : `it could not be started: ${(error as Error).message}`;
      report({ outcome: 'failed', reason });
      throw new ExecgateError(
        'EXECGATE_ERR_REF_SOURCE_FAILED',
        `The ${spec.name} source (\`${spec.command[0]}\`, secrets.sources) could not resolve ${reference}: ${reason}. Nothing was run.`,
        { reference, source: spec.name },
      );
    }
    if (!outcome.found) {
      report({ outcome: 'not-found' });
      return outcome;
    }
    const got = now();
    const until = Math.min(outcome.expiresAt ?? Infinity, got + spec.maxAgeMs);
    const life = Math.max(0, until - got);
    const refreshAt = until - Math.min(life * REFRESH_SHARE, REFRESH_MAX_MS);
    if (outcome.expiresAt !== undefined && outcome.expiresAt <= got) {
      report({ outcome: 'failed', reason: 'the value it gave had already expired' });
      throw new ExecgateError(
        'EXECGATE_ERR_REF_SOURCE_FAILED',
        `The ${spec.name} source (secrets.sources) gave ${reference} a value that had already expired (${new Date(outcome.expiresAt).toISOString()}). Nothing was run.`,
        { reference, source: spec.name },
      );
    }
    if (life > 0) cache.set(`${spec.name}\0${kind}:${id}`, { value: outcome.value, until, refreshAt, spec });
    report({ outcome: 'found', ...(Number.isFinite(until) ? { expiresAt: new Date(until).toISOString() } : {}) });
    return outcome;
  }

  return Object.freeze({
    name: 'process',
    kinds: Object.freeze(['secret'] as RefKind[]),
    lookup,
    /** Forget every kept value (a policy reload, `gateway.close()`). */
    clear: () => cache.clear(),
  });
}

class SourceProgramError extends Error {}

/**
 * `a/../b`, `a/./b`, `a//b`, `a/`: a name the policy's patterns match as text (`*` matches `/` and
 * `.`) that a client reading it as a path (a file store, `pass`, `vault kv get secret/{name}`)
 * would resolve outside them, so `secret:team/../admin/root` would pass `secret:team/*`.
 */
function hasDotSegment(id: string): boolean {
  return id.split('/').some((segment) => segment === '' || segment === '.' || segment === '..');
}

/** The program's full path: never one a run could have written, never a relative one. */
function findProgram(program: string, path: string | undefined, isWritable: ((directory: string) => boolean) | undefined): string {
  const check = (file: string): string => {
    if (isWritable?.(dirname(file))) {
      throw new SourceProgramError(`\`${file}\` lies in a directory runs can write, where an earlier run could have put it; install it elsewhere or name it by an absolute path outside every writable root`);
    }
    return file;
  };
  if (program.includes('/')) {
    if (!isAbsolute(program)) throw new SourceProgramError(`\`${program}\` is a relative path; name the program by its absolute path, or by its name alone (found on PATH)`);
    return check(program);
  }
  for (const entry of (path ?? '').split(':')) {
    if (!isAbsolute(entry)) continue;
    const file = join(entry, program);
    try {
      accessSync(file, constants.X_OK);
      if (!statSync(file).isFile()) continue;
    } catch {
      continue;
    }
    return check(file);
  }
  throw new SourceProgramError(`\`${program}\` is not on the gateway's PATH (absolute entries only)`);
}

/** Runs the program; resolves to its stdout, rejects with why it failed. */
function runProgram(argv: readonly string[], spec: ProcessSourceSpec, options: ProcessSourcesOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a timeout ends what it started too
      windowsHide: true,
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let failure: string | undefined;
    const stop = (why: string): void => {
      failure ??= why;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => stop(`it did not finish within ${spec.timeoutMs} ms (timeout)`), spec.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > PROCESS_SOURCE_MAX_OUTPUT) stop(`it wrote more than ${PROCESS_SOURCE_MAX_OUTPUT / 1024} KiB`);
      else out.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => { if (err.length < STDERR_KEPT) err += chunk.slice(0, STDERR_KEPT - err.length); });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new SourceProgramError(`\`${argv[0]}\` could not be started (${(error as NodeJS.ErrnoException).code ?? error.message})`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) {
        reject(new SourceProgramError(failure));
        return;
      }
      if (code !== 0) {
        const line = err.split('\n').map((each) => each.trim()).find((each) => each !== '');
        const status = signal ? `it was ended by ${signal}` : `it exited with status ${code}`;
        reject(new SourceProgramError(`${status}${line ? `: ${line.slice(0, 200)}` : ' and wrote nothing to stderr'}`));
        return;
      }
      resolve(Buffer.concat(out));
    });
  });
}

function readOutput(output: Buffer, spec: ProcessSourceSpec, at: number): Outcome {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(output);
  } catch {
    throw new SourceProgramError('its output is not UTF-8 text');
  }
  if (text.includes('\0')) throw new SourceProgramError('its output holds a NUL character');
  if (spec.format === 'text') {
    const value = text.replace(/\r?\n$/, '');
    return value === '' ? { found: false } : { found: true, value };
  }
  if (text.trim() === '') return { found: false };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SourceProgramError('its output is not JSON (the source says `format: json`)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new SourceProgramError('its JSON output is not an object with a `value`');
  const fields = parsed as Record<string, unknown>;
  if (fields.value === null || fields.value === undefined || fields.value === '') return { found: false };
  if (typeof fields.value !== 'string') throw new SourceProgramError(`its JSON \`value\` is a ${typeof fields.value}, not a string`);
  const expiresAt = readExpiry(fields, at);
  return { found: true, value: fields.value, ...(expiresAt !== undefined ? { expiresAt } : {}) };
}

function readExpiry(fields: Record<string, unknown>, at: number): number | undefined {
  const inSeconds = fields.expiresIn;
  if (inSeconds !== undefined) {
    if (typeof inSeconds !== 'number' || !Number.isFinite(inSeconds) || inSeconds < 0) throw new SourceProgramError('its JSON `expiresIn` is not a number of seconds');
    return at + inSeconds * 1000;
  }
  const when = fields.expiresAt ?? fields.expiration ?? fields.Expiration;
  if (when === undefined || when === null) return undefined;
  if (typeof when === 'number' && Number.isFinite(when)) return when * 1000;
  if (typeof when === 'string') {
    const ms = Date.parse(when);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new SourceProgramError('its JSON expiry is neither an ISO date nor epoch seconds');
}
