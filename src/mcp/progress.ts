/*
 * Progress for long tool calls. A client that sends `_meta.progressToken` with tools/call gets
 * `notifications/progress` every `interval` ms while the call runs, so a client that resets its
 * request timeout on progress (the SDK's `resetTimeoutOnProgress`) keeps waiting for a command
 * that runs longer than that timeout. Without a token nothing is sent: the spec allows progress
 * only for a request that asked for it.
 *
 * A client that asked for log messages (`logging/setLevel` at `info` or lower) gets the same
 * text as `notifications/message` on every tick, with or without a token: some clients show
 * logs but not progress. Nothing is logged to a client that did not ask.
 *
 * `progress` is the seconds elapsed (by the schedule), which grows with every notification as the spec requires
 * even while a command prints nothing; the message carries what was seen so far (bytes, lines,
 * the last line). The output observed here is what the gateway hands to `onOutput`: already
 * redacted, so no resolved value can reach a notification.
 */
import type { ProgressToken } from '@modelcontextprotocol/sdk/types.js';

/** Default milliseconds between two progress notifications. */
export const DEFAULT_PROGRESS_INTERVAL = 5000;
/** Characters of the last output line shown in a progress message. */
const LAST_LINE_CHARS = 200;

export type ProgressSender = (notification:
  | { method: 'notifications/progress'; params: { progressToken: ProgressToken; progress: number; message?: string } }
  | { method: 'notifications/message'; params: { level: 'info'; logger: string; data: string } }
) => Promise<void>;

export interface ProgressTargets {
  /** The request's progressToken: send `notifications/progress`. */
  token?: ProgressToken;
  /** The client asked for log messages at `info` or below: send `notifications/message` too. */
  log?: boolean;
}

/**
 * Sends MCP progress notifications (and log messages) while a long call runs.
 */
export class ProgressReporter {
  readonly #send: ProgressSender;
  readonly #targets: ProgressTargets;
  readonly #started = Date.now();
  readonly #timer: NodeJS.Timeout;
  readonly #interval: number;
  #bytes = 0;
  #lines = 0;
  #partial = '';
  #lastLine = '';
  #label: string;
  /** Text that must never show in a message (the cwd sentinel's marker). */
  #hidden: string | undefined;
  #ticks = 0;
  #stopped = false;

  constructor(send: ProgressSender, targets: ProgressTargets, interval: number, label: string) {
    this.#send = send;
    this.#targets = targets;
    this.#label = label;
    this.#interval = interval;
    this.#timer = setInterval(() => this.#tick(), interval);
    // A progress timer never keeps the process alive on its own.
    this.#timer.unref();
  }

  /** What the call is doing, for the message ("running", "waiting for run_..."). */
  set label(label: string) {
    this.#label = label;
  }

  /** Lines holding this text are left out of the message. */
  hide(text: string): void {
    this.#hidden = text;
  }

  /** Count redacted output as it arrives; keeps the last complete non-empty line. */
  observe(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    this.#bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    const parts = (this.#partial + text).split('\n');
    this.#partial = (parts.pop() ?? '').slice(-4096);
    this.#lines += parts.length;
    for (let index = parts.length - 1; index >= 0; index -= 1) {
      const line = parts[index].replace(/\r$/, '');
      if (line.trim() === '' || (this.#hidden !== undefined && line.includes(this.#hidden))) continue;
      this.#lastLine = line;
      break;
    }
  }

  /** The message of the next notification. */
  describe(): string {
    const seconds = Math.round((Date.now() - this.#started) / 1000);
    let message = `${this.#label} for ${seconds} s`;
    if (this.#bytes > 0) {
      message += `; ${this.#bytes} bytes, ${this.#lines} line${this.#lines === 1 ? '' : 's'} of output`;
      const partial = this.#hidden !== undefined && this.#partial.includes(this.#hidden) ? '' : this.#partial.trim();
      const last = partial !== '' ? partial : this.#lastLine;
      if (last !== '') message += `; last: ${truncate(stripControls(last))}`;
    }
    return message;
  }

  #tick(): void {
    if (this.#stopped) return;
    this.#ticks += 1;
    // Seconds by the schedule, not the clock: strictly increasing even when the event loop lags.
    const progress = (this.#ticks * this.#interval) / 1000;
    const message = this.describe();
    const { token, log } = this.#targets;
    const ignore = (): void => {
      // The client went away; the call ends on its own (its signal aborts it).
    };
    if (token !== undefined) this.#send({ method: 'notifications/progress', params: { progressToken: token, progress, message } }).catch(ignore);
    if (log) this.#send({ method: 'notifications/message', params: { level: 'info', logger: 'execgate', data: message } }).catch(ignore);
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }
}

function truncate(line: string): string {
  return line.length > LAST_LINE_CHARS ? `${line.slice(0, LAST_LINE_CHARS)}…` : line;
}

/** Terminal escapes and other control characters are noise in a client's status line. */
function stripControls(line: string): string {
  return line.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
}
