/*
 * Spawning from a small long-lived helper process. Node spawns by fork(2); forking a host
 * with a large heap copies its page tables (about 30 ms per GiB) while the event loop waits.
 * The helper (program.ts) is a fresh Node process of a few tens of MiB, so its forks stay cheap
 * whatever the host's size, and the host's event loop only sends a message.
 *
 * Output does not pass through the helper: the gateway listens on a UNIX socket in a private
 * directory (0700, so other users cannot connect), the helper connects once per stdio stream and
 * gives those sockets to the child as its stdio, and the gateway reads the child's output from
 * the accepted connections. Each connection starts with the run's random token and the stream
 * number; a connection with an unknown token is dropped.
 *
 * Containment does not change: the child is still its own process group and carries the run
 * cookie, and the gateway signals the group and sweeps /proc itself (same user). If the helper
 * dies, runs it started can no longer report their exit: they fail with
 * EXECGATE_ERR_SPAWN_FAILED (the executor then stops their group), and the next spawn starts a
 * new helper.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecgateError } from '../../errors';
import { HELPER_PROGRAM } from './program';
import type { ProcessExit, SpawnedProcess, Spawner, SpawnRequest } from './types';

const TOKEN_CHARS = 32;
const HEADER_BYTES = TOKEN_CHARS + 1;
/** A node process starts in well under a second; this bounds a helper that never answers. */
const START_TIMEOUT_MS = 20_000;
/** A connection that does not say which run it belongs to within this time is dropped. */
const HEADER_TIMEOUT_MS = 10_000;

type HelperMessage =
  | { t: 'ready' }
  | { t: 'spawned'; id: string; pid: number }
  | { t: 'failed'; id: string; code: string; message: string }
  | { t: 'exit'; id: string; code: number | null; signal: NodeJS.Signals | null };

interface Helper {
  readonly child: ChildProcess;
  readonly server: Server;
  readonly dir: string;
  readonly ready: Promise<void>;
}

interface Entry {
  readonly id: string;
  readonly token: string;
  readonly helper: Helper;
  readonly sockets: Array<Socket | undefined>;
  readonly needed: number;
  pid: number | undefined;
  started: boolean;
  exited: boolean;
  readonly resolve: (spawned: SpawnedProcess) => void;
  readonly reject: (error: Error) => void;
  resolveExit: (exit: ProcessExit) => void;
  rejectExit: (error: Error) => void;
  readonly exit: Promise<ProcessExit>;
}

export function helperFailed(message: string, cause?: unknown): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_SPAWN_FAILED', message, {}, cause === undefined ? undefined : { cause });
}

export class HelperSpawner implements Spawner {
  #helper: Helper | undefined;
  readonly #entries = new Map<string, Entry>();
  readonly #byToken = new Map<string, Entry>();
  readonly #stopped = new WeakSet<Helper>();
  #nextId = 0;
  #closed = false;

  /** The helper's pid while one runs. */
  get pid(): number | undefined {
    return this.#helper?.child.pid;
  }

