/*
 * The environment source: `EXECGATE_SECRET_<NAME>` in the gateway's own environment. It
 * exists for containers and CI, where secrets arrive as variables. The sanitizer withholds
 * every `EXECGATE_SECRET_*` variable from children, so a value reaches a child only through a
 * reference the command asked for.
 */
import type { RefKind, RefSource, SourceAnswer } from '../types';

const PREFIX = 'EXECGATE_SECRET_';

/** `github-token` -> `EXECGATE_SECRET_GITHUB_TOKEN`; `-`, `.` and `/` become `_`. */
export function getEnvSecretName(name: string): string {
  return `EXECGATE_SECRET_${name.toUpperCase().replace(/[-./]/g, '_')}`;
}

export function createEnvSource(env: NodeJS.ProcessEnv = process.env): RefSource {
  return Object.freeze({
    name: 'env',
    kinds: Object.freeze(['secret'] as RefKind[]),
    lookup(kind: RefKind, id: string): SourceAnswer {
      if (kind !== 'secret') return { found: false };
      const value = env[getEnvSecretName(id)];
      return value === undefined || value === '' ? { found: false } : { found: true, value };
    },
    // `EXECGATE_SECRET_GITHUB_TOKEN` is reached by `github-token` (and `github_token`, ...):
    // offer the spelling people write.
    list(kind: RefKind): string[] {
      if (kind !== 'secret') return [];
      return Object.keys(env)
        .filter((name) => name.startsWith(PREFIX) && name.length > PREFIX.length && env[name])
        .map((name) => name.slice(PREFIX.length).toLowerCase().replace(/_/g, '-'));
    },
  });
}
