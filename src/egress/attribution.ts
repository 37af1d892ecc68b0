/*
 * Which run a raw TCP connection on the shared network namespace's listeners belongs to. The
 * listeners (127.77.X.Y:PORT, 127.0.0.1:PORT of a host service) are shared by every run of the
 * gateway, and a raw protocol carries no proxy credentials, so the connection itself is traced to
 * the process that holds it, by what the kernel says and no run can change:
 *
 *   the accepted socket's peer (the client's address and port)
 *     -> the client socket's inode, in the namespace's /proc/PID/net/tcp{,6} (PID: its holder)
 *     -> the process holding `socket:[INODE]` among the process trees of the gateway's live runs
 *        (each run's tree descends from the pid its sandbox started with: EgressRun.started)
 *     -> that process's run.
 *
 * A connection found in no run's tree (its client already gone, a process no run started), or in
 * the trees of two runs (a descriptor passed between them), belongs to no run: it is refused and
 * recorded. The cost is a read of the namespace's socket table and of the runs' descriptor
 * tables, per connection (a raw TCP connection is opened far less often than a request is sent).
 * Reading /proc/PID/net/tcp costs milliseconds however few sockets there are (measured: 4 ms for
 * a 29-line table, up to 18 ms under load; the kernel walks its whole connection hash table to
 * write it), so that read is asynchronous, off the event loop: the other runs' traffic does not
 * wait for it, only the connection being traced does (bench/tcp.js, its set-up row).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { endianness } from 'node:os';
import { isIP } from 'node:net';
import type { RunContext } from './proxy-core';

/** The inode of the namespace's socket from local (client) to remote (listener), or undefined. */
export async function findSocketInode(holderPid: number, client: { address: string; port: number }, listener: { address: string; port: number }): Promise<string | undefined> {
  const six = isIP(client.address.replace(/^::ffff:/i, '')) === 6 || /^::ffff:/i.test(client.address);
  const local = `${toProcAddress(client.address)}:${toProcPort(client.port)}`;
  const remote = `${toProcAddress(listener.address)}:${toProcPort(listener.port)}`;
  let table: string;
  try {
    table = await readProcFile(`/proc/${holderPid}/net/${six ? 'tcp6' : 'tcp'}`);
  } catch {
    return undefined;
  }
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    if (fields[1] === local && fields[2] === remote && fields[9] !== '0') return fields[9];
  }
  return undefined;
}

/*
 * A /proc table in as few reads as the kernel allows: each read(2) of it starts a new walk of
 * the kernel's tables from the offset reached, so small reads cost more than one large one.
 */
async function readProcFile(path: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const chunks: Buffer[] = [];
    for (;;) {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString('latin1');
  } finally {
    await handle.close();
  }
}

/** The runs (of `contexts`) one of whose processes holds the socket with this inode. */
export function findHolders(inode: string, contexts: Iterable<RunContext>): RunContext[] {
  const link = `socket:[${inode}]`;
  const found: RunContext[] = [];
  for (const context of contexts) {
    if (context.pids.size === 0) continue;
    if (getTree(context.pids).some((pid) => holds(pid, link))) found.push(context);
  }
  return found;
}

/** The run a connection belongs to: exactly one run's process holds it, or none does. */
export async function attributeConnection(
  holderPid: number | undefined,
  client: { address: string; port: number },
  listener: { address: string; port: number },
  contexts: Iterable<RunContext>,
): Promise<{ context?: RunContext; refusal?: string }> {
  if (holderPid === undefined) return { refusal: 'no-run:namespace-gone' };
  const inode = await findSocketInode(holderPid, client, listener);
  if (inode === undefined) return { refusal: 'no-run:socket-gone' };
  const holders = findHolders(inode, contexts);
  if (holders.length === 1) return { context: holders[0] };
  return { refusal: holders.length === 0 ? 'no-run:not-a-run' : 'no-run:held-by-several-runs' };
}

/*
 * The runs' process trees and descriptor tables are read synchronously: a few small reads per
 * process, cheaper than a thread-pool round trip each (measured: the whole attribution took
 * longer with them asynchronous).
 */
/** The pids of `roots` and all their descendants (the kernel's children lists). */
function getTree(roots: Iterable<number>): number[] {
  const seen = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'latin1').split(' ')) {
          if (child.trim() !== '') queue.push(Number(child));
        }
      } catch {
        // gone meanwhile
      }
    }
  }
  return [...seen];
}

function holds(pid: number, link: string): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === link) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

const LITTLE = endianness() === 'LE';

/** An address as /proc/net/tcp{,6} writes it: 32-bit words in host byte order, in hex. */
function toProcAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (isIP(address) === 4) return word(Buffer.from(address.split('.').map(Number)));
  const bytes = Buffer.alloc(16);
  if (mapped) {
    bytes.writeUInt16BE(0xffff, 10);
    Buffer.from(mapped[1].split('.').map(Number)).copy(bytes, 12);
  } else {
    const [head, tail = ''] = address.split('::');
    const parts = (text: string): number[] => (text === '' ? [] : text.split(':').map((p) => parseInt(p, 16)));
    const h = parts(head);
    const t = address.includes('::') ? parts(tail) : [];
    const groups: number[] = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
    groups.forEach((g, i) => bytes.writeUInt16BE(g, i * 2));
  }
  return [0, 4, 8, 12].map((i) => word(bytes.subarray(i, i + 4))).join('');
}

function word(bytes: Buffer): string {
  const ordered = LITTLE ? Buffer.from(bytes).reverse() : bytes;
  return ordered.toString('hex').toUpperCase();
}

function toProcPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}
