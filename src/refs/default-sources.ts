/*
 * The reference sources a gateway reads, in order: the `EXECGATE_SECRET_<NAME>` environment,
 * the OS keyring, the vault under the state directory (opened on first use), the policy's
 * `secrets.sources` (refs/sources/process.ts), then any the host adds. Each built-in one can be left out.
 */
import { isKeyringDisabled } from '../stores/os-keyring';
import { createEnvSource } from './sources/env';
import { createKeyringSource } from './sources/keyring';
import { createLazyVaultSource } from './sources/lazy-vault';
import type { RefSource } from './types';

export interface DefaultSourcesOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly home: string;
  readonly envSource?: boolean;
  readonly keyring?: false | { service?: string };
  readonly vault?: false;
  readonly sources?: readonly RefSource[];
  /** The policy's `secrets.sources` (after the vault, before the host's own). */
  readonly process?: RefSource;
  /** Operational warnings of the keyring source. */
  readonly warn: (obj: object, msg: string) => void;
}

export function createDefaultSources(options: DefaultSourcesOptions): RefSource[] {
  const { env, home } = options;
  const sources: RefSource[] = [];
  if (options.envSource !== false) sources.push(createEnvSource(env));
  const keyringEnabled = options.keyring !== false && !isKeyringDisabled(env);
  if (keyringEnabled) {
    const service = options.keyring ? options.keyring.service : undefined;
    sources.push(createKeyringSource({ service, logger: { warn: options.warn } }));
  }
  if (options.vault !== false) {
    sources.push(createLazyVaultSource({ home, env, keyring: keyringEnabled ? (options.keyring || {}) : false }));
  }
  if (options.process) sources.push(options.process);
  sources.push(...(options.sources ?? []));
  return sources;
}
