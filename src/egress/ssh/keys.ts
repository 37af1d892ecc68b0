/*
 * SSH keys as execgate handles them: a private key (OpenSSH or PEM) checked before it is stored
 * and parsed again, in the gateway only, when a run's agent starts; host keys as OpenSSH public-key
 * lines (`ssh-ed25519 AAAA... comment`) from a policy; and fingerprints in OpenSSH's own form
 * (`SHA256:` and the unpadded base64 of the key blob's SHA-256), which is what `ssh-add -l` and
 * `ssh-keygen -lf` print and what the audit log records. Parsing is ssh2's (`utils.parseKey`).
 */
import { createHash } from 'node:crypto';
import { ExecgateError } from '../../errors';

/**
 * A key as ssh2 parses it (the part execgate uses). Declared here rather than taken from ssh2,
 * which ships no types, so that execgate's published declarations need nothing of it; ssh2 itself
 * is loaded on first use (a policy without SSH keys never loads it).
 */
export interface ParsedKey {
  readonly type: string;
  readonly comment: string;
  sign(data: Buffer, algo?: string): Buffer | Error;
  verify(data: Buffer, signature: Buffer, algo?: string): boolean | Error;
  isPrivateKey(): boolean;
  getPublicSSH(): Buffer;
}

/** ssh2's `utils.parseKey`, loaded on first use. */
export function parseKey(data: Buffer | string): ParsedKey | ParsedKey[] | Error {
  return (require('ssh2') as { utils: { parseKey(data: Buffer | string): ParsedKey | ParsedKey[] | Error } }).utils.parseKey(data);
}

/** `SHA256:...` of an SSH public key blob. */
export function getFingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

export interface PrivateSshKey {
  readonly key: ParsedKey;
  /** `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, ... */
  readonly type: string;
  readonly fingerprint: string;
}

/**
 * A private key from the text of a key file, or a coded error that says what the text is instead
 * (an encrypted key, a public key, a file with several keys, something that is no key at all).
 * `what` names the source in the message (a file, a reference); the text itself never appears.
 */
export function parsePrivateSshKey(text: string, what: string): PrivateSshKey {
  const parsed = parseQuietly(text);
  if (parsed instanceof Error) {
    if (/encrypted/i.test(parsed.message) || /passphrase/i.test(parsed.message)) {
      throw keyInvalid(`${what} is an encrypted private key. execgate stores keys in its own encrypted stores and uses them without a passphrase: store a decrypted copy (\`cp KEY /tmp/k && ssh-keygen -p -N '' -f /tmp/k\`, then store /tmp/k and delete it).`, 'encrypted');
    }
    throw keyInvalid(`${what} is not an SSH private key ssh2 can read (${parsed.message}). Give an OpenSSH (\`-----BEGIN OPENSSH PRIVATE KEY-----\`) or PEM private key file, such as one \`ssh-keygen -t ed25519\` writes.`, 'unreadable');
  }
  if (Array.isArray(parsed)) {
    throw keyInvalid(`${what} holds ${parsed.length} keys; store one key per secret.`, 'several');
  }
  if (!parsed.isPrivateKey()) {
    throw keyInvalid(`${what} is a public key. Give the private key file (the one without \`.pub\`); the public key is derived from it.`, 'public');
  }
  return Object.freeze({ key: parsed, type: parsed.type, fingerprint: getFingerprint(parsed.getPublicSSH()) });
}

/** A private key already stored (a run's agent): the same checks, worded for a reference. */
export function parseStoredSshKey(value: string, ref: string): PrivateSshKey {
  try {
    return parsePrivateSshKey(value, `<<${ref}>>`);
  } catch (error) {
    if (error instanceof ExecgateError) {
      throw new ExecgateError('EXECGATE_ERR_SSH_KEY_INVALID', `${error.message} It is bound with \`delivery: ssh-agent\` in \`secrets.bind\`; store it with \`execgate secret set NAME --ssh-key FILE\`. Nothing was run.`, { ref });
    }
    throw error;
  }
}

export interface HostKey {
  readonly type: string;
  /** The public key blob (the base64 field of the line, decoded). */
  readonly blob: Buffer;
  readonly key: ParsedKey;
  readonly fingerprint: string;
  /** `TYPE BASE64`, without the comment: what the known-hosts file lists. */
  readonly line: string;
}

/** One OpenSSH public-key line (`TYPE BASE64 [comment]`); throws a message (no code) when it is not one. */
export function parseHostKeyLine(line: string): HostKey {
  const fields = line.trim().split(/\s+/);
  if (fields.length < 2) throw new Error('it is not `TYPE BASE64 [comment]`, as in a `.pub` file or `ssh-keyscan` output');
  const [type, base64] = fields;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) throw new Error('its second field is not base64');
  const parsed = parseQuietly(`${type} ${base64}`);
  if (parsed instanceof Error) throw new Error(`ssh2 cannot read it (${parsed.message})`);
  if (Array.isArray(parsed) || parsed.isPrivateKey()) throw new Error('it is not one public key');
  const blob = Buffer.from(base64, 'base64');
  if (parsed.type !== type && !type.startsWith(parsed.type)) throw new Error(`it says \`${type}\` but holds a \`${parsed.type}\` key`);
  return Object.freeze({ type: parsed.type, blob, key: parsed, fingerprint: getFingerprint(blob), line: `${type} ${base64}` });
}

function parseQuietly(text: string): ParsedKey | ParsedKey[] | Error {
  try {
    return parseKey(text);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function keyInvalid(message: string, problem: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_SSH_KEY_INVALID', message, { problem });
}
