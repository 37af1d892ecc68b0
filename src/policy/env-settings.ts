/*
 * What a policy's `env` section tells the environment sanitizer: which variables pass (mode,
 * allowlist), which secret-looking ones may, what is always removed, and what looks like a
 * secret. Read the same way by a run's preparation and by the CLI's notices about `--env`.
 */
import type { SanitizeEnvOptions } from '../env/sanitize';
import type { EffectivePolicy } from './effective';

export type SanitizerSettings = Pick<SanitizeEnvOptions, 'mode' | 'allowlist' | 'allowSecrets' | 'strip' | 'secretNamePatterns' | 'secretValuePatterns'>;

export function getSanitizerSettings(env: EffectivePolicy['env']): SanitizerSettings {
  return {
    mode: env.mode,
    allowlist: env.allowlist,
    allowSecrets: env.allowSecrets,
    strip: env.strip,
    secretNamePatterns: env.secretNamePatterns,
    secretValuePatterns: env.secretValuePatterns,
  };
}
