/*
 * The plan's AWS step: every `delivery: aws-sigv4` binding of the policy is given to each
 * sandboxed run with a proxy, whether or not its command names it (an AWS SDK reads its key from
 * the environment, not from the command). Its credential is asked of the sources like any
 * reference, read as JSON (egress/aws.ts), masked in the run's output, and carried to the proxy as
 * injections; the run's environment gets a placeholder pair of the same shape instead. A binding
 * whose secret no source has is left out (the run simply has no AWS key).
 */
import { createAwsInjections, createAwsPlaceholder, getAwsEnv, parseAwsCredential } from '../egress/aws';
import type { Injection } from '../egress/plan';
import type { SecretBinding } from '../egress/rules';
import type { RefStore } from '../refs/store';
import type { LookupContext, RefKind } from '../refs/types';

export interface AwsBindings {
  readonly injections: readonly Injection[];
  /** Which source answered each binding's reference (a credential-process source's may be refreshed). */
  readonly sources: ReadonlyMap<string, string>;
  /** The variables the run gets (AWS_CA_BUNDLE is added once the proxy's bundle is known). */
  env(caBundle: string | undefined): Record<string, string>;
}

export async function resolveAwsBindings(
  refs: RefStore,
  bindings: readonly SecretBinding[],
  lookup: LookupContext,
  mask: (value: string, label: string) => void,
): Promise<AwsBindings | undefined> {
  const aws = bindings.filter((binding) => binding.delivery === 'aws-sigv4');
  if (aws.length === 0) return undefined;
  const injections: Injection[] = [];
  const sources = new Map<string, string>();
  let variables: Record<string, string> | undefined;
  for (const binding of aws) {
    const colon = binding.ref.indexOf(':');
    const resolved = await refs.lookup(binding.ref.slice(0, colon) as RefKind, binding.ref.slice(colon + 1), lookup);
    if (!resolved.found || !resolved.value) continue;
    const real = parseAwsCredential(binding.ref, resolved.value.reveal());
    if (resolved.source) sources.set(binding.ref, resolved.source);
    for (const part of [real.accessKeyId, real.secretAccessKey, real.sessionToken]) if (part !== undefined) mask(part, binding.ref);
    const placeholder = createAwsPlaceholder(real);
    injections.push(...createAwsInjections(binding, real, placeholder));
    // One pair per environment: the first binding that resolves is the run's.
    variables ??= getAwsEnv(placeholder, undefined);
  }
  if (injections.length === 0 || !variables) return undefined;
  const base = variables;
  return { injections, sources, env: (caBundle) => ({ ...base, ...(caBundle !== undefined ? { AWS_CA_BUNDLE: caBundle } : {}) }) };
}
