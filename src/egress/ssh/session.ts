/*
 * What the agent checks before it signs: that the agent connection is bound to an SSH session
 * with a host key (OpenSSH's `session-bind@openssh.com`, sent by ssh 8.9 and later after key
 * exchange), that the host really holds that key (its signature over the session identifier), and
 * that the data to sign is a user-authentication request for exactly that session. Together they
 * tie a signature to one server: a command that talks to the agent socket itself cannot get a
 * signature over data of its choosing, nor one for a session with another server, without that
 * server's private host key.
 */
import { sigSSHToASN1 } from 'ssh2/lib/protocol/utils.js';
import { getFingerprint, parseKey } from './keys';
import { WireReader } from './wire';

export const SESSION_BIND = 'session-bind@openssh.com';
const SSH_MSG_USERAUTH_REQUEST = 50;

export interface SessionBind {
  readonly hostKey: Buffer;
  readonly hostKeyFingerprint: string;
  readonly sessionId: Buffer;
  readonly forwarding: boolean;
}

/** The body of a session-bind request after its name; a reason when it is malformed or its signature does not verify. */
export function readSessionBind(reader: WireReader): SessionBind | { refused: string; hostKeyFingerprint?: string } {
  const hostKey = reader.string();
  const sessionId = reader.string();
  const signature = reader.string();
  const forwarding = reader.byte();
  if (hostKey === undefined || sessionId === undefined || signature === undefined || forwarding === undefined || !reader.done) {
    return { refused: 'malformed session-bind request' };
  }
  const hostKeyFingerprint = getFingerprint(hostKey);
  if (!verifyHostSignature(hostKey, sessionId, signature)) return { refused: 'the host signature over the session identifier does not verify', hostKeyFingerprint };
  return { hostKey: Buffer.from(hostKey), hostKeyFingerprint, sessionId: Buffer.from(sessionId), forwarding: forwarding !== 0 };
}

function verifyHostSignature(hostKey: Buffer, sessionId: Buffer, signature: Buffer): boolean {
  const key = parseKey(hostKey);
  if (key instanceof Error || Array.isArray(key)) return false;
  const reader = new WireReader(signature);
  const algorithm = reader.string()?.toString('latin1');
  let blob = reader.string();
  if (algorithm === undefined || blob === undefined || !reader.done) return false;
  const hash = algorithm === 'rsa-sha2-256' ? 'sha256' : algorithm === 'rsa-sha2-512' ? 'sha512' : undefined;
  // The algorithm must be the key's own (rsa may use either SHA-2 form, not SHA-1).
  if (key.type === 'ssh-rsa' ? hash === undefined : algorithm !== key.type) return false;
  if (key.type.startsWith('ecdsa-')) blob = sigSSHToASN1(blob, key.type);
  if (blob === undefined) return false;
  return key.verify(sessionId, blob, hash) === true;
}

/**
 * Whether `data` is a publickey user-authentication request for `session`, by `keyBlob`: OpenSSH's
 * `string session_id, byte 50, string user, string service, string method, bool TRUE, string
 * algorithm, string key [, string host key]` (the last with `publickey-hostbound-v00@openssh.com`).
 */
export function checkUserauthRequest(data: Buffer, session: SessionBind, keyBlob: Buffer): string | undefined {
  const reader = new WireReader(data);
  const sessionId = reader.string();
  if (sessionId === undefined || !sessionId.equals(session.sessionId)) return 'the data to sign is not for the bound session';
  if (reader.byte() !== SSH_MSG_USERAUTH_REQUEST) return 'the data to sign is not a user-authentication request';
  const user = reader.string();
  const service = reader.string();
  const method = reader.string()?.toString('latin1');
  const hasSignature = reader.byte();
  const algorithm = reader.string();
  const key = reader.string();
  if (user === undefined || service === undefined || algorithm === undefined || key === undefined || hasSignature !== 1) return 'malformed user-authentication request';
  if (!key.equals(keyBlob)) return 'the user-authentication request names another key';
  if (method === 'publickey-hostbound-v00@openssh.com') {
    const hostKey = reader.string();
    if (hostKey === undefined || !hostKey.equals(session.hostKey)) return 'the user-authentication request names another host key';
  } else if (method !== 'publickey') {
    return 'the user-authentication request is not for public-key authentication';
  }
  if (!reader.done) return 'malformed user-authentication request';
  return undefined;
}