  /** Start the helper now rather than on the first spawn. */
  async start(): Promise<void> {
    if (this.#closed) throw helperFailed('The spawn helper is closed.');
    await this.#getHelper().ready;
  }

  async spawn(request: SpawnRequest): Promise<SpawnedProcess> {
    if (this.#closed) throw helperFailed('The spawn helper is closed.');
    const helper = this.#getHelper();
    await helper.ready;
    if (helper !== this.#helper) throw helperFailed('The spawn helper exited before the command could be started.');
    const id = String(++this.#nextId);
    const token = randomBytes(TOKEN_CHARS / 2).toString('hex');
    return new Promise<SpawnedProcess>((resolve, reject) => {
      let resolveExit!: (exit: ProcessExit) => void;
      let rejectExit!: (error: Error) => void;
      const exit = new Promise<ProcessExit>((res, rej) => { resolveExit = res; rejectExit = rej; });
      exit.catch(() => { /* the caller handles it */ });
      const entry: Entry = {
        id, token, helper, sockets: [undefined, undefined, undefined], needed: request.stdin === 'pipe' ? 3 : 2,
        pid: undefined, started: false, exited: false, resolve, reject, resolveExit, rejectExit, exit,
      };
      this.#entries.set(id, entry);
      this.#byToken.set(token, entry);
      helper.child.channel?.ref();
      helper.child.send({
        t: 'spawn', id, token, shell: request.shell, args: request.args, env: request.env, cwd: request.cwd, stdin: request.stdin === 'pipe',
      }, (error) => {
        if (error) this.#fail(entry, helperFailed(`Could not reach the spawn helper: ${error.message}`, error));
      });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const helper = this.#helper;
    if (!helper) return;
    this.#stop(helper, helperFailed('The spawn helper was closed while the command ran.'));
    if (helper.child.exitCode === null && helper.child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { helper.child.kill('SIGKILL'); resolve(); }, 2000);
        helper.child.once('exit', () => { clearTimeout(timer); resolve(); });
      });
    }
  }

  #getHelper(): Helper {
    this.#helper ??= this.#launch();
    return this.#helper;
  }

  #launch(): Helper {
    // mkdtemp creates the directory 0700. A UNIX socket path must stay under ~107 bytes.
    const base = join(tmpdir(), 'execgate-spawn-').length < 80 ? tmpdir() : '/tmp';
    const dir = mkdtempSync(join(base, 'execgate-spawn-'));
    const socketPath = join(dir, 's');
    const server = createServer((socket) => this.#accept(socket));
    server.on('error', () => { /* listen errors are reported through `ready` */ });
    const child = spawn(process.execPath, ['-'], {
      detached: true,
      cwd: '/',
      env: { EXECGATE_SPAWNER_SOCKET: socketPath },
      stdio: ['pipe', 'ignore', 'ignore', 'ipc'],
      serialization: 'json',
    });
    child.stdin?.on('error', () => { /* reported through exit */ });
    child.stdin?.end(HELPER_PROGRAM);
    child.unref();
    const listening = new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
      server.listen(socketPath);
    });
    server.unref();
    let helper!: Helper;
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(helperFailed(`The spawn helper did not start within ${START_TIMEOUT_MS} ms.`));
        this.#stop(helper, helperFailed('The spawn helper did not start.'));
      }, START_TIMEOUT_MS);
      timer.unref();
      const onMessage = (message: HelperMessage): void => {
        if (message?.t !== 'ready') return;
        clearTimeout(timer);
        child.removeListener('message', onMessage);
        listening.then(() => {
          if (this.#entries.size === 0) child.channel?.unref();
          resolve();
        }, (error: Error) => reject(helperFailed(`The spawn helper's socket could not be opened: ${error.message}`, error)));
      };
      child.on('message', onMessage);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(helperFailed(`The spawn helper could not be started: ${error.message}`, error));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(helperFailed(`The spawn helper exited (${signal ?? `code ${code}`}) before it was ready.`));
      });
    });
    ready.catch(() => { /* each spawn awaits it */ });
    helper = { child, server, dir, ready };
    child.on('message', (message: HelperMessage) => this.#onMessage(message));
    const gone = (): void => this.#stop(helper, helperFailed('The spawn helper exited while the command ran; its end cannot be known, so the run was stopped.'));
    child.once('exit', gone);
    child.once('disconnect', gone);
    child.once('error', gone);
    return helper;
  }

  /** Tear one helper down and fail everything it still owed an answer. */
  #stop(helper: Helper, error: ExecgateError): void {
    if (this.#stopped.has(helper)) return;
    this.#stopped.add(helper);
    if (this.#helper === helper) this.#helper = undefined;
    for (const entry of [...this.#entries.values()]) {
      if (entry.helper === helper) this.#fail(entry, error);
    }
    if (helper.child.connected) helper.child.disconnect();
    if (helper.child.exitCode === null && helper.child.signalCode === null) {
      // Without the channel the helper exits by itself; this only hurries one that hangs.
      setTimeout(() => helper.child.kill('SIGKILL'), 1000).unref();
    }
    helper.server.close();
    rmSync(helper.dir, { recursive: true, force: true });
  }

  #onMessage(message: HelperMessage): void {
    if (message.t === 'ready') return;
    const entry = this.#entries.get(message.id);
    if (!entry) return;
    if (message.t === 'spawned') {
      entry.pid = message.pid;
      this.#check(entry);
    } else if (message.t === 'failed') {
      const error = Object.assign(new Error(message.message), { code: message.code });
      this.#fail(entry, error);
    } else if (message.t === 'exit') {
      entry.exited = true;
      entry.resolveExit({ code: message.code, signal: message.signal });
      this.#forget(entry);
    }
  }

  #accept(socket: Socket): void {
    socket.on('error', () => { /* the owner of the stream reports what matters */ });
    const timer = setTimeout(() => socket.destroy(), HEADER_TIMEOUT_MS);
    timer.unref();
    const onReadable = (): void => {
      const header = socket.read(HEADER_BYTES) as Buffer | null;
      if (header === null) return;
      socket.removeListener('readable', onReadable);
      socket.removeListener('end', onEnd);
      clearTimeout(timer);
      const entry = header.length === HEADER_BYTES ? this.#byToken.get(header.toString('latin1', 0, TOKEN_CHARS)) : undefined;
      const stream = header[TOKEN_CHARS] - 48;
      if (!entry || entry.started || !(stream >= 3 - entry.needed && stream <= 2) || entry.sockets[stream]) {
        socket.destroy();
        return;
      }
      entry.sockets[stream] = socket;
      this.#check(entry);
    };
    const onEnd = (): void => { clearTimeout(timer); socket.destroy(); };
    socket.on('readable', onReadable);
    socket.once('end', onEnd);
  }

  /** Resolve the spawn once the pid and every stream are in. */
  #check(entry: Entry): void {
    if (entry.started || entry.pid === undefined) return;
    const [stdin, stdout, stderr] = entry.sockets;
    if (!stdout || !stderr || (entry.needed === 3 && !stdin)) return;
    entry.started = true;
    this.#byToken.delete(entry.token);
    if (entry.exited) this.#forget(entry);
    entry.resolve({ pid: entry.pid, stdin: stdin ?? null, stdout, stderr, exit: entry.exit });
  }

  #fail(entry: Entry, error: Error): void {
    if (!entry.started) {
      entry.started = true;
      for (const socket of entry.sockets) socket?.destroy();
      entry.reject(error);
    }
    if (!entry.exited) {
      entry.exited = true;
      entry.rejectExit(error);
    }
    this.#entries.delete(entry.id);
    this.#byToken.delete(entry.token);
    this.#idle(entry.helper);
  }

  #forget(entry: Entry): void {
    if (!entry.started) return; // still waiting for its streams; #check forgets it
    this.#entries.delete(entry.id);
    this.#byToken.delete(entry.token);
    this.#idle(entry.helper);
  }

  /** An idle helper must not keep the host's process alive. */
  #idle(helper: Helper): void {
    if (this.#entries.size === 0 && helper.child.connected) helper.child.channel?.unref();
  }
}
