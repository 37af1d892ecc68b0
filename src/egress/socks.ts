/*
 * SOCKS5 (RFC 1928) for TCP that is not HTTP, CONNECT only: no authentication, or the run's
 * username/password (RFC 1929) when the run has proxy credentials. The destination is
 * decided like every other (by the domain the client sent; `socks5h://` clients send names, which
 * is what ALL_PROXY says). A SOCKS tunnel is never intercepted: a sentinel sent through it stays a
 * sentinel.
 */
import type { Socket } from 'node:net';
import type { EgressDecision } from './proxy';
import { joinSockets } from './tunnel';

const REPLY = { ok: 0x00, fail: 0x01, notAllowed: 0x02, hostUnreachable: 0x04, commandNotSupported: 0x07, addressNotSupported: 0x08 };

export interface SocksHandlers {
  decide(host: string, port: number): Promise<EgressDecision>;
  record(decision: EgressDecision): void;
  /** Open the decided destination (directly, or through a parent proxy); calls back once open. */
  open(decision: EgressDecision, callback: (error: Error | null, socket?: Socket) => void): Socket;
  authenticate?: (username: string, password: string) => boolean;
  onAuthFailed?: () => void;
}

export async function handleSocks(socket: Socket, handlers: SocksHandlers): Promise<void> {
  const { authenticate, onAuthFailed } = handlers;
  try {
    const greeting = await readBytes(socket, 2);
    const methods = await readBytes(socket, greeting[1]);
    const method = authenticate ? 0x02 : 0x00;
    if (greeting[0] !== 0x05 || !methods.includes(method)) {
      if (authenticate) onAuthFailed?.();
      socket.end(Buffer.from([0x05, 0xff]));
      return;
    }
    socket.write(Buffer.from([0x05, method]));
    if (authenticate) {
      const version = await readBytes(socket, 1);
      const username = (await readBytes(socket, (await readBytes(socket, 1))[0])).toString('utf8');
      const password = (await readBytes(socket, (await readBytes(socket, 1))[0])).toString('utf8');
      const ok = version[0] === 0x01 && authenticate(username, password);
      if (!ok) {
        onAuthFailed?.();
        socket.end(Buffer.from([0x01, 0x01]));
        return;
      }
      socket.write(Buffer.from([0x01, 0x00]));
    }
    const head = await readBytes(socket, 4);
    if (head[0] !== 0x05 || head[1] !== 0x01) return void reply(socket, REPLY.commandNotSupported, true);
    let host: string;
    if (head[3] === 0x01) host = [...(await readBytes(socket, 4))].join('.');
    // A domain is read by the one host parser like every other name: `0x7f.1` is an address here too.
    else if (head[3] === 0x03) host = (await readBytes(socket, (await readBytes(socket, 1))[0])).toString('latin1');
    else if (head[3] === 0x04) host = `[${((await readBytes(socket, 16)).toString('hex').match(/..../g) ?? []).join(':')}]`;
    else return void reply(socket, REPLY.addressNotSupported, true);
    const port = (await readBytes(socket, 2)).readUInt16BE(0);
    const decision = await handlers.decide(host, port);
    if (!decision.allowed || (!decision.address && !decision.parent)) {
      handlers.record(decision);
      return void reply(socket, decision.rule.startsWith('address:') ? REPLY.hostUnreachable : REPLY.notAllowed, true);
    }
    let joined = false;
    const upstream = handlers.open(decision, (error) => {
      if (error) {
        if (joined) return;
        handlers.record({ ...decision, allowed: false, rule: `${decision.parent ? 'upstream-failed' : 'dial-failed'}:${(error as NodeJS.ErrnoException).code ?? 'error'}` });
        reply(socket, REPLY.hostUnreachable, true);
        return;
      }
      joined = true;
      handlers.record(decision);
      reply(socket, REPLY.ok, false);
      joinSockets(socket, upstream);
      socket.resume();
    });
    socket.once('close', () => { if (!joined) upstream.destroy(); });
  } catch {
    socket.destroy();
  }
}

function reply(socket: Socket, code: number, end: boolean): void {
  const message = Buffer.from([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
  if (end) socket.end(message);
  else socket.write(message);
}

/** Read exactly n bytes from a paused socket (SOCKS messages are tiny; no timer needed: a client that goes silent is closed with its run). */
function readBytes(socket: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (n === 0) return resolve(Buffer.alloc(0));
    const attempt = (): void => {
      const chunk = socket.read(n) as Buffer | null;
      if (chunk) {
        cleanup();
        resolve(chunk);
      }
    };
    const onEnd = (): void => {
      cleanup();
      reject(new Error('SOCKS client closed'));
    };
    const cleanup = (): void => {
      socket.off('readable', attempt);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
    };
    socket.on('readable', attempt);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    attempt();
  });
}
