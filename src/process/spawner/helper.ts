/*
 * Spawning from a small long-lived helper process. Node spawns by fork(2); forking a host
 * with a large heap copies its page tables (about 30 ms per GiB) while the event loop waits.
 * The helper (program.ts) is a fresh Node process of a few tens of MiB, so its forks stay cheap
 * whatever the host's size, and the host's event loop only sends a message.
 *
 * Output does not pass through the helper: the gateway listens on a UNIX socket in a private
 * directory (0700, so other users cannot connect), the helper keeps a few connections to it
 * open, gives them to each child as its stdio, and the gateway reads the child's output from
 * its ends of those connections. Each connection starts with the gateway's key for this helper
 * (random, held in memory, handed to the helper on its stdin) and then a random
 * token; the helper's reply to a spawn request names the tokens of the run's streams. A
 * connection without the key (another process of the same user that found the socket) is closed
 * at once and takes no place among the connections waiting for a run. Spawn requests never
 * travel over the socket: they come over the IPC channel, which only the gateway holds.
 *
 * Containment does not change: the child is still its own process group and carries the run
 * cookie, and the gateway signals the group and sweeps /proc itself (same user). If the helper
 * dies, runs it started can no longer report their exit: they fail with
 * EXECGATE_ERR_SPAWN_FAILED (the executor then stops their group), and the next spawn starts a
 * new helper.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { spawnFailed, type ExecgateError } from '../../errors';
import { getRuntimeBase } from '../../fs/runtime-dir';
import { changed } from '../bwrap/launch';
import { getProgramFile } from '../programs';
import { closeSync } from 'node:fs';
import { OutputReader } from './output-reader';
import { closePipe, getPipePool, type PipePair } from './pipes';
import type { ProcessExit, SpawnedProcess, Spawner, SpawnRequest } from './types';

const TOKEN_CHARS = 32;
const KEY_CHARS = 32;
/** A node process starts in well under a second; this bounds a helper that never answers. */
const START_TIMEOUT_MS = 20_000;
/** A connection that does not introduce itself within this time is dropped. */
const TOKEN_TIMEOUT_MS = 10_000;
/** Connections the helper opened ahead of need; more than this many unclaimed is not the helper. */
const MAX_IDLE = 64;
/** Output buffered between a connection and its run before the connection stops being read. */
const STREAM_BUFFER_BYTES = 256 * 1024;

type HelperMessage =
  | { t: 'ready' }
  | { t: 'spawned'; id: string; pid: number; stdin: string | null; stdout: string | null; stderr: string | null }
  | { t: 'failed'; id: string; code: string; message: string; path?: string }
  | { t: 'exit'; id: string; code: number | null; signal: NodeJS.Signals | null };

interface Helper {
  readonly child: ChildProcess;
  readonly server: Server;
  readonly dir: string;
  readonly ready: Promise<void>;
  /** What every connection from this helper starts with. */
  readonly key: Buffer;
}

/** One accepted connection: idle until a run claims it. */
interface Connection {
  readonly socket: Socket;
  /** Bytes after the token that arrived before a run claimed the connection (the child was quick). */
  pending: Buffer[];
  pendingBytes: number;
  ended: boolean;
  /** Where the bytes go once claimed for stdout or stderr. */
  output?: PassThrough;
  claimed: boolean;
}

interface Entry {
  readonly id: string;
  readonly helper: Helper;
  readonly stdin: boolean;
  spawned: Extract<HelperMessage, { t: 'spawned' }> | undefined;
  started: boolean;
  exited: boolean;
  /** Whether it keeps the host's event loop alive (see setRef). */
  held: boolean;
  readonly resolve: (spawned: SpawnedProcess) => void;
  readonly reject: (error: Error) => void;
  readonly resolveExit: (exit: ProcessExit) => void;
  readonly rejectExit: (error: Error) => void;
  readonly exit: Promise<ProcessExit>;
  /** The output pipes offered to the helper (pipes.ts): the child writes into them unless the helper used its sockets. */
  pipes: [PipePair, PipePair] | undefined;
}

/** Why a command could not be started through the spawn helper. */
export function helperFailed(reason: string, cause?: unknown): ExecgateError {
  return spawnFailed('the command through the spawn helper', reason, cause === undefined ? {} : { cause });
}

