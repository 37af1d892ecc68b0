/*
 * One MCP session: a stdio connection, or one Streamable HTTP session id. It owns its working
 * directory and the background processes it started; another session can neither see nor touch
 * them, and closing the session kills them.
 */
import { randomUUID } from 'node:crypto';

/** Characters kept from a client's self-reported name in the audit actor. */
const CLIENT_NAME = /[^A-Za-z0-9._ -]/g;

/**
 * One MCP client's session: its working directory (the `cd` the bash tool follows) and the
 * background runs it started, stopped when the session ends.
 */
export class McpSession {
  readonly id: string;
  /** Where the session started; a tracked directory that disappears falls back to it. */
  readonly workdir: string;
  #cwd: string;
  #clientName = 'unknown';
  readonly #processes = new Set<string>();
  #closed = false;
  #lastActive = Date.now();
  /** The client's `logging/setLevel`, when it sent one. */
  logLevel: string | undefined;
  #calls = 0;

  constructor(workdir: string, id: string = randomUUID()) {
    this.id = id;
    this.workdir = workdir;
    this.#cwd = workdir;
  }

  get cwd(): string {
    return this.#cwd;
  }

  set cwd(dir: string) {
    this.#cwd = dir;
  }

  /** Set from the initialize request's clientInfo; untrusted, so trimmed to plain characters. */
  set clientName(name: string | undefined) {
    const clean = (name ?? '').replace(CLIENT_NAME, '').trim().slice(0, 64);
    this.#clientName = clean === '' ? 'unknown' : clean;
  }

  get clientName(): string {
    return this.#clientName;
  }

  /** Who the audit log says asked: `mcp:<client name>/<session id>`. */
  get actor(): string {
    return `mcp:${this.#clientName}/${this.id}`;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A request arrived or a call ended: the session is in use. */
  touch(): void {
    this.#lastActive = Date.now();
  }

  /** A tool call started; a session with a call under way is never idle. */
  beginCall(): void {
    this.#calls += 1;
    this.touch();
  }

  endCall(): void {
    this.#calls = Math.max(0, this.#calls - 1);
    this.touch();
  }

  /** Milliseconds since the session was last used; 0 while a call is under way. */
  idleFor(now = Date.now()): number {
    return this.#calls > 0 ? 0 : Math.max(0, now - this.#lastActive);
  }

  markClosed(): void {
    this.#closed = true;
  }

  adopt(processId: string): void {
    this.#processes.add(processId);
  }

  owns(processId: unknown): boolean {
    return typeof processId === 'string' && this.#processes.has(processId);
  }

  get processIds(): string[] {
    return [...this.#processes];
  }
}
