/*
 * A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (file descriptors 3
 * and 4, NUL-terminated JSON messages), with Node built-ins only: enough to open a page, wait
 * for it, evaluate expressions in it and take a screenshot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--hide-scrollbars',
];

export class Browser {
  readonly #child: ChildProcess;
  readonly #out: Writable;
  #next = 1;
  readonly #waiting = new Map<number, { resolve: (value: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  #buffer = '';
  stderr = '';

  constructor(chromium: string, profileRoot: string) {
    const profile = join(profileRoot, `cdp-profile-${process.pid}-${Math.random().toString(36).slice(2)}`);
    mkdirSync(profile, { recursive: true });
    this.#child = spawn(chromium, [...CHROMIUM_FLAGS, '--remote-debugging-pipe', `--user-data-dir=${profile}`, 'about:blank'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, HOME: profileRoot },
    });
    this.#child.stderr!.on('data', (chunk: Buffer) => { this.stderr += chunk.toString(); });
    this.#out = this.#child.stdio[3] as Writable;
    const input = this.#child.stdio[4] as Readable;
    input.on('data', (chunk: Buffer) => this.#receive(chunk.toString('utf8')));
    this.#child.on('exit', () => {
      for (const { reject } of this.#waiting.values()) reject(new Error(`chromium exited: ${this.stderr.slice(-2000)}`));
      this.#waiting.clear();
    });
  }

  #receive(text: string): void {
    this.#buffer += text;
    for (let end = this.#buffer.indexOf('\0'); end >= 0; end = this.#buffer.indexOf('\0')) {
      const message = JSON.parse(this.#buffer.slice(0, end)) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
      this.#buffer = this.#buffer.slice(end + 1);
      if (message.id === undefined) continue;
      const waiting = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      if (message.error) waiting?.reject(new Error(message.error.message));
      else waiting?.resolve(message.result ?? {});
    }
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#out.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  /** Open `url` in a new page of the given size; resolves with a session for it once loaded. */
  async open(url: string, width: number, height: number): Promise<Page> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, sessionId);
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
    await this.send('Page.enable', {}, sessionId);
    await this.send('Page.navigate', { url }, sessionId);
    await page.waitFor('document.readyState === "complete"');
    return page;
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.send('Browser.close').catch(() => undefined);
    await exited;
  }
}

export class Page {
  constructor(readonly browser: Browser, readonly sessionId: string) {}

  async evaluate<T>(expression: string): Promise<T> {
    const result = (await this.browser.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, this.sessionId)) as {
      result: { value: T };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    };
    if (result.exceptionDetails) throw new Error(`${result.exceptionDetails.text} ${result.exceptionDetails.exception?.description ?? ''}`);
    return result.result.value;
  }

  /** Poll an expression until it is truthy (each poll is a round trip to the page, not a timer race). */
  async waitFor(expression: string, attempts = 1500): Promise<void> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (await this.evaluate<boolean>(`Boolean(${expression})`).catch(() => false)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`the page never satisfied ${expression}`);
  }

  async screenshot(): Promise<Buffer> {
    const { data } = (await this.browser.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true }, this.sessionId)) as { data: string };
    return Buffer.from(data, 'base64');
  }
}
