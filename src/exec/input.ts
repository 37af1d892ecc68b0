/*
 * stdin data for a background run goes through the same reference resolution as commands:
 * the policy decides on the tokens (for the run's command), values are revealed and checked
 * by the shared step (resolve.ts), and each value is registered with the run's redactor before
 * it is written, so the terminal's echo of it is masked. No shell is involved, so values are
 * written literally.
 */
import { ExecgateError } from '../errors';
import type { EffectivePolicy } from '../policy/effective';
import { decideRequest } from '../policy/decide';
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
  const resolution = await refs.resolveTokens(tokens);
  const values = new Map<string, string>();
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
