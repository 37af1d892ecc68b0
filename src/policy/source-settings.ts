/*
 * `secrets.sources` compiled: durations in milliseconds, defaults filled in, and what the schema
 * cannot say checked with its own error code (reported with its position at load time).
 */
import { ExecgateError } from '../errors';
import type { ProcessSourceSpec } from '../refs/sources/process';
import type { SecretSourceDocument } from './schema-def';
import { parseDuration } from './units';

export const DEFAULT_SOURCE_TIMEOUT_MS = 10_000;
export const DEFAULT_SOURCE_MAX_AGE_MS = 5 * 60_000;
/** Names results and audit records already use for the built-in sources. */
const RESERVED = new Set(['memory', 'env', 'keyring', 'vault', 'process']);

export function normalizeSecretSources(input: readonly SecretSourceDocument[] | undefined): readonly ProcessSourceSpec[] {
  if (input === undefined) return Object.freeze([]);
  const seen = new Set<string>();
  return Object.freeze(input.map((fields, index) => {
    const where = `secrets.sources[${index}]`;
    if (RESERVED.has(fields.name)) throw invalid(`\`${where}.name\` is \`${fields.name}\`, the name of a built-in source; choose another (\`onepassword\`, \`vault-kv\`, ...).`);
    if (seen.has(fields.name)) throw invalid(`Two entries of \`secrets.sources\` are named \`${fields.name}\`; names must differ (they name the source in results and audit records).`);
    seen.add(fields.name);
    const other = fields.refs.find((pattern) => !pattern.startsWith('secret:'));
    if (other !== undefined) throw invalid(`\`${where}.refs\` (\`${fields.name}\`) lists \`${other}\`; a source answers \`secret:\` references only (\`decrypt:\` ones are the vault's).`);
    const timeoutMs = fields.timeout === undefined ? DEFAULT_SOURCE_TIMEOUT_MS : parseDuration(fields.timeout);
    if (timeoutMs <= 0) throw invalid(`\`${where}.timeout\` (\`${fields.name}\`) is 0; a source program needs a time limit (default 10s).`);
    return Object.freeze({
      name: fields.name,
      command: Object.freeze([...fields.command]),
      refs: Object.freeze([...fields.refs]),
      format: fields.format ?? 'text',
      timeoutMs,
      maxAgeMs: fields.maxAge === undefined ? DEFAULT_SOURCE_MAX_AGE_MS : parseDuration(fields.maxAge),
    });
  }));
}

function invalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_POLICY_SOURCE_INVALID', message);
}
