/*
 * Where a background run's redacted output goes: its file (capped, see output-file.ts) and a
 * bounded ring of the most recent bytes kept in memory. The closing lines go to both.
 */
import { BoundedCapture } from '../output/capture';
import { OutputFile } from './output-file';
import { getOutputPath } from './records';

export class BackgroundSink {
  readonly #file: OutputFile;
  readonly #ring: BoundedCapture;

  constructor(home: string, runId: string, limits: { ringBytes: number; maxFileBytes: number }) {
    this.#file = new OutputFile(getOutputPath(home, runId), limits.maxFileBytes);
    this.#ring = new BoundedCapture(limits.ringBytes, 1);
  }

  get path(): string {
    return this.#file.path;
  }

  push(bytes: Buffer): void {
    this.#file.write(bytes);
    this.#ring.push(bytes);
  }

  /** What could not be written to the file, in words, if anything. */
  get notice(): string | undefined {
    return this.#file.notice;
  }

  /** Append the closing lines and close the file; false when the file could not take them. */
  close(lines: string[]): boolean {
    const notice = this.#file.notice;
    this.#ring.push(Buffer.from(`\n${[...(notice ? [`[execgate: ${notice}]`] : []), ...lines].join('\n')}\n`));
    return this.#file.close(lines);
  }

  /** The command could not be started: the file says why. */
  failed(message: string): void {
    this.#file.close([`[background process failed: ${message}]`]);
  }

  /** Bytes of recent output held in memory (redacted). */
  recent(): Buffer {
    return this.#ring.tail();
  }
}
