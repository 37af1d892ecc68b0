/*
 * A response passed through as bytes. Where nothing in a response needs to be read (no value was
 * injected in the run, so the response masker has nothing to find; the request had no body to
 * swap or scan), the proxy writes the decided request head itself on a connection of its own and
 * reads back only the response's head and framing: the body's bytes go on to the client as the
 * socket read them. Node's HTTP client parsed every body byte and copied it into a Buffer of its
 * own before this (`socketOnData`, and the garbage those copies made, were a third of the plain
 * path's busy time: docs/performance.md).
 *
 * The response to the client is still written through the proxy's ServerResponse, with the
 * framing the proxy chose (its Content-Length, or chunks of its own), so the client's connection
 * stays in step: each request on a kept-alive connection is read and decided as before, and a
 * response can never carry bytes the client would take for the answer to its next request. A
 * response head that is malformed, ambiguous (Transfer-Encoding with Content-Length, lengths that
 * disagree) or too large is refused with 502, as Node's parser refuses it.
 *
 * A response that must be cleaned (a value was injected into its request) is read the same way,
 * with a ResponseCleaner: its head is checked and cleaned before the client's response begins, and
 * its body, out of its framing, goes through the cleaner's stages. Node's HTTP client parsed and
 * re-buffered every body byte of the intercepted HTTPS path before it reached the masker.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { HOP_BY_HOP } from './proxy-core';

/** The longest response head read (Node's default --max-http-header-size). */
const MAX_HEAD_BYTES = 16 * 1024;
/** The longest chunk-size line (with extensions) read in a chunked body. */
const MAX_CHUNK_LINE = 4096;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Field values as Node's writeHead accepts them: no control characters but tab.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const STATUS_LINE = /^HTTP\/1\.[01] ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;
// Methods Node's client sends without a length when there is no body; any other gets `Content-Length: 0`.
const NO_LENGTH_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

/** A response head the proxy will not pass on. */
export class BadResponse extends Error {
  readonly code = 'malformed-response';
}

/** The request head to send, or undefined when one of its parts cannot go into a head as it is (the caller then lets Node's client refuse it). */
export function formatRequestHead(method: string, target: string, headers: readonly string[]): Buffer | undefined {
  if (!TOKEN.test(method) || !/^[\x21-\x7e]+$/.test(target)) return undefined;
  let head = `${method} ${target} HTTP/1.1\r\n`;
  let length = false;
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i];
    const value = headers[i + 1];
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) return undefined;
    const lower = name.toLowerCase();
    // The connection is this request's alone (as Node's client without an agent makes it).
    if (lower === 'connection') continue;
    if (lower === 'content-length' || lower === 'transfer-encoding') length = true;
    head += `${name}: ${value}\r\n`;
  }
  if (!length && !NO_LENGTH_METHODS.has(method)) head += 'Content-Length: 0\r\n';
  head += 'Connection: close\r\n\r\n';
  return Buffer.from(head, 'latin1');
}

