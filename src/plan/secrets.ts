/*
 * The secrets step's helpers: suggestions for unknown references, and the gateway's own secrets
 * every run masks besides the values it resolved.
 */
import { getParentPasswords } from '../egress/upstream';
import type { SanitizedEnv } from '../env/sanitize';
import { isExecgateSecretName, isSecretName } from '../env/secrets';
import type { Redactor } from '../redact';
import type { RefStore } from '../refs/store';
import type { RefKind } from '../refs/types';
import type { NormalizedRequest } from './options';
import type { PlanSecret } from './resources';
import type { PrepareContext } from './types';

export /** "Did you mean" for each reference no source knew, as `<<kind:name>>` (names only, never values). */
async function getSuggestions(refs: RefStore, resolved: ReadonlyArray<{ kind: RefKind; id: string; ref: string; found: boolean }>): Promise<Map<string, readonly string[]>> {
  const unknown = resolved.filter((each) => !each.found);
  const suggested = await Promise.all(unknown.map((each) => refs.suggest(each.kind, each.id)));
  return new Map(unknown.map((each, index) => [each.ref, Object.freeze(suggested[index].map((name) => `<<${each.kind}:${name}>>`))]));
}

/**
 * Mask what the run may meet besides its resolved values: the secrets its environment passes,
 * withholds or drops, the gateway's own EXECGATE_SECRET_* values and parent proxy password, and
 * the values earlier runs of this gateway met (`context.remembered`, which learns this run's).
 * `mask` registers a value in `redactor` and lists it among `secrets`; the remembered values are
 * compiled once for all runs and become `redactor`'s base, and `carry` only lists them (a
 * background supervisor rebuilds its redactor from the list).
 */
export function maskGatewaySecrets(
  mask: (value: string, label: string) => void,
  secrets: readonly PlanSecret[],
  { context, request, sanitized, redactor, carry }: { context: PrepareContext; request: NormalizedRequest; sanitized: SanitizedEnv; redactor: Redactor; carry: (value: string, label: string) => void },
): void {
  const { policy } = context;
  const outer = mask;
  // A value the gateway remembers is masked through the remembered values' redactor, the base
  // set below (compiled once for every run), under the label it was remembered with, as
  // gateway.maskKnown does: registering it again cost every run its spellings (about 0.25 ms
  // for one EXECGATE_SECRET_* value, each run, even one that prints nothing). It is listed in
  // `secrets` by `carry` below.
  mask = (value, label) => {
    if (context.remembered?.has(value) !== true) outer(value, label);
  };
  for (const { name, value } of sanitized.passedSecrets) {
    if (value.length >= policy.secrets.minLength) mask(value, `env:${name}`);
  }
  // Withheld values never reach the child, but the child may meet them another way (a file,
  // a second reference); mask them too when they are long enough to mask meaningfully.
  // A removed variable with a secret's name (an allowlist drops EXECGATE_SECRET_* as `removed`)
  // is masked for the same reason, and so is every EXECGATE_SECRET_* value of the gateway's own
  // environment: the env source hands those out, so they are known secrets whether or not this
  // run's environment would have carried them.
  const inheritedOrRequested = { ...(request.envMode === 'replace' ? {} : context.env), ...request.env };
  const removedSecrets = sanitized.removed.filter((name) => isSecretName(name));
  for (const name of [...sanitized.withheld, ...removedSecrets]) {
    const value = inheritedOrRequested[name];
    if (typeof value === 'string' && value.length >= policy.secrets.minLength) mask(value, `env:${name}`);
  }
  for (const [name, value] of Object.entries(context.env)) {
    if (isExecgateSecretName(name) && typeof value === 'string' && value.length >= policy.secrets.minLength) mask(value, `env:${name}`);
  }
  // A parent proxy's password (the gateway's HTTPS_PROXY, or the policy's) is a secret of the gateway.
  for (const password of getParentPasswords(context.env, policy.network.upstream)) {
    if (password.length >= policy.secrets.minLength) mask(password, 'env:HTTPS_PROXY');
  }
  // Values earlier runs met: a file, file name or socket one run filled with a value reaches the
  // caller masked when this run prints it. Labels this run registered first stay: the shared
  // redactor of them is scanned below the run's own values (redact/memory.ts).
  if (context.remembered) {
    const own = secrets.length;
    redactor.setBase(context.remembered.getShared(policy.secrets.minLength));
    for (const [value, label] of context.remembered.entries()) {
      if (value.length >= policy.secrets.minLength) carry(value, label);
    }
    // The first label a value got in this run is the one its output shows: remembered so.
    const first = new Map<string, string>();
    for (const { value, label } of secrets.slice(0, own)) if (!first.has(value)) first.set(value, label);
    for (const [value, label] of first) context.remembered.remember(value, label);
  }
}