export class HelperSpawner implements Spawner {
  #helper: Helper | undefined;
  readonly #stopped = new WeakSet<Helper>();
  readonly #entries = new Map<string, Entry>();
  readonly #idle = new Map<string, Connection>();
  #nextId = 0;
  #closed = false;

  /** The helper's pid while one runs. */
  get pid(): number | undefined {
    return this.#helper?.child.pid;
  }

  /** The socket the helper's connections arrive on, while one runs (tests). */
  get socketPath(): string | undefined {
    return this.#helper ? join(this.#helper.dir, 's') : undefined;
  }

  /** Start the helper now rather than on the first spawn. */
  async start(): Promise<void> {
    if (this.#closed) throw helperFailed('the spawn helper is closed (its gateway was closed)');
    await this.#getHelper().ready;
  }

  async spawn(request: SpawnRequest): Promise<SpawnedProcess> {
    if (this.#closed) throw helperFailed('the spawn helper is closed (its gateway was closed)');
    const helper = this.#getHelper();
    await helper.ready;
    if (helper !== this.#helper) throw helperFailed('the spawn helper exited before the command could be started');
    const id = String(++this.#nextId);
    // The run's stdout and stderr as pipes (pipes.ts), as for direct spawns: the helper opens
    // their write ends through this process's /proc entries, so the child can open its output
    // by name (/dev/stdout); where it cannot, it gives the child its sockets as before.
    const pipes = await getPipePool().take().catch(() => undefined);
    return new Promise<SpawnedProcess>((resolve, reject) => {
      let resolveExit!: (exit: ProcessExit) => void;
      let rejectExit!: (error: Error) => void;
      const exit = new Promise<ProcessExit>((res, rej) => { resolveExit = res; rejectExit = rej; });
      exit.catch(() => { /* the caller handles it */ });
      const entry: Entry = {
        id, helper, stdin: request.stdin === 'pipe', spawned: undefined, started: false, exited: false, held: true,
        resolve, reject, resolveExit, rejectExit, exit, pipes,
      };
      this.#entries.set(id, entry);
      helper.child.channel?.ref();
      const sandbox = request.sandbox ? { launcher: request.sandbox.launcher, spec: request.sandbox.spec } : undefined;
      const outputs = pipes?.map((pair) => `/proc/${process.pid}/fd/${pair.write}`);
      helper.child.send({ t: 'spawn', id, shell: request.shell, args: request.args, env: request.env, cwd: request.cwd, stdin: entry.stdin, sandbox, outputs }, (error) => {
        if (error) this.#fail(entry, helperFailed(`the spawn helper could not be reached (${error.message})`, error));
      });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const helper = this.#helper;
    if (!helper) return;
    this.#stop(helper, helperFailed('the spawn helper was closed while the command ran'));
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
    const base = getRuntimeBase();
    const dir = mkdtempSync(join(base, 'execgate-spawn-'));
    const socketPath = join(dir, 's');
    const key = Buffer.from(randomBytes(KEY_CHARS / 2).toString('hex'), 'latin1');
    const server = createServer((socket) => this.#accept(socket, key));
    server.unref();
    // The helper's only environment: where to connect. The command's environment comes per run.
    // Its program: src/programs/spawn-helper.js.
    const child = spawn(process.execPath, [getProgramFile('spawn-helper.js')], {
      detached: true,
      cwd: '/',
      env: { EXECGATE_SPAWNER_SOCKET: socketPath },
      stdio: ['pipe', 'ignore', 'ignore', 'ipc'],
      serialization: 'json',
    });
    child.unref();
    child.stdin?.on('error', () => { /* reported through exit */ });
    const ready = new Promise<void>((resolve, reject) => {
      const fail = (error: ExecgateError): void => {
        clearTimeout(timer);
        reject(error);
        this.#stop(helper, error);
      };
      const timer = setTimeout(() => fail(helperFailed(`the spawn helper did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      timer.unref();
      server.once('error', (error) => fail(helperFailed(`the spawn helper's socket could not be opened (${error.message})`, error)));
      // Listening (bound) before the helper runs, so its first connections find the socket.
      server.listen(socketPath, () => child.stdin?.end(key));
      child.on('message', function onReady(message: HelperMessage) {
        if (message?.t !== 'ready') return;
        clearTimeout(timer);
        child.removeListener('message', onReady);
        resolve();
      });
      child.once('error', (error) => fail(helperFailed(`the spawn helper itself could not be started (${error.message})`, error)));
      child.once('exit', (code, signal) => fail(helperFailed(`the spawn helper exited (${signal ?? `code ${code}`}) before it was ready`)));
    });
    // Declared after `ready`, whose handlers only run once the helper exists.
    const helper: Helper = { child, server, dir, ready, key };
    ready.then(() => this.#idleChannel(helper), () => { /* each spawn awaits it */ });
    child.on('message', (message: HelperMessage) => this.#onMessage(message));
    const gone = (): void => this.#stop(helper, helperFailed('The spawn helper exited while the command ran; its end cannot be known, so the run was stopped.'));
    child.once('exit', gone);
    child.once('disconnect', gone);
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
    for (const connection of this.#idle.values()) connection.socket.destroy();
    this.#idle.clear();
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
      entry.spawned = message;
      this.#check(entry);
      if (!entry.started) {
        // Its connections were opened before the spawn, so they are due any moment.
        setTimeout(() => {
          if (!entry.started) this.#fail(entry, helperFailed('The command started, but its output connections to the gateway never arrived; it was stopped.'));
        }, TOKEN_TIMEOUT_MS).unref();
      }
    } else if (message.t === 'failed') {
      this.#fail(entry, message.code === 'EXECGATE_ERR_SANDBOX_PATH' && message.path !== undefined ? changed(message.path) : Object.assign(new Error(message.message), { code: message.code }));
    } else if (message.t === 'exit') {
      entry.exited = true;
      entry.resolveExit({ code: message.code, signal: message.signal });
      this.#forget(entry);
    }
  }

  /*
   * A connection from the helper: its token, then (once a run claims it for stdout or stderr)
   * the child's output, passed on through a stream that buffers until the run reads it. The
   * socket itself is not handed out: one that reaches its end with nothing buffered emits 'end'
   * at once, possibly before a run still waiting for its pid could listen.
   */
  #accept(socket: Socket, key: Buffer): void {
    socket.on('error', () => { /* the run's stream reports what matters */ });
    socket.unref();
    const timer = setTimeout(() => socket.destroy(), TOKEN_TIMEOUT_MS);
    timer.unref();
    let token: Buffer = Buffer.alloc(0);
    let connection: Connection | undefined;
    socket.on('data', (chunk: Buffer) => {
      if (connection) {
        if (connection.output) {
          if (!connection.output.write(chunk)) socket.pause();
        } else if (!connection.claimed) {
          connection.pending.push(chunk);
          connection.pendingBytes += chunk.length;
          if (connection.pendingBytes >= STREAM_BUFFER_BYTES) socket.pause();
        }
        // claimed for stdin: whatever the child wrote to its stdin is dropped
        return;
      }
      token = token.length === 0 ? chunk : Buffer.concat([token, chunk]);
      if (token.length < KEY_CHARS + TOKEN_CHARS) return;
      clearTimeout(timer);
      if (!timingSafeEqual(token.subarray(0, KEY_CHARS), key)) {
        socket.destroy();
        return;
      }
      const name = token.toString('latin1', KEY_CHARS, KEY_CHARS + TOKEN_CHARS);
      if (this.#idle.has(name) || this.#idle.size >= MAX_IDLE) {
        socket.destroy();
        return;
      }
      const rest = token.subarray(KEY_CHARS + TOKEN_CHARS);
      connection = { socket, pending: rest.length > 0 ? [rest] : [], pendingBytes: rest.length, ended: false, claimed: false };
      this.#idle.set(name, connection);
      for (const entry of this.#entries.values()) {
        if (entry.spawned && !entry.started) this.#check(entry);
      }
    });
    socket.once('end', () => {
      if (!connection) socket.destroy();
      else if (connection.output) connection.output.end();
      else connection.ended = true; // kept (with its bytes) for the run that will claim it
    });
    socket.once('close', () => {
      if (connection?.output && !connection.output.writableEnded) connection.output.destroy();
      if (connection && !connection.claimed && !connection.ended) {
        for (const [name, idle] of this.#idle) if (idle === connection) this.#idle.delete(name);
      }
    });
  }

  /** Resolve the spawn once the pid is known and every stream's connection is in. */
  #check(entry: Entry): void {
    const spawned = entry.spawned;
    if (entry.started || !spawned) return;
    const names = [spawned.stdout, spawned.stderr, spawned.stdin].filter((name): name is string => name !== null);
    if (!names.every((name) => this.#idle.has(name))) return;
    const piped = spawned.stdout === null || spawned.stderr === null;
    if (piped && (entry.pipes === undefined || spawned.stdout !== null || spawned.stderr !== null)) {
      this.#fail(entry, helperFailed('the spawn helper named output pipes this process did not offer'));
      return;
    }
    const pipes = entry.pipes;
    entry.pipes = undefined;
    let readers: OutputReader[] | undefined;
    if (piped && pipes) {
      // The child holds its write ends (opened by the helper): this process's copies are closed.
      for (const pair of pipes) closeSync(pair.write);
      readers = pipes.map((pair) => new OutputReader(pair.read));
    } else if (pipes) {
      pipes.forEach(closePipe);
    }
    const outputNames = piped ? [] : [spawned.stdout!, spawned.stderr!];
    const sockets: Array<{ ref(): unknown; unref(): unknown }> = readers ?? outputNames.map((name) => this.#idle.get(name)!.socket);
    const [stdout, stderr] = readers ?? outputNames.map((name) => this.#claimOutput(name));
    const stdinSocket = spawned.stdin ? this.#claim(spawned.stdin).socket.ref().resume() : null;
    if (stdinSocket) sockets.push(stdinSocket);
    const stdin = stdinSocket;
    entry.started = true;
    if (entry.exited) this.#forget(entry);
    // A process waiting for work (a warm sandbox) must not keep the host alive: neither its
    // sockets nor, while it is the only one in flight, the helper's channel.
    const setRef = (on: boolean): void => {
      entry.held = on;
      for (const socket of sockets) {
        if (on) socket.ref();
        else socket.unref();
      }
      if (on && this.#entries.has(entry.id)) entry.helper.child.channel?.ref();
      else this.#idleChannel(entry.helper);
    };
    const claim = readers ? (name: 'stdout' | 'stderr', sink: (bytes: Buffer) => void): boolean => readers[name === 'stdout' ? 0 : 1].claim(sink) : undefined;
    entry.resolve({ pid: spawned.pid, stdin, stdout, stderr, exit: entry.exit, setRef, ...(claim ? { claim } : {}) });
  }

  #claim(name: string): Connection {
    const connection = this.#idle.get(name) as Connection;
    this.#idle.delete(name);
    connection.claimed = true;
    return connection;
  }

  #claimOutput(name: string): Readable {
    const connection = this.#claim(name);
    const { socket } = connection;
    const output = new PassThrough({ highWaterMark: STREAM_BUFFER_BYTES });
    output.on('drain', () => socket.resume());
    output.once('close', () => socket.destroy());
    for (const chunk of connection.pending) output.write(chunk);
    connection.pending = [];
    if (connection.ended) output.end();
    else {
      connection.output = output;
      socket.ref();
      socket.resume();
    }
    return output;
  }

  #fail(entry: Entry, error: Error): void {
    entry.pipes?.forEach(closePipe);
    entry.pipes = undefined;
    if (!entry.started) {
      entry.started = true;
      const spawned = entry.spawned;
      if (spawned) {
        // Started, but never handed to its run: nothing else would ever stop it.
        try { process.kill(-spawned.pid, 'SIGKILL'); } catch { /* already gone */ }
      }
      for (const name of spawned ? [spawned.stdin, spawned.stdout, spawned.stderr] : []) {
        const connection = name ? this.#idle.get(name) : undefined;
        if (connection && name) {
          this.#idle.delete(name);
          connection.socket.destroy();
        }
      }
      entry.reject(error);
    }
    if (!entry.exited) {
      entry.exited = true;
      entry.rejectExit(error);
    }
    this.#entries.delete(entry.id);
    this.#idleChannel(entry.helper);
  }

  #forget(entry: Entry): void {
    if (!entry.started) return; // still waiting for its connections; #check forgets it
    this.#entries.delete(entry.id);
    this.#idleChannel(entry.helper);
  }

  /** An idle helper must not keep the host's process alive. */
  #idleChannel(helper: Helper): void {
    if (![...this.#entries.values()].some((entry) => entry.held) && helper.child.connected) helper.child.channel?.unref();
  }
}
