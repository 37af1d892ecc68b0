/*
 * The parts of ssh2 (no type package ships with it) that the SSH agent uses: key parsing and
 * signing, the agent protocol's server side, and the client (tests use it as a peer). Two helpers
 * come from ssh2's protocol internals, which have no public export: the conversions between the
 * signature encodings of OpenSSL (DER) and of SSH (ecdsa's `mpint r, mpint s`).
 */
declare module 'ssh2' {
  import type { Duplex } from 'node:stream';

  export interface ParsedKey {
    readonly type: string;
    readonly comment: string;
    sign(data: Buffer, algo?: string): Buffer | Error;
    verify(data: Buffer, signature: Buffer, algo?: string): boolean | Error;
    isPrivateKey(): boolean;
    getPublicSSH(): Buffer;
  }

  export class AgentInboundRequest {
    getType(): number;
    getContext(): string | undefined;
    hasResponded(): boolean;
  }

  export class AgentProtocol extends Duplex {
    constructor(isClient: boolean);
    failureReply(req: AgentInboundRequest): boolean;
    getIdentitiesReply(req: AgentInboundRequest, keys: readonly ParsedKey[]): boolean;
    signReply(req: AgentInboundRequest, signature: Buffer): boolean;
    on(event: 'identities', listener: (req: AgentInboundRequest) => void): this;
    on(event: 'sign', listener: (req: AgentInboundRequest, pubKey: ParsedKey, data: Buffer, flags: { hash?: string }) => void): this;
    on(event: string, listener: (...args: never[]) => void): this;
  }

  export class Client {
    on(event: string, listener: (...args: never[]) => void): this;
    connect(config: Record<string, unknown>): this;
    exec(command: string, callback: (error: Error | undefined, stream: Duplex & { stderr: NodeJS.ReadableStream }) => void): boolean;
    end(): this;
  }

  export const utils: {
    parseKey(data: Buffer | string, passphrase?: Buffer | string): ParsedKey | ParsedKey[] | Error;
  };
}

declare module 'ssh2/lib/protocol/utils.js' {
  export function sigSSHToASN1(signature: Buffer, type: string): Buffer | undefined;
  export function convertSignature(signature: Buffer, type: string): Buffer | false;
}
