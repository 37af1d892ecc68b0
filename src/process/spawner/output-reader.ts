/*
 * Reading a run's output pipe into one buffer used again for every read, instead of a fresh
 * 64 KiB Buffer per read.
 *
 * Why: every Buffer a read allocates is external memory to V8, and a process that reads a
 * gigabyte that way gets a mark-compact every few tens of MiB once its heap limit was last set
 * from a small heap (docs/performance.md, "Output capture"). net.Socket's `onread` makes libuv
 * read into a buffer of the caller's, handed to a callback as a view; nothing is allocated per
 * read. The view is only good until the callback returns: the next read of any reader of this
 * process overwrites it (they all share one buffer, as reads happen one at a time on the event
 * loop).
 *
 * So the bytes go one of two ways:
 *   - claimed (`claim(sink)`): the run's reader gets each view synchronously, and whatever keeps
 *     bytes past the call copies them (the redactor's held bytes, the captures, the listener);
 *   - otherwise this is an ordinary Readable of copies, for whatever reads the stream before a run
 *     claims it (the sandbox gate's marks, a warm sandbox waiting for its run) or never does.
 * A claim is refused while copies are still buffered here, so bytes keep their order; the run
 * then reads the copies (`'data'`) as any stream.
 */
import { Socket, type OnReadOpts, type SocketConstructorOpts } from 'node:net';
import { Readable } from 'node:stream';

/** Bytes per read: what libuv reads per call from a pipe, as for Node's own readers. */
const READ_BYTES = 64 * 1024;

let shared: Buffer | undefined;

/** A run's stream whose bytes are handed to a claimant as views of a reused buffer. */
export class OutputReader extends Readable {
  readonly #socket: Socket;
  #sink: ((bytes: Buffer) => void) | undefined;
  /** Paused because a copy could not be buffered (the Readable's reader is behind). */
  #waiting = false;

  /** Reads the pipe (or socket) at descriptor `fd`, which it owns from now on. */
  constructor(fd: number) {
    super();
    shared ??= Buffer.allocUnsafeSlow(READ_BYTES);
    // `onread` is taken by the constructor as by net.connect (Node >= 12.4), though not in its type.
    const options: SocketConstructorOpts & { onread: OnReadOpts } = {
      fd,
      readable: true,
      writable: false,
      onread: { buffer: shared, callback: (length: number, buffer: Uint8Array): boolean => this.#onRead(Buffer.from(buffer.buffer, buffer.byteOffset, length)) },
    };
    this.#socket = new Socket(options);
    this.#socket.on('end', () => this.push(null));
    this.#socket.on('error', (error) => this.destroy(error));
    this.#socket.on('close', () => { if (!this.readableEnded && !this.destroyed) this.push(null); });
  }

  #onRead(bytes: Buffer): boolean {
    if (this.#sink !== undefined) {
      this.#sink(bytes);
      return true;
    }
    if (this.push(Buffer.from(bytes))) return true;
    // Nothing more is read until the reader has taken what is buffered (_read).
    this.#waiting = true;
    this.#socket.pause();
    return true;
  }

  override _read(): void {
    if (!this.#waiting) return;
    this.#waiting = false;
    this.#socket.resume();
  }

  /**
   * From now on, `sink` gets every read as a view valid during the call only, synchronously;
   * this stream then only ends. Refused (false) while copies are buffered here, or after the end.
   */
  claim(sink: (bytes: Buffer) => void): boolean {
    if (this.#sink !== undefined || this.readableLength > 0 || this.readableEnded || this.destroyed) return false;
    this.#sink = sink;
    if (this.#waiting) {
      this.#waiting = false;
      this.#socket.resume();
    }
    return true;
  }

  ref(): this {
    this.#socket.ref();
    return this;
  }

  unref(): this {
    this.#socket.unref();
    return this;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#socket.destroy();
    callback(error);
  }
}