interface ResponseHead {
  readonly status: number;
  /** Name, value, name, value: the hop-by-hop ones left out. */
  readonly headers: string[];
  /** How the body ends: its length, chunked, at the connection's end, or none at all. */
  readonly framing: { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' } | { kind: 'none' };
}

/** Parse one response head (the bytes before its empty line). */
export function parseResponseHead(text: string, method: string): ResponseHead {
  const lines = text.split('\r\n');
  const status = STATUS_LINE.exec(lines[0]);
  if (!status) throw new BadResponse('the upstream sent a malformed status line');
  const code = Number(status[1]);
  const headers: string[] = [];
  let lengths: string[] | undefined;
  let codings: string | undefined;
  for (let i = 1; i < lines.length; i += 1) {
    const line = lines[i];
    const colon = line.indexOf(':');
    // A line folded onto the one before (obsolete), a bare CR or LF, or no name: refused.
    if (colon <= 0 || /[\r\n]/.test(line)) throw new BadResponse('the upstream sent a malformed header line');
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^[\t ]+|[\t ]+$/g, '');
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new BadResponse('the upstream sent a malformed header');
    const lower = name.toLowerCase();
    if (lower === 'content-length') (lengths ??= []).push(...value.split(',').map((part) => part.trim()));
    else if (lower === 'transfer-encoding') codings = codings === undefined ? value : `${codings}, ${value}`;
    if (!HOP_BY_HOP.has(lower) && lower !== 'content-length') headers.push(name, value);
  }
  if (codings !== undefined && lengths !== undefined) throw new BadResponse('the upstream sent both Transfer-Encoding and Content-Length');
  let length: number | undefined;
  if (lengths !== undefined) {
    if (!lengths.every((part) => /^\d{1,15}$/.test(part) && part === lengths[0])) throw new BadResponse('the upstream sent an invalid or conflicting Content-Length');
    length = Number(lengths[0]);
    // Passed on once, as the one number it is (`10, 10` and two equal fields are that too).
    headers.push('Content-Length', String(length));
  }
  let framing: ResponseHead['framing'];
  if (method === 'HEAD' || code === 204 || code === 304 || code < 200) framing = { kind: 'none' };
  else if (codings !== undefined) framing = codings.split(',').at(-1)!.trim().toLowerCase() === 'chunked' ? { kind: 'chunked' } : { kind: 'close' };
  else if (length !== undefined) framing = { kind: 'length', length };
  else framing = { kind: 'close' };
  return { status: code, headers, framing };
}

/*
 * A chunked body's data, read out of its framing as views of the bytes read (no copy): the size
 * lines, the CRLF after each chunk and the trailer section are read and dropped.
 */
class Dechunker {
  #state: 'size' | 'data' | 'data-end' | 'trailer' | 'done' = 'size';
  #line = '';
  #left = 0;

  get done(): boolean {
    return this.#state === 'done';
  }

