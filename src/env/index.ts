/*
 * The environment a child receives: hazards stripped, secret-looking variables withheld,
 * trust redirects reported. See sanitize.ts for the order of decisions.
 */
export { sanitizeEnv, validateRequestedEnv } from './sanitize';
export type { SanitizeEnvOptions, SanitizedEnv } from './sanitize';
export { HAZARD_CATEGORIES, isHazardName, isHazardValue } from './hazards';
export type { HazardCategory } from './hazards';
export { isSecretName, isSecretValue } from './secrets';
