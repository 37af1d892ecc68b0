/*
 * `secrets.unknown`: what a reference no source knows does. Left in the command it reaches a
 * program as the literal text `<<secret:NAME>>` (quoted, that text went to a remote API as if it
 * were the token; unquoted, bash reads `<<` as a heredoc and reports a syntax error that says
 * nothing about references). `literal` keeps that behaviour (seed 004), `warn` logs it, `deny`
 * refuses the run before anything is spawned. Messages name references, never values.
 */
import { ExecgateError } from '../errors';
import type { EffectivePolicy } from './effective';

interface RefLike {
  readonly kind: string;
  readonly id: string;
  readonly ref: string;
  readonly found: boolean;
}

/** The references of a resolution that no source knew, canonical spelling, each once. */
export function getUnknownRefs(refs: readonly RefLike[]): string[] {
  return [...new Set(refs.filter((ref) => !ref.found).map((ref) => ref.ref))];
}

export function describeUnknownRefs(unknown: readonly string[]): string {
  return `no source knows ${unknown.join(', ')}; ${unknown.length === 1 ? 'it stays' : 'they stay'} in the command as written`;
}

/** Throws EXECGATE_ERR_REF_UNKNOWN when the policy denies unknown references and there are some. */
export function validateUnknownRefs(policy: EffectivePolicy, refs: readonly RefLike[], outcome: 'run' | 'written' = 'run'): void {
  if (policy.secrets.unknown !== 'deny') return;
  const unknown = getUnknownRefs(refs);
  if (unknown.length === 0) return;
  throw new ExecgateError(
    'EXECGATE_ERR_REF_UNKNOWN',
    `No source knows ${unknown.join(', ')}, and the policy (${policy.source}) refuses unknown references (\`secrets.unknown: deny\`). ` +
      `Check the name (\`execgate secret list\`), or store the secret (\`execgate secret set NAME\`). ${outcome === 'run' ? 'Nothing was run.' : 'Nothing was written.'}`,
    { rule: 'secrets.unknown', refs: unknown },
  );
}
