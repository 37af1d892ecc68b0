/*
 * A run's SSH agent: a UNIX socket the gateway serves (bound into the sandbox), speaking the SSH
 * agent protocol, holding the private keys the policy binds to hosts. The keys stay in this
 * process; the run gets signatures, and only these:
 *   - for a key the run is given (the policy's `delivery: ssh-agent` bindings),
 *   - on an agent connection bound to an SSH session (`session-bind@openssh.com`) whose host
 *     proved it holds a host key that the key's binding names (session.ts checks the proof),
 *   - over a publickey user-authentication request for that very session.
 * Anything else is refused (SSH_AGENT_FAILURE): a signature over data of the run's choosing, a
 * session with another server, a forwarded agent, adding, removing or locking keys. Every
 * signature and every refusal is an `ssh.sign` record (fingerprints and host names, never a key).
 *
 * Identities and signing go through ssh2's AgentProtocol (server side). It does not know
 * SSH_AGENTC_EXTENSION, which carries session-bind, so that is read here, by hand, in a small
 * framing layer in front of it: messages are cut from the socket (at most OpenSSH's 256 KiB each);
 * a request for identities (exactly one byte) and a well-formed sign request are passed to
 * AgentProtocol, and its reply awaited before the next message is read, so replies keep the order
 * of requests; an extension is answered here; everything else gets SSH_AGENT_FAILURE here.
 * AgentProtocol is not given the rest because of how it treats them: for a message it does not
 * know it does not skip the body, and reads the body as further messages (one message would get
 * several answers, or hide another request inside it); and a sign request whose fields it cannot
 * read stops it from reading anything after.
 */
import { chmodSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { AgentProtocol, type AgentInboundRequest } from 'ssh2';
import { convertSignature } from 'ssh2/lib/protocol/utils.js';
import { parseKey, type HostKey, type ParsedKey, type PrivateSshKey } from './keys';
import { checkUserauthRequest, readSessionBind, SESSION_BIND, type SessionBind } from './session';
import { agentFrame, WireReader } from './wire';

const SSH_AGENT_FAILURE = 5;
const SSH_AGENT_SUCCESS = 6;
const SSH_AGENTC_REQUEST_IDENTITIES = 11;
const SSH_AGENTC_SIGN_REQUEST = 13;
const SSH_AGENTC_EXTENSION = 27;
/** OpenSSH's ssh-agent refuses longer messages (AGENT_MAX_LEN). */
const MAX_MESSAGE = 256 * 1024;
/** Requests read and not yet answered, past which the connection is read no further until they are. */
const MAX_QUEUED = 64;

/** One key the agent holds, with what its binding allows. */
export interface AgentKey {
  readonly ref: string;
  readonly key: PrivateSshKey;
  /** `host:port` of the binding, for the record. */
  readonly hosts: readonly string[];
  readonly hostKeys: readonly HostKey[];
}

/** One `ssh.sign` record's fields. */
export interface SshSignRecord {
  readonly runId: string;
  /** The key asked for (`SHA256:...`); absent when the request named no key the agent holds. */
  readonly key?: string;
  readonly ref?: string;
  /** The host key the connection is bound to, when it is. */
  readonly hostKey?: string;
  readonly hosts: readonly string[];
  readonly allowed: boolean;
  readonly reason: string;
}

export interface SshAgentOptions {
  readonly runId: string;
  readonly socketPath: string;
  readonly keys: readonly AgentKey[];
  readonly onSign?: (record: SshSignRecord) => void;
}

export class SshAgent {
  readonly #options: SshAgentOptions;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #closed = false;

  private constructor(options: SshAgentOptions, server: Server) {
    this.#options = options;
    this.#server = server;
  }

  /** Listen on `socketPath` (mode 0600: the run's user, who is the gateway's, connects; nobody else). */
  static async listen(options: SshAgentOptions): Promise<SshAgent> {
    const server = createServer();
    const agent = new SshAgent(options, server);
    server.on('connection', (socket) => agent.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.socketPath, () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
    chmodSync(options.socketPath, 0o600);
    return agent;
  }

  get socketPath(): string {
    return this.#options.socketPath;
  }

  /** Stop listening and end every connection (the run has ended). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    this.#sockets.add(socket);
    const connection = new AgentConnection(socket, this.#options);
    socket.on('close', () => {
      this.#sockets.delete(socket);
      connection.end();
    });
  }
}

/** `string key_blob, string data, uint32 flags` and nothing more, with a key blob ssh2 can read. */
function isSignRequest(body: Buffer): boolean {
  const reader = new WireReader(body);
  const blob = reader.string();
  const data = reader.string();
  const flags = reader.uint32();
  if (blob === undefined || data === undefined || flags === undefined || !reader.done) return false;
  const key = parseKey(blob);
  return !(key instanceof Error) && !Array.isArray(key);
}

class AgentConnection {
  readonly #socket: Socket;
  readonly #options: SshAgentOptions;
  readonly #protocol = new AgentProtocol(false);
  #buffer: Buffer = Buffer.alloc(0);
  #bound: SessionBind | undefined;
  /** Messages are handled one at a time: the next waits for the previous reply. */
  #queue: Promise<void> = Promise.resolve();
  #pendingReply: (() => void) | undefined;
  /** Requests read and not yet answered. */
  #queued = 0;

  constructor(socket: Socket, options: SshAgentOptions) {
    this.#socket = socket;
    this.#options = options;
    this.#protocol.on('data', (reply: Buffer) => {
      if (!socket.destroyed) socket.write(reply);
      const pending = this.#pendingReply;
      this.#pendingReply = undefined;
      pending?.();
    });
    this.#protocol.on('error', () => socket.destroy());
    this.#protocol.on('identities', (req: AgentInboundRequest) => {
      this.#protocol.getIdentitiesReply(req, options.keys.map((entry) => entry.key.key));
    });
    this.#protocol.on('sign', (req: AgentInboundRequest, pubKey: ParsedKey, data: Buffer, flags: { hash?: string }) => {
      this.#sign(req, pubKey, data, flags);
    });
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('drain', () => this.#flow());
  }

  /*
   * Backpressure: a command that writes requests and never reads the answers must not make the
   * gateway read them all and hold every answer (5 bytes in, some 90 out, for ever). The socket is
   * read no further while MAX_QUEUED requests wait or while the answers already written wait to
   * be taken (writableNeedDrain), and read again once both have cleared.
   */
  #flow(): void {
    if (this.#socket.destroyed) return;
    if (this.#queued >= MAX_QUEUED || this.#socket.writableNeedDrain) this.#socket.pause();
    else this.#socket.resume();
  }

  end(): void {
    this.#protocol.destroy();
  }

  #read(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    while (this.#buffer.length >= 4) {
      const length = this.#buffer.readUInt32BE(0);
      if (length === 0 || length > MAX_MESSAGE) {
        this.#socket.destroy();
        return;
      }
      if (this.#buffer.length < 4 + length) return;
      const frame = this.#buffer.subarray(0, 4 + length);
      this.#buffer = this.#buffer.subarray(4 + length);
      this.#queued += 1;
      this.#queue = this.#queue.then(() => this.#handle(frame)).catch(() => { this.#socket.destroy(); }).finally(() => {
        this.#queued -= 1;
        this.#flow();
      });
    }
    this.#flow();
  }

  #handle(frame: Buffer): Promise<void> | void {
    if (this.#socket.destroyed) return;
    const type = frame[4];
    if (type === SSH_AGENTC_EXTENSION) {
      this.#socket.write(agentFrame(this.#extension(frame.subarray(5)) ? SSH_AGENT_SUCCESS : SSH_AGENT_FAILURE));
      return;
    }
    const passed = type === SSH_AGENTC_REQUEST_IDENTITIES ? frame.length === 5 : type === SSH_AGENTC_SIGN_REQUEST && isSignRequest(frame.subarray(5));
    if (!passed) {
      // Adding, removing or locking keys, smartcards, anything malformed: this agent's keys are the policy's.
      if (type === SSH_AGENTC_SIGN_REQUEST) this.#record({ hosts: this.#allHosts(), allowed: false, reason: 'malformed sign request' });
      this.#socket.write(agentFrame(SSH_AGENT_FAILURE));
      return;
    }
    return new Promise<void>((resolve) => {
      this.#pendingReply = resolve;
      this.#protocol.write(frame);
    });
  }

  /** SSH_AGENTC_EXTENSION: only session-bind is known; true when the connection is now bound. */
  #extension(body: Buffer): boolean {
    const reader = new WireReader(body);
    const name = reader.string()?.toString('latin1');
    if (name !== SESSION_BIND) return false;
    const bind = readSessionBind(reader);
    const hosts = this.#allHosts();
    if ('refused' in bind) {
      this.#record({ hosts, allowed: false, reason: `session-bind refused: ${bind.refused}`, ...(bind.hostKeyFingerprint ? { hostKey: bind.hostKeyFingerprint } : {}) });
      return false;
    }
    // A forwarded agent would sign for sessions the gateway never sees the start of.
    if (bind.forwarding) {
      this.#record({ hosts, hostKey: bind.hostKeyFingerprint, allowed: false, reason: 'session-bind refused: agent forwarding is not allowed' });
      return false;
    }
    if (this.#bound !== undefined) {
      const same = this.#bound.sessionId.equals(bind.sessionId) && this.#bound.hostKey.equals(bind.hostKey);
      if (!same) this.#record({ hosts, hostKey: bind.hostKeyFingerprint, allowed: false, reason: 'session-bind refused: the connection is already bound to another session' });
      return same;
    }
    this.#bound = bind;
    return true;
  }

  #sign(req: AgentInboundRequest, pubKey: ParsedKey, data: Buffer, flags: { hash?: string }): void {
    const blob = pubKey.getPublicSSH();
    const entry = this.#options.keys.find((candidate) => candidate.key.key.getPublicSSH().equals(blob));
    const refuse = (reason: string): void => {
      this.#record({
        ...(entry ? { key: entry.key.fingerprint, ref: entry.ref } : {}),
        ...(this.#bound ? { hostKey: this.#bound.hostKeyFingerprint } : {}),
        hosts: entry ? entry.hosts : this.#allHosts(),
        allowed: false,
        reason,
      });
      this.#protocol.failureReply(req);
    };
    if (!entry) return refuse('the agent holds no such key');
    const bound = this.#bound;
    if (!bound) return refuse('the agent connection is not bound to an SSH session (no session-bind@openssh.com)');
    if (!entry.hostKeys.some((hostKey) => hostKey.blob.equals(bound.hostKey))) return refuse('the session\'s host key is not one the key\'s binding names');
    const problem = checkUserauthRequest(data, bound, blob);
    if (problem !== undefined) return refuse(problem);
    const raw = entry.key.key.sign(data, flags.hash);
    if (raw instanceof Error) return refuse(`signing failed: ${raw.message}`);
    const signature = entry.key.type.startsWith('ecdsa-') ? convertSignature(raw, entry.key.type) : raw;
    if (!signature) return refuse('signing failed');
    this.#record({ key: entry.key.fingerprint, ref: entry.ref, hostKey: bound.hostKeyFingerprint, hosts: entry.hosts, allowed: true, reason: 'user authentication for the bound session' });
    this.#protocol.signReply(req, signature);
  }

  #allHosts(): string[] {
    return [...new Set(this.#options.keys.flatMap((entry) => entry.hosts))];
  }

  #record(fields: Omit<SshSignRecord, 'runId'>): void {
    try {
      this.#options.onSign?.({ runId: this.#options.runId, ...fields });
    } catch {
      // The audit sink's failure is its own to report; the agent answers regardless.
    }
  }
}
