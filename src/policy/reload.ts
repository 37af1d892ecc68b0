/*
 * The policy a long-running host holds: loaded once from a file (or given), replaced whole by
 * reload() so a request reads it once and sees one policy throughout, and optionally watched
 * (file changes, a signal). An invalid file on reload is refused and the last good policy stays.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { ExecgateError, getErrorCode, getErrorMessage, isExecgateError } from '../errors';
import { DEFAULT_POLICY, type EffectivePolicy } from './effective';
import type { LoadedPolicy } from './load';
import { findWriterSince, type LiveRun } from '../process/live-runs';

/**
 * Options of `gateway.watchPolicy()`: the signal that triggers a reload and the quiet time after a file change.
 */
export interface WatchPolicyOptions {
  /** Signal that triggers a reload; `false` for none. Default `SIGHUP`. */
  signal?: NodeJS.Signals | false;
  /** Quiet time after a file change before reloading (editors write in steps). Default 100 ms. */
  debounceMs?: number;
}

export interface PolicyHolderOptions {
  readonly file?: string;
  readonly policy?: EffectivePolicy;
  readonly cwd: string;
  readonly homeDir: string;
}

type Record = (event: string, fields: { [key: string]: unknown }) => void;

/**
 * Refuses policy files that a live sandboxed run could have written: one whose writable roots
 * hold the file and that started before the file last changed. Its read-only mount on the file's
 * name is gone once the host replaced the file by rename (process/live-runs.ts), so the file may be
 * the run's, not the operator's.
 */
export function checkPolicyWriters(files: readonly string[], runs?: readonly LiveRun[]): void {
  for (const file of files) {
    const found = findWriterSince(file, runs);
    if (found === undefined) continue;
    throw new ExecgateError(
      'EXECGATE_ERR_POLICY_WRITTEN_BY_RUN',
      `The policy file ${file} changed (${new Date(found.changed).toISOString()}) while the sandboxed run ${found.run.id}, which may write where it lies, was running (started ${new Date(found.run.started).toISOString()}${found.run.ended === undefined ? ', still running' : `, ended ${new Date(found.run.ended).toISOString()}`}), so that run may have written it. It was not loaded. Stop that run (or wait for it to end), check the file and save it again, or keep the policy outside the workspace and every writable path.`,
      { file, run: found.run.id, runStarted: new Date(found.run.started).toISOString(), fileChanged: new Date(found.changed).toISOString() },
    );
  }
}

export class PolicyHolder {
  #policy: EffectivePolicy;
  readonly #options: PolicyHolderOptions;
  #files: readonly string[] = [];
  #digest: string | undefined;
  #unwatch: (() => void) | undefined;
  /** Set once the host's audit log exists. */
  record: Record = () => undefined;
  warn: (obj: object, msg: string) => void = () => undefined;
  /** The host's own checks of a reloaded policy (where it may write); throws to refuse it. */
  check: (policy: EffectivePolicy) => void = () => undefined;
  /** What the first load produced, for the host's `policy.loaded` record. */
  readonly loaded: LoadedPolicy | undefined;

