/*
 * Joining a client to its upstream for a tunnel that is passed through unread (CONNECT, SOCKS5).
 * A side that ends cleanly (FIN) only ends the other side's writing, after what is still buffered
 * for it has been written: destroying the other side on the first `close` dropped the tail of a
 * response whose server closed the connection right after sending it (a `Connection: close`
 * download lost its last buffered bytes). A side that fails or is destroyed takes the other down.
 */
import type { Duplex } from 'node:stream';

export function joinSockets(client: Duplex, upstream: Duplex): void {
  for (const side of [client, upstream]) side.on('error', () => side.destroy());
  upstream.pipe(client);
  client.pipe(upstream);
  const onClose = (closed: Duplex, other: Duplex) => (): void => {
    if (!closed.readableEnded) other.destroy();
  };
  client.once('close', onClose(client, upstream));
  upstream.once('close', onClose(upstream, client));
}
