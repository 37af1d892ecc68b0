/*
 * stdin data for a background run goes through the same reference resolution as commands:
 * the policy decides on the tokens (for the run's command), values are revealed and checked
 * by the shared step (resolve.ts), and each value is registered with the run's redactor before
 * it is written, so the terminal's echo of it is masked. No shell is involved, so values are
 * written literally.
 * Secrets bound to hosts (`secrets.bind`) are checked against what the run's start fixed
 * (egress/plan.ts checkInputEgress) before any store is asked: the run's network rules cannot
 * change once it runs, so a bound secret is written only where the start already holds it to its
 * binding, and an injected one is written as the run's sentinel, never as its value.
 */
import { ExecgateError } from '../errors';
import { checkInputEgress } from '../egress/plan';
import type { EffectivePolicy } from '../policy/effective';
import { decideRequest } from '../policy/decide';
import { getRunWritable } from '../policy/program-path';
import { validateUnknownRefs } from '../policy/unknown-refs';
import type { RefStore } from '../refs/store';
import { scanTokens } from '../refs/tokens';
import type { SpawnPlan } from './prepare';
import { revealValues } from './resolve';

export async function resolveInput(policy: EffectivePolicy, refs: RefStore, plan: SpawnPlan, data: string): Promise<Buffer> {
  const tokens = scanTokens(data, { alias: policy.secrets.alias });
  if (tokens.length === 0) return Buffer.from(data, 'utf8');
  const decision = decideRequest(policy, plan.request, tokens);
  if (!decision.allowed) {
    throw new ExecgateError(
      'EXECGATE_ERR_POLICY_DENIED',
      `The policy (${policy.source}) refused this input: ${decision.reason ?? 'no rule allows it'}. Nothing was written.`,
      { rule: decision.rule, reason: decision.reason },
    );
  }
  const sentinels = checkInputEgress({
    bindings: policy.secrets.bind,
    refs: tokens.map((token) => `${token.kind}:${token.id}`),
    started: plan.resources.egress,
  });
  // An injected secret's value is never asked for: its sentinel stands in for it.
  const resolved = tokens.filter((token) => !sentinels.has(`${token.kind}:${token.id}`));
  const resolution = await refs.resolveTokens(resolved, { runId: plan.runId, isWritable: getRunWritable(plan.sandbox) });
  validateUnknownRefs(policy, resolution.refs, 'written');
  const values = new Map<string, string>(sentinels);
  for (const { ref, value } of revealValues(resolution.refs, policy.secrets.minLength, 'written')) {
    plan.redactor.add(value, `${ref.kind}:${ref.id}`);
    values.set(`${ref.kind}:${ref.id}`, value);
  }
  let text = '';
  let last = 0;
  for (const token of tokens) {
    const value = values.get(`${token.kind}:${token.id}`);
    if (value === undefined) continue;
    text += data.slice(last, token.start) + value;
    last = token.end;
  }
  return Buffer.from(text + data.slice(last), 'utf8');
}
