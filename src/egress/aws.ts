/*
 * The AWS credential of a `delivery: aws-sigv4` binding, and the placeholder pair a run holds
 * instead. The secret's value is the credential as JSON: `{accessKeyId, secretAccessKey,
 * sessionToken?}`, or what an AWS `credential_process` prints (`AccessKeyId`, `SecretAccessKey`,
 * `SessionToken`), so a credential-process source (refs/sources/process.ts) can answer for it.
 *
 * The placeholder has the real shape (`AKIA`/`ASIA` and 16 upper-case letters and digits, a
 * 40-character secret, a session token when the real one has one), drawn per run: SDKs that check
 * a key's format accept it, and a run's placeholder is worth nothing to another run (the proxy
 * re-signs only the requests signed with the placeholder of the run they arrive from). Each part
 * is an injection whose sentinel is the placeholder: the proxy's sentinel checks refuse a
 * placeholder anywhere but a signature to the bound hosts, and the masker removes the real parts
 * from responses and output.
 */
import { randomInt } from 'node:crypto';
import { ExecgateError } from '../errors';
import type { Injection } from './plan';
import type { SecretBinding } from './rules';
import type { AwsCredential } from './sigv4';

const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const SECRET_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Read a secret's value as an AWS credential; the error names the reference, never the value. */
export function parseAwsCredential(ref: string, value: string): AwsCredential {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw invalid(ref, 'it is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid(ref, 'it is not a JSON object');
  const fields = parsed as Record<string, unknown>;
  const pick = (a: string, b: string): unknown => (fields[a] !== undefined ? fields[a] : fields[b]);
  const accessKeyId = pick('accessKeyId', 'AccessKeyId');
  const secretAccessKey = pick('secretAccessKey', 'SecretAccessKey');
  const sessionToken = pick('sessionToken', 'SessionToken');
  if (typeof accessKeyId !== 'string' || !/^[A-Za-z0-9]{16,128}$/.test(accessKeyId)) throw invalid(ref, '`accessKeyId` (or `AccessKeyId`) is missing or not an access key id');
  if (typeof secretAccessKey !== 'string' || secretAccessKey.length < 16 || /\s/.test(secretAccessKey)) throw invalid(ref, '`secretAccessKey` (or `SecretAccessKey`) is missing or not a secret key');
  if (sessionToken !== undefined && sessionToken !== null && (typeof sessionToken !== 'string' || sessionToken === '' || /\s/.test(sessionToken))) {
    throw invalid(ref, '`sessionToken` (or `SessionToken`) is not a token');
  }
  return Object.freeze({ accessKeyId, secretAccessKey, ...(typeof sessionToken === 'string' ? { sessionToken } : {}) });
}

/** A placeholder pair of the real one's shape, drawn now. */
export function createAwsPlaceholder(real: AwsCredential): AwsCredential {
  const draw = (alphabet: string, length: number): string => Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('');
  const accessKeyId = `${real.sessionToken !== undefined ? 'ASIA' : 'AKIA'}${draw(UPPER_DIGITS, 16)}`;
  const secretAccessKey = draw(SECRET_CHARS, 40);
  // A session token's length varies; the placeholder's is its own, long enough to be found.
  const sessionToken = real.sessionToken !== undefined ? `IQoJb3JpZ2luX2Vj${draw(SECRET_CHARS, 200)}` : undefined;
  return Object.freeze({ accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) });
}

/** The injections that carry one AWS binding to the proxy (one per part of the credential). */
export function createAwsInjections(binding: SecretBinding, real: AwsCredential, placeholder: AwsCredential): Injection[] {
  const parts = (['accessKeyId', 'secretAccessKey', 'sessionToken'] as const).filter((part) => real[part] !== undefined);
  return parts.map((part) => Object.freeze({ ref: binding.ref, value: real[part]!, sentinel: placeholder[part]!, hosts: binding.hosts, binding, aws: part }));
}

/** The variables an AWS SDK or the CLI reads: the placeholder pair, and the proxy's CA bundle. */
export function getAwsEnv(placeholder: AwsCredential, caBundle: string | undefined): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: placeholder.accessKeyId,
    AWS_SECRET_ACCESS_KEY: placeholder.secretAccessKey,
    ...(placeholder.sessionToken !== undefined ? { AWS_SESSION_TOKEN: placeholder.sessionToken } : {}),
    ...(caBundle !== undefined ? { AWS_CA_BUNDLE: caBundle } : {}),
  };
}

function invalid(ref: string, why: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_AWS_CREDENTIAL_INVALID',
    `<<${ref}>> is bound with \`delivery: aws-sigv4\`, but its value is not an AWS credential: ${why}. Expected JSON \`{"accessKeyId": ..., "secretAccessKey": ..., "sessionToken": ...}\` (or credential_process output). Nothing was run.`,
    { ref },
  );
}
