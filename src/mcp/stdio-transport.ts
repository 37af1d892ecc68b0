/*
 * The stdio transport: newline-delimited JSON-RPC on stdin/stdout, as the SDK's
 * StdioServerTransport, but answering what that one drops or dies of:
 *   - a line of `maxMessageBytes` or more is not buffered: its bytes are counted and discarded up
 *     to its newline, and the client gets an Invalid Request error (with the request's id when the
 *     start or the end of the line names it, as the SDK client's requests do) and the session goes
 *     on; the SDK's buffer closed the transport, and the server exited 0 saying nothing;
 *   - a line that is not JSON gets -32700 Parse error, one that is JSON but not a JSON-RPC 2.0
 *     message (an id that is an object, no `jsonrpc`) -32600 Invalid Request, both with id null as
 *     JSON-RPC 2.0 requires when the id cannot be told; the SDK answered neither;
 *   - a batch (an array) gets one Invalid Request error per request in it (MCP 2025-06-18 has no
 *     batches, and the SDK server cannot answer them), an empty one a single error.
 * Each refusal is also said on stderr through `log`, without the message's content.
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The SDK's limit, kept: a command is at most 128 KiB, a file tool's content a few MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/** Bytes kept from each end of an oversized line to find its id. */
const ID_WINDOW = 512;

type Id = string | number | null;

function isId(value: unknown): value is string | number {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** The id a line names at its start (`{"jsonrpc":"2.0","id":7,`) or its end (`,"id":7}`), if either does. */
function sniffId(head: string, tail: string): Id {
  const end = /,\s*"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*}\s*$/.exec(tail);
  const start = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*,/.exec(head);
  const found = end?.[1] ?? start?.[1];
  if (found === undefined) return null;
  try {
    const id = JSON.parse(found) as unknown;
    return isId(id) ? id : null;
  } catch {
    return null;
  }
}

export interface StdioTransportOptions {
  readonly maxMessageBytes?: number;
  /** Says on stderr what was refused (never the content). */
  readonly log?: (line: string) => void;
}

export class ExecgateStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #max: number;
  readonly #log: (line: string) => void;
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** Inside an oversized line: bytes seen so far, and its first bytes. */
  #skipping: { bytes: number; head: string; tail: Buffer } | undefined;
  #closed = false;

  constructor(stdin: Readable, stdout: Writable, options: StdioTransportOptions = {}) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#max = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#log = options.log ?? (() => undefined);
  }

  readonly #onData = (chunk: Buffer): void => {
    let rest = chunk;
    while (rest.length > 0) {
      const newline = rest.indexOf(0x0a);
      const part = newline < 0 ? rest : rest.subarray(0, newline);
      rest = newline < 0 ? Buffer.alloc(0) : rest.subarray(newline + 1);
      this.#take(part);
      if (newline >= 0) this.#endLine();
    }
  };

  readonly #onError = (error: Error): void => {
    this.onerror?.(error);
  };

  #take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.#skipping) {
      this.#skipping.bytes += part.length;
      this.#skipping.tail = Buffer.concat([this.#skipping.tail, part]).subarray(-ID_WINDOW);
      return;
    }
    if (this.#bytes + part.length >= this.#max) {
      const head = Buffer.concat([...this.#chunks, part.subarray(0, ID_WINDOW)]).subarray(0, ID_WINDOW).toString('utf8');
      this.#skipping = { bytes: this.#bytes + part.length, head, tail: Buffer.from(part.subarray(-ID_WINDOW)) };
      this.#chunks = [];
      this.#bytes = 0;
      return;
    }
    this.#chunks.push(Buffer.from(part));
    this.#bytes += part.length;
  }

  #endLine(): void {
    if (this.#skipping) {
      const { bytes, head, tail } = this.#skipping;
      this.#skipping = undefined;
      const id = sniffId(head, tail.toString('utf8'));
      this.#log(`refused a message of ${bytes} bytes (the limit is ${this.#max}); the session goes on`);
      this.#reply(id, INVALID_REQUEST, `EXECGATE_ERR_MCP_MESSAGE_TOO_LARGE: The message is ${bytes} bytes; this server reads messages of less than ${this.#max} bytes. Nothing of it was done. Send large data as a file (write it with a command, or the write_file tool in parts).`);
      return;
    }
    const line = Buffer.concat(this.#chunks, this.#bytes).toString('utf8').replace(/\r$/, '');
    this.#chunks = [];
    this.#bytes = 0;
    if (line.trim() === '') return;
    this.#handleLine(line);
  }

  #handleLine(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.#log(`refused a line that is not JSON (${Buffer.byteLength(line)} bytes)`);
      this.#reply(null, PARSE_ERROR, 'Parse error: the message is not valid JSON.');
      return;
    }
    if (Array.isArray(value)) {
      this.#refuseBatch(value);
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = (value as { id?: unknown } | null)?.id;
      const named = value !== null && typeof value === 'object' && isId(id) && (value as { jsonrpc?: unknown }).jsonrpc === '2.0' ? id : null;
      this.#log('refused a message that is not a JSON-RPC 2.0 request, notification or response');
      this.#reply(named, INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message (`jsonrpc` must be "2.0", `method` a string, `id` a string or a number).');
      return;
    }
    this.onmessage?.(parsed.data);
  }

  #refuseBatch(batch: unknown[]): void {
    this.#log(`refused a batch of ${batch.length} messages`);
    const message = 'Invalid Request: batches are not supported (MCP 2025-06-18 has none); send each message on its own line.';
    if (batch.length === 0) {
      this.#reply(null, INVALID_REQUEST, message);
      return;
    }
    // A notification gets no answer, even an error; anything else is answered under its id.
    const answers = batch
      .filter((item) => !(item !== null && typeof item === 'object' && 'method' in item && !('id' in item)))
      .map((item) => {
        const id = (item as { id?: unknown } | null)?.id;
        return { jsonrpc: '2.0', id: isId(id) ? id : null, error: { code: INVALID_REQUEST, message } };
      });
    if (answers.length > 0) void this.#write(`${JSON.stringify(answers)}\n`);
  }

  #reply(id: Id, code: number, message: string): void {
    void this.#write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
  }

  #write(text: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.#closed || this.#stdout.destroyed) {
        resolve();
        return;
      }
      if (this.#stdout.write(text)) resolve();
      else this.#stdout.once('drain', () => resolve());
    });
  }

  async start(): Promise<void> {
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.#write(`${JSON.stringify(message)}\n`);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onError);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#chunks = [];
    this.onclose?.();
  }
}
