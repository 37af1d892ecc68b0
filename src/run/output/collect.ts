/*
 * What sync and PTY runs share after the bytes leave the redactor: bounded per-stream captures,
 * the combined capture, the full-output file, and the result shape. Executors push redacted
 * bytes in (valid during the call only: everything kept is copied); `finish` builds the ExecResult.
 */
import { join } from 'node:path';
import { summarizeDecisions } from '../../egress/describe';
import { BoundedCapture } from './capture';
import type { SpawnPlan } from '../../plan/prepare';
import { describeEnding, formatCutNotice, type ExecResult } from '../result';
import { OutputSpill } from './spill';

import type { RunEnd, StreamName } from '../lifecycle';

export class OutputCollector {
  readonly #plan: SpawnPlan;
  readonly #captures: Record<StreamName, BoundedCapture>;
  readonly #combined: BoundedCapture;
  readonly #spill: OutputSpill;
  readonly #onOutput?: (stream: StreamName, chunk: Buffer) => void;
  readonly #started = performance.now();

  constructor(plan: SpawnPlan, home: string, onOutput?: (stream: StreamName, chunk: Buffer) => void) {
    this.#plan = plan;
    const { limits } = plan;
    this.#captures = { stdout: new BoundedCapture(limits.maxOutput), stderr: new BoundedCapture(limits.maxOutput) };
    this.#combined = new BoundedCapture(limits.maxOutput * 2);
    this.#spill = new OutputSpill({
      dir: join(home, 'runs'),
      runId: plan.runId,
      maxFileBytes: limits.maxFileBytes,
      pendingLimit: limits.maxOutput * 2 + 65_536,
    });
    this.#onOutput = onOutput;
  }

  push(stream: StreamName, bytes: Buffer): void {
    if (bytes.length === 0) return;
    const capture = this.#captures[stream];
    capture.push(bytes);
    this.#combined.push(bytes);
    this.#spill.write(bytes);
    if (!this.#spill.active && (capture.truncated || this.#combined.truncated)) this.#spill.activate();
    // The listener's own copy: `bytes` may be a view of a read buffer used again (lifecycle.ts),
    // and a listener may keep it (a stream write that completes later).
    if (this.#onOutput) this.#onOutput(stream, Buffer.from(bytes));
  }

  finish(end: RunEnd): ExecResult {
    const plan = this.#plan;
    const ending = { exitCode: end.exitCode, signal: end.signal, timedOut: end.stopped === 'timeout', shutdown: end.stopped === 'shutdown' };
    const message = describeEnding({ ...ending, timeout: plan.limits.timeout, complete: end.complete });
    const fullOutputPath = this.#spill.close(`[execgate: ${message}]`);
    const failure = this.#spill.failure;
    const notices = failure === undefined
      ? []
      : [`The full output could not be saved to a file (${failure}): only the part shown here was kept; the cut bytes are lost.`];
    const notice = (cut: number): string => formatCutNotice(cut, fullOutputPath);
    const { stdout, stderr } = this.#captures;
    return {
      id: plan.runId,
      command: plan.displayCommand,
      mode: plan.request.mode,
      cwd: plan.cwd,
      stdout: stdout.toText(notice),
      stderr: stderr.toText(notice),
      output: this.#combined.toText(notice),
      exitCode: ending.exitCode,
      signal: ending.signal,
      timedOut: ending.timedOut,
      killed: ending.timedOut || ending.shutdown,
      // A drain that gave up may have lost the last bytes: say so rather than look whole.
      truncated: { stdout: stdout.truncated || !end.complete, stderr: stderr.truncated, output: this.#combined.truncated || !end.complete },
      bytes: { stdout: stdout.totalBytes, stderr: stderr.totalBytes },
      durationMs: Math.round((performance.now() - this.#started) * 1000) / 1000,
      redactions: end.redactions,
      env: { removed: plan.envReport.removed, withheld: plan.envReport.withheld },
      refs: plan.refs,
      sandbox: plan.sandbox.sandboxed ? { sandboxed: true } : { sandboxed: false, reason: plan.sandbox.reason },
      network: plan.network,
      egress: summarizeDecisions(plan.resources.getEgressDecisions()),
      ...(fullOutputPath ? { fullOutputPath } : {}),
      message,
      ...(notices.length > 0 ? { notices } : {}),
    };
  }
}
