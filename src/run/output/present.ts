/*
 * One place that presents output. Every caller gets the same ExecResult (redacted, bounded by
 * the capture); what differs is its seed's budget, and that is applied here:
 *   - a head cut per stream (run_bash, seed 000: the first 50 KB of each stream);
 *   - a middle cut (MCP, seed 002: past 128 KB keep the first and last 4 KB);
 *   - cuts on character boundaries (utf8.ts), and a notice saying how much was cut and where
 *     the full output is;
 *   - the full redacted output saved once: the lifecycle's spill file when the capture was cut,
 *     else one file written here, on first need;
 *   - the shell's exit-status convention for a signal (128 + N).
 * run_bash, the MCP `bash` tool and `execgate run` only map the result to their shapes.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { ensureDir } from '../../home';
import { formatCutNotice, type ExecResult } from '../result';
import { getCharStartAfter, getCharStartBefore } from './utf8';

/** Seed 002's budget: output longer than this (in bytes) is cut in the middle. */
export const MIDDLE_CUT_LIMIT = 128 * 1024;
/** Bytes kept from the start and from the end of output cut in the middle. */
export const MIDDLE_CUT_KEEP = 4 * 1024;

/** 128 + the signal's number (the shell's convention), or undefined for an unknown signal. */
export function getSignalStatus(signal: NodeJS.Signals | null): number | undefined {
  const number = signal ? (osConstants.signals as Record<string, number>)[signal] : undefined;
  return number === undefined ? undefined : 128 + number;
}

/**
 * Where the full redacted output of `result` is: the lifecycle's spill file, or `text` (the
 * whole combined output as the caller shows it) saved now, once per result. Undefined if it
 * cannot be written.
 */
export class FullOutput {
  readonly #result: ExecResult;
  readonly #home: string;
  #path: string | undefined;
  #tried = false;

  constructor(result: ExecResult, home: string) {
    this.#result = result;
    this.#home = home;
    this.#path = result.fullOutputPath;
  }

  getPath(text: () => string): string | undefined {
    if (this.#path !== undefined || this.#tried) return this.#path;
    this.#tried = true;
    let file: string | undefined;
    try {
      file = join(ensureDir(join(this.#home, 'runs')), `${this.#result.id}.log`);
      const body = text();
      writeFileSync(file, `${body}${body === '' || body.endsWith('\n') ? '' : '\n'}[execgate: ${this.#result.message}]\n`, { mode: 0o600, flag: 'wx' });
      this.#path = file;
    } catch (error) {
      // No file (a full disk): the notice then says how much was cut but not where the rest is,
      // and a file cut short is not left to pass for the whole output.
      if (file !== undefined && (error as NodeJS.ErrnoException).code !== 'EEXIST') rmSync(file, { force: true });
    }
    return this.#path;
  }
}

/**
 * The first `maxBytes` of `text` with a notice, when the stream (`totalBytes` long) is longer;
 * `text` itself otherwise.
 */
export function cutHead(text: string, totalBytes: number, maxBytes: number, label: string, where: () => string | undefined): string {
  if (totalBytes <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  const end = getCharStartBefore(bytes, Math.min(maxBytes, bytes.length));
  const path = where();
  return `${bytes.subarray(0, end).toString('utf8')}\n[... ${label} truncated: showing the first ${end} of ${totalBytes} bytes${path === undefined ? '' : `; full output: ${path}`} ...]\n`;
}

/**
 * `text` with its middle cut when `totalBytes` (the size of the whole output, which may exceed
 * `text` when the capture already cut its middle) is over `limit`; undefined when nothing needs
 * cutting.
 */
export function cutMiddle(text: string, totalBytes: number, fullOutputPath: string | undefined, limit = MIDDLE_CUT_LIMIT, keep = MIDDLE_CUT_KEEP): string | undefined {
  if (totalBytes <= limit) return undefined;
  const bytes = Buffer.from(text, 'utf8');
  const headEnd = getCharStartBefore(bytes, Math.min(keep, bytes.length));
  const tailStart = getCharStartAfter(bytes, Math.max(headEnd, bytes.length - keep));
  const kept = headEnd + (bytes.length - tailStart);
  return bytes.subarray(0, headEnd).toString('utf8') + formatCutNotice(Math.max(0, totalBytes - kept), fullOutputPath) + bytes.subarray(tailStart).toString('utf8');
}
