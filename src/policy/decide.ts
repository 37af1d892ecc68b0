/*
 * The policy decision for one request, made on the unresolved command and the references it
 * names, before any value is resolved or anything spawns.
 */
import type { NormalizedRequest } from '../exec/options';
import type { RefToken } from '../refs/types';
import type { EffectivePolicy } from './effective';

export interface Decision {
  readonly allowed: boolean;
  /** The rule that decided (its id or index), when one did. */
  readonly rule?: string;
  /** Why, in words the caller is shown. */
  readonly reason?: string;
}

const ALLOW_BY_DEFAULT: Decision = Object.freeze({ allowed: true, rule: 'default', reason: 'no policy rule matched; the default allows' });

export function decideRequest(_policy: EffectivePolicy, _request: NormalizedRequest, _tokens: readonly RefToken[]): Decision {
  return ALLOW_BY_DEFAULT;
}
