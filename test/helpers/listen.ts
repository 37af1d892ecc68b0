import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';

/**
 * Listen on 127.0.0.1 at a port below every ephemeral range (the host's and a new network
 * namespace's default, 32768 up): a host service that a sandboxed run must NOT reach cannot then
 * share its port number with a server a run starts on port 0 in its own namespace (which would
 * answer the probe and look like the host leaking through).
 */
export async function listenBelowEphemeral(server: Server): Promise<number> {
  let low = 32768;
  try {
    low = Math.min(low, Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low);
  } catch {
    // not Linux: the default bound
  }
  const from = Math.max(1024, low - 12000);
  for (let attempt = 0; ; attempt += 1) {
    const port = from + Math.floor(Math.random() * (low - from));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      return port;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 100) throw error;
    }
  }
}
