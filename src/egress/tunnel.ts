/*
 * Joining a client to its upstream for a tunnel that is passed through unread (CONNECT, SOCKS5).
 * A side that ends cleanly (FIN) only ends the other side's writing, after what is still buffered
 * for it has been written: destroying the other side on the first `close` dropped the tail of a
 * response whose server closed the connection right after sending it (a `Connection: close`
 * download lost its last buffered bytes). A side that fails or is destroyed takes the other down.
 */
import type { Duplex } from 'node:stream';
import type { ReadBuffers } from './passthrough';

/**
 * `buffers`: the upstream was opened reading into them (net.connect's `onread`,
 * passthrough.ts ReadBuffers): its bytes are written on to the client from buffers used again,
 * not a fresh Buffer per read (garbage the proxy's process otherwise collects every few MiB).
 */
export function joinSockets(client: Duplex, upstream: Duplex, buffers?: ReadBuffers): void {
  for (const side of [client, upstream]) side.on('error', () => side.destroy());
  if (buffers) {
    let paused = false;
    buffers.consume((bytes, owner) => {
      if (owner) buffers.hold(owner);
      const written = client.write(bytes, () => { if (owner) buffers.release(owner); });
      if (!written && !paused) {
        paused = true;
        upstream.pause();
        client.once('drain', () => {
          paused = false;
          upstream.resume();
        });
      }
    });
    upstream.once('end', () => client.end());
  } else {
    upstream.pipe(client);
  }
  client.pipe(upstream);
  const onClose = (closed: Duplex, other: Duplex) => (): void => {
    if (!closed.readableEnded) other.destroy();
  };
  client.once('close', onClose(client, upstream));
  upstream.once('close', onClose(upstream, client));
}