  /** Hands each piece of data in `bytes` to `out`; throws BadResponse on broken framing. */
  push(bytes: Buffer, out: (data: Buffer) => void): void {
    let at = 0;
    while (at < bytes.length && this.#state !== 'done') {
      if (this.#state === 'data') {
        const take = Math.min(this.#left, bytes.length - at);
        out(bytes.subarray(at, at + take));
        at += take;
        this.#left -= take;
        if (this.#left === 0) this.#state = 'data-end';
        continue;
      }
      const newline = bytes.indexOf(0x0a, at);
      const end = newline === -1 ? bytes.length : newline + 1;
      this.#line += bytes.toString('latin1', at, end);
      at = end;
      if (this.#line.length > MAX_CHUNK_LINE) throw new BadResponse('the upstream sent an overlong chunk line');
      if (newline === -1) break;
      if (!this.#line.endsWith('\r\n')) throw new BadResponse('the upstream sent a bare LF in chunked framing');
      const line = this.#line.slice(0, -2);
      this.#line = '';
      if (this.#state === 'data-end') {
        if (line !== '') throw new BadResponse('the upstream sent a chunk longer than its size');
        this.#state = 'size';
      } else if (this.#state === 'size') {
        const size = /^([0-9A-Fa-f]{1,12})[\t ]*(?:;.*)?$/.exec(line);
        if (!size) throw new BadResponse('the upstream sent a malformed chunk size');
        this.#left = parseInt(size[1], 16);
        this.#state = this.#left === 0 ? 'trailer' : 'data';
      } else if (line === '') {
        this.#state = 'done';
      }
    }
  }
}

/** The first read buffer's size (libuv's own), and the most it grows to while reads fill it. */
const FIRST_READ_BYTES = 64 * 1024;
const MAX_READ_BYTES = 1024 * 1024;

/*
 * The read buffers of one upstream connection, used again once the bytes read into them have
 * been written on (a connection opened with these as its `onread`). A socket read into a fresh
 * 64 KiB Buffer each time, and those Buffers, external memory to V8, made the proxy's process
 * collect garbage every few MiB of body (docs/performance.md). A buffer goes back to the free list
 * only when every write of a view of it has called back (the kernel has its bytes); one whose
 * write never calls back is simply never used again.
 */
export class ReadBuffers {
  readonly #free: Buffer[] = [];
  readonly #holds = new Map<Buffer, number>();
  #consumer: ((bytes: Buffer, owner?: Buffer) => void) | undefined;
  readonly #early: Buffer[] = [];

  #size = FIRST_READ_BYTES;

  /*
   * For net.connect's `onread`. A read that fills its buffer doubles the size of the next ones,
   * up to 1 MiB: a short response costs one 64 KiB buffer, a download reads (and writes on) in
   * larger pieces. Measured with 100 MiB plain-HTTP downloads by curl from a sandboxed run: 64 KiB
   * reads 0.69-1.59 ms of CPU per MiB and 0.7-1.1 GB/s, 256 KiB 0.68-0.92 ms and 0.9-1.4 GB/s,
   * 1 MiB 0.50-0.66 ms and 1.5-2.0 GB/s (interleaved, load average 8 to 9 on 2 cores).
   */
  readonly onread = {
    buffer: (): Buffer => {
      let buffer = this.#free.pop();
      while (buffer !== undefined && buffer.length < this.#size) buffer = this.#free.pop();
      return buffer ?? Buffer.allocUnsafeSlow(this.#size);
    },
    callback: (length: number, buffer: Buffer): boolean => {
      if (length === buffer.length && this.#size < MAX_READ_BYTES) this.#size *= 2;
      this.hold(buffer);
      try {
        // Bytes before a consumer (a server that speaks first) are kept for it, copied.
        if (this.#consumer) this.#consumer(buffer.subarray(0, length), buffer);
        else this.#early.push(Buffer.from(buffer.subarray(0, length)));
      } finally {
        this.release(buffer);
      }
      return true;
    },
  };

  /** Where the bytes read go from now on. */
  consume(consumer: (bytes: Buffer, owner?: Buffer) => void): void {
    this.#consumer = consumer;
    const early = this.#early.splice(0);
    for (const bytes of early) consumer(bytes);
  }

  hold(buffer: Buffer): void {
    this.#holds.set(buffer, (this.#holds.get(buffer) ?? 0) + 1);
  }

  release(buffer: Buffer): void {
    const left = (this.#holds.get(buffer) ?? 1) - 1;
    if (left > 0) return void this.#holds.set(buffer, left);
    this.#holds.delete(buffer);
    if (buffer.length >= this.#size) this.#free.push(buffer);
  }
}

/*
 * What a cleaned response goes through instead of being passed on as it is: the head's fields
 * (hop-by-hop ones already left out; Content-Length as the one number it is) and the body.
 */
export interface ResponseCleaner {
  /** The fields to send, or undefined when the cleaner refused the response (it answered the client; nothing more is read). */
  head(status: number, headers: string[]): string[] | undefined;
  /** The body's stages, made once the head was sent: `input` is written the body and ended; `output` is the client's body. */
  body(): { input: Writable; output: Readable };
}

export interface PassThroughHandlers {
  /** The response head was read and the client's response begun; the body is on its way. */
  readonly onResponse: (status: number) => void;
  /** The body ended where its framing said (the client's response is ended). */
  readonly onEnd: () => void;
  /** The upstream failed, or sent what cannot be passed on; `answered` when the client's response had begun. */
  readonly onError: (error: Error, answered: boolean) => void;
}

/**
 * Send `head` on `upstream` (an open connection) and pass its response to `res`. The caller
 * has made sure nothing in the response needs reading (see the header comment).
 */
export function passResponse(upstream: Socket, head: Buffer, method: string, res: ServerResponse, handlers: PassThroughHandlers, buffers?: ReadBuffers, cleaner?: ResponseCleaner): void {
  let pending: Buffer | undefined;
  // The cleaner's body stages, once the head has gone out (the body goes to `sink`, not to `res`).
  let sink: Writable | undefined;
  let framing: ResponseHead['framing'] | undefined;
  let left = 0;
  let dechunker: Dechunker | undefined;
  let finished = false;
  let answered = false;

  const fail = (error: Error): void => {
    if (finished) return;
    finished = true;
    upstream.off('data', onData);
    upstream.destroy();
    handlers.onError(error, answered);
  };
  const end = (): void => {
    if (finished) return;
    finished = true;
    upstream.off('data', onData);
    upstream.destroy();
    // A cleaned body ends when its stages have written the last of it (onEnd is theirs to call).
    if (sink) return void sink.end();
    res.end();
    handlers.onEnd();
  };
  let paused = false;
  // The read buffer the bytes in hand are a view of, when the connection reads into ReadBuffers.
  let owner: Buffer | undefined;
  const write = (data: Buffer): void => {
    if (data.length === 0) return;
    let written;
    if (sink) {
      // Stages that failed have cut the client's response off: nothing more goes to them.
      if (sink.destroyed) return;
      written = sink.write(data);
      if (!written && !paused) {
        paused = true;
        upstream.pause();
        sink.once('drain', () => {
          paused = false;
          upstream.resume();
        });
      }
      return;
    }
    if (owner && buffers) {
      const held = owner;
      buffers.hold(held);
      written = res.write(data, () => buffers.release(held));
    } else {
      written = res.write(data);
    }
    if (!written && !paused) {
      paused = true;
      upstream.pause();
      res.once('drain', () => {
        paused = false;
        upstream.resume();
      });
    }
  };
  const body = (bytes: Buffer): void => {
    if (framing!.kind === 'length') {
      const take = Math.min(left, bytes.length);
      write(take === bytes.length ? bytes : bytes.subarray(0, take));
      left -= take;
      if (left === 0) end();
    } else if (framing!.kind === 'chunked') {
      dechunker!.push(bytes, write);
      if (dechunker!.done) end();
    } else {
      write(bytes);
    }
  };
  const readHead = (bytes: Buffer): void => {
    let buffered = pending ? Buffer.concat([pending, bytes]) : bytes;
    pending = undefined;
    for (;;) {
      const blank = buffered.indexOf('\r\n\r\n', 0, 'latin1');
      if (blank === -1) {
        if (buffered.length > MAX_HEAD_BYTES) throw new BadResponse('the upstream sent an overlong response head');
        pending = Buffer.from(buffered);
        return;
      }
      if (blank > MAX_HEAD_BYTES) throw new BadResponse('the upstream sent an overlong response head');
      const parsed = parseResponseHead(buffered.toString('latin1', 0, blank), method);
      buffered = buffered.subarray(blank + 4);
      // An interim response (100 Continue, 103 Early Hints) is read and dropped, as Node's client does; 101 was never asked for.
      if (parsed.status === 101) throw new BadResponse('the upstream switched protocols unasked');
      if (parsed.status < 200) continue;
      framing = parsed.framing;
      let headers = parsed.headers;
      if (cleaner) {
        const kept = cleaner.head(parsed.status, headers);
        if (!kept) {
          finished = true;
          upstream.off('data', onData);
          upstream.destroy();
          return;
        }
        headers = kept;
      }
      res.writeHead(parsed.status, headers as unknown as Record<string, string>);
      answered = true;
      handlers.onResponse(parsed.status);
      if (cleaner) {
        const stages = cleaner.body();
        sink = stages.input;
        stages.output.once('end', () => handlers.onEnd());
        stages.output.pipe(res);
      }
      if (framing.kind === 'none' || (framing.kind === 'length' && framing.length === 0)) return end();
      if (framing.kind === 'length') left = framing.length;
      if (framing.kind === 'chunked') dechunker = new Dechunker();
      if (buffered.length > 0) body(buffered);
      return;
    }
  };
  const onData = (bytes: Buffer, from?: Buffer): void => {
    if (finished) return;
    owner = from;
    try {
      if (framing === undefined) readHead(bytes);
      else body(bytes);
    } catch (error) {
      fail(error as Error);
    } finally {
      owner = undefined;
    }
  };
  if (buffers) buffers.consume(onData);
  else upstream.on('data', onData);
  upstream.once('end', () => {
    if (framing?.kind === 'close') end();
    else fail(Object.assign(new Error('the upstream closed the connection before the response ended'), { code: 'ECONNRESET' }));
  });
  upstream.on('error', (error) => fail(error));
  upstream.once('close', () => fail(Object.assign(new Error('the upstream connection closed'), { code: 'ECONNRESET' })));
  // The client went away: nothing more to read for it.
  res.once('close', () => {
    if (!finished) {
      finished = true;
      upstream.destroy();
    }
  });
  upstream.write(head);
}
