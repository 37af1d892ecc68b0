/*
 * The vault source, its module (and libsodium) loaded on the first lookup: most runs name no
 * vault secret.
 */
import type { RefKind, RefSource } from '../types';
import type { VaultSourceOptions } from './vault';

export function createLazyVaultSource(options: VaultSourceOptions): RefSource {
  let source: RefSource | undefined;
  return Object.freeze({
    name: 'vault',
    kinds: Object.freeze(['secret', 'decrypt'] as RefKind[]),
    lookup(kind: RefKind, id: string) {
      source ??= (require('./vault') as typeof import('./vault')).createVaultSource(options);
      return source.lookup(kind, id);
    },
    list(kind: RefKind) {
      source ??= (require('./vault') as typeof import('./vault')).createVaultSource(options);
      return source.list?.(kind) ?? [];
    },
  });
}
