/*
 * libsodium is loaded on the first vault operation, never at import: its WebAssembly start-up
 * costs tens of milliseconds that `execgate run` without a vault should not pay.
 */
import type * as SodiumModule from 'libsodium-wrappers';

export type Sodium = typeof SodiumModule;

let loading: Promise<Sodium> | undefined;

export function loadSodium(): Promise<Sodium> {
  if (loading === undefined) {
    loading = (async () => {
      const sodium = require('libsodium-wrappers') as Sodium;
      await sodium.ready;
      return sodium;
    })();
    loading.catch(() => {
      loading = undefined;
    });
  }
  return loading;
}
