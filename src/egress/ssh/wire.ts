/*
 * Reading the few SSH wire structures the agent checks (RFC 4251 `string`, `byte`, `boolean`):
 * the `session-bind@openssh.com` extension and the user-authentication request a signature is
 * asked for. A reader that runs past the end returns undefined, never throws.
 */
export class WireReader {
  #pos = 0;
  constructor(readonly buffer: Buffer) {}

  get done(): boolean {
    return this.#pos === this.buffer.length;
  }

  byte(): number | undefined {
    if (this.#pos + 1 > this.buffer.length) return undefined;
    return this.buffer[this.#pos++];
  }

  uint32(): number | undefined {
    if (this.#pos + 4 > this.buffer.length) return undefined;
    const value = this.buffer.readUInt32BE(this.#pos);
    this.#pos += 4;
    return value;
  }

  string(): Buffer | undefined {
    const length = this.uint32();
    if (length === undefined || this.#pos + length > this.buffer.length) return undefined;
    const value = this.buffer.subarray(this.#pos, this.#pos + length);
    this.#pos += length;
    return value;
  }
}

/** `uint32 length` + bytes. */
export function wireString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** One agent message: `uint32 length`, `byte type`, the rest. */
export function agentFrame(type: number, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + 1);
  head[4] = type;
  return Buffer.concat([head, body]);
}