  /** Throws (fail closed) when the file is invalid. */
  constructor(options: PolicyHolderOptions) {
    if (options.policy !== undefined && options.file !== undefined) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'Give either the `policy` or the `policyFile` option, not both.', { option: 'policyFile' });
    }
    this.#options = options;
    this.loaded = options.file === undefined ? undefined : this.#load(options.file);
    this.#policy = this.loaded?.policy ?? options.policy ?? DEFAULT_POLICY;
  }

  get policy(): EffectivePolicy {
    return this.#policy;
  }

  /** The policy files read for the policy in force (the file and its `extends` chain). */
  get files(): readonly string[] {
    return this.#files;
  }

  #load(file: string): LoadedPolicy {
    // Loaded on first use: a gateway without a policy file never loads the parser or validator.
    const { loadPolicyFile } = require('./load') as typeof import('./load');
    const loaded = loadPolicyFile(file, { cwd: this.#options.cwd, homeDir: this.#options.homeDir });
    checkPolicyWriters(loaded.files);
    this.check(loaded.policy);
    this.#files = loaded.files;
    this.#digest = loaded.digest;
    return loaded;
  }

  /** See Gateway.reloadPolicy(). */
  reload(): boolean {
    const file = this.#options.file;
    if (file === undefined) return false;
    const before = this.#digest;
    const previousFiles = this.#files;
    let loaded: LoadedPolicy;
    try {
      loaded = this.#load(file);
    } catch (error) {
      const problems = isExecgateError(error) && Array.isArray(error.details.problems) ? error.details.problems : undefined;
      const code = getErrorCode(error);
      let unrecorded = '';
      try {
        this.record('policy.rejected', { source: file, code, problems, message: getErrorMessage(error), reload: true });
      } catch (auditError) {
        unrecorded = ` (The audit log could not record this refusal: ${getErrorCode(auditError)}.)`;
      }
      this.warn({ code, file, problems }, `The policy ${file} was not reloaded; the last good policy stays in force. ${getErrorMessage(error)}${unrecorded}`);
      return false;
    }
    if (loaded.digest === before) return true;
    const destination = ({ enabled, path, destination: where, maxBytes, maxFiles, fsync }: EffectivePolicy['audit']): string =>
      JSON.stringify([enabled, path, where, maxBytes, maxFiles, fsync]);
    const auditRestart = destination(loaded.policy.audit) !== destination(this.#policy.audit);
    // Recorded before it is in force: a policy the log cannot record does not take over (a
    // reload runs from a watcher or a signal, where a throw would end the host).
    try {
      this.record('policy.loaded', { source: loaded.policy.source, files: loaded.files, digest: loaded.digest, reload: true, ...(auditRestart ? { auditRestartRequired: true } : {}) });
    } catch (error) {
      this.#files = previousFiles;
      this.#digest = before;
      this.warn({ code: getErrorCode(error), file }, `The policy ${file} was not reloaded because the audit log cannot record it (${getErrorMessage(error)}); the last good policy stays in force.`);
      return false;
    }
    this.#policy = loaded.policy;
    if (auditRestart) this.warn({ file }, `The policy ${file} changes the audit destination; that takes effect when the gateway restarts.`);
    return true;
  }

  /** See Gateway.watchPolicy(). */
  watch(options: WatchPolicyOptions = {}): () => void {
    if (this.#options.file === undefined) {
      throw new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'watchPolicy() needs a gateway created with the `policyFile` option.', { option: 'watchPolicy' });
    }
    this.#unwatch?.();
    const debounceMs = options.debounceMs ?? 100;
    const signal = options.signal === undefined ? 'SIGHUP' : options.signal;
    let watchers: FSWatcher[] = [];
    let timer: NodeJS.Timeout | undefined;
    const reload = (): void => {
      this.reload();
      rewatch();
    };
    const schedule = (): void => {
      clearTimeout(timer);
      timer = setTimeout(reload, debounceMs);
      timer.unref();
    };
    // Directories are watched, not files: editors save by writing a new file and renaming it.
    const rewatch = (): void => {
      for (const watcher of watchers) watcher.close();
      watchers = [];
      const names = new Map<string, Set<string>>();
      for (const file of this.#files) {
        const dir = dirname(file);
        if (!names.has(dir)) names.set(dir, new Set());
        names.get(dir)?.add(basename(file));
      }
      for (const [dir, files] of names) {
        try {
          const watcher = watch(dir, { persistent: false }, (_event, name) => {
            if (name === null || files.has(String(name))) schedule();
          });
          watcher.on('error', () => { /* the directory went away; a signal still reloads */ });
          watchers.push(watcher);
        } catch {
          // Not watchable (removed, no permission): the signal still works.
        }
      }
    };
    rewatch();
    if (signal) process.on(signal, reload);
    const stop = (): void => {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      watchers = [];
      if (signal) process.removeListener(signal, reload);
      if (this.#unwatch === stop) this.#unwatch = undefined;
    };
    this.#unwatch = stop;
    return stop;
  }

  stop(): void {
    this.#unwatch?.();
  }
}
