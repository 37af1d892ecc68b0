/*
 * A gateway's own working directory against the policy's `cwd.roots`. Requests that name no
 * `cwd` run there; when it is outside every root each of them would be denied, which an agent
 * sees only as one refusal after another. So a gateway in that state does not start.
 */
import { realpathSync } from 'node:fs';
import { ExecgateError } from '../errors';
import type { EffectivePolicy } from './effective';
import { isInside } from '../fs/paths';

function realpathOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * `cwd` with symlinks resolved (undefined when it does not exist) and whether it lies inside one
 * of `roots` (resolved too; a root that does not exist holds nothing). The one check behind both
 * the per-request decision and the refusal to start.
 */
export function locateInRoots(cwd: string, roots: readonly string[]): { readonly real: string | undefined; readonly inside: boolean } {
  const real = realpathOrUndefined(cwd);
  if (real === undefined) return { real, inside: false };
  const resolved = roots.map(realpathOrUndefined).filter((root): root is string => root !== undefined);
  return { real, inside: resolved.some((root) => isInside(real, root)) };
}

/** Throws EXECGATE_ERR_CWD_OUTSIDE_ROOTS when `cwd` (symlinks resolved) is outside every root. */
export function validateCwdInRoots(policy: EffectivePolicy, cwd: string): void {
  if (policy.cwd.roots.length === 0) return;
  // A directory that does not exist is refused per request, with the more precise error.
  const { real, inside } = locateInRoots(cwd, policy.cwd.roots);
  if (real === undefined || inside) return;
  throw new ExecgateError(
    'EXECGATE_ERR_CWD_OUTSIDE_ROOTS',
    `The working directory \`${real}\` is outside the directories the policy (${policy.source}) allows ` +
      `(${policy.cwd.roots.map((root) => `\`${root}\``).join(', ')}), so every request without its own cwd would be denied; ` +
      'the gateway did not start. Start it in a directory inside a root (the `cwd` option; `execgate mcp --workdir DIR`), or add the directory to `cwd.roots`.',
    { cwd: real, roots: [...policy.cwd.roots] },
  );
}
