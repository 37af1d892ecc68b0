/*
 * The gate every sandboxed run passes: bubblewrap's program is a small gate (src/programs/) that
 * says when the sandbox is set up and then waits; the gateway checks the sandbox's mounts
 * against the plan (verify.ts) and only then lets the run's program start. So a sandbox that is
 * not what the plan says runs nothing: the run fails with EXECGATE_ERR_SANDBOX_MISMATCH, which
 * its audit record (`exec.failed`) carries. And whatever bubblewrap itself says when it cannot
 * set a sandbox up arrives before the gate's mark: it becomes a coded error here, never raw text
 * in a run's output.
 *
 * Runs on pipes (sync, background) get gate.sh: the mark is a NUL on stderr, the word `go`
 * comes on stdin and the gate becomes the program at once (one round trip: everything on stderr
 * after the NUL is the program's); stdin goes on to the program (background) or is /dev/null
 * (sync). Runs on a terminal get pty-gate.bash, which also says SOH as the program starts
 * (spawner/pty.ts drives it with the functions below). Warm sandboxes (warm.ts) have a gate of
 * their own that also receives the program.
 */
import type { Readable } from 'node:stream';
import { PassThrough } from 'node:stream';
import { ExecgateError } from '../../errors';
import { CLOSE_FDS } from '../inherited-fds';
import type { SpawnedProcess, Spawner, SpawnRequest } from '../spawner/types';
import { changed, type SandboxLaunch } from './launch';
import { getBashGateScript, getGateScript } from '../programs';
import { findSandboxInit, identifySandboxInit, verifySandboxInit, type SandboxCheck, type SandboxInit } from './verify';

export const READY = 0x00;
export const STARTED = 0x01;

/** How long a sandbox may take to be set up before the run is given up (a bound on a hang). */
export const SETUP_TIMEOUT_MS = 60_000;
/** What is kept of bubblewrap's own words when it fails. */
const MAX_HELPER_TEXT = 4096;

/**
 * The gate's argv around the run's program. The gate itself hands over to its descriptor-closing
 * bash form (the argument after its name) when it holds inherited descriptors (gate.sh): decided
 * inside the sandbox on the descriptors that arrived there, not by reading this process's
 * descriptor table before every spawn (some 25 reads of /proc, half a millisecond a run).
 */
export function getGateProgram(program: readonly string[], keepStdin: boolean): string[] {
  return ['/bin/sh', '-c', getGateScript(), 'execgate-gate', getBashGateScript(CLOSE_FDS), keepStdin ? 'keep' : 'null', ...program];
}

/*
 * bubblewrap's (and nsenter's) messages for a sandbox it could not set up, as coded errors that
 * say what to change. The raw line is kept in `details.helper`, never in the message alone.
 */
export function helperFailed(text: string, cwd: string): ExecgateError {
  const line = text.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
  const shown = line.replace(/[^\x20-\x7e]/g, '?').slice(0, 300);
  const moved = /^execgate: (.*) changed while its sandbox was being set up$/.exec(line);
  if (moved) return changed(moved[1]);
  const chdir = /^bwrap: Can't chdir to (.*): (.*)$/.exec(line);
  if (chdir) {
    return new ExecgateError(
      'EXECGATE_ERR_SANDBOX_PATH',
      `The working directory ${cwd} cannot be entered inside the sandbox (${chdir[2]}): it may have been removed or replaced meanwhile, or lie where runs do not see it. Run the command in a directory inside the workspace. Nothing was run.`,
      { cwd, helper: shown },
    );
  }
  // A path of the plan that is gone or not what it was when bubblewrap came to mount it.
  const source = /^bwrap: Can't (?:find source path|get type of source|bind mount|mount tmpfs on|create file at|mkdir|open source|stat) ([^:]*)/.exec(line);
  if (source) return changed(source[1]);
  return new ExecgateError(
    'EXECGATE_ERR_SANDBOX_FAILED',
    'The sandbox helper (bubblewrap) could not set the sandbox up for this run; `details.helper` has its own words. Nothing was run; run the command again, and if it keeps failing, see SECURITY.md for what the sandbox needs (user and network namespaces, bubblewrap).',
    { helper: shown },
  );
}

export function mismatch(what: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_SANDBOX_MISMATCH',
    `The sandbox did not match its plan (${what}), so the command was not started. Something changed the file system while the sandbox was set up; nothing was run. Run it again, and look for what renames directories in the workspace.`,
    { mismatch: what },
  );
}

/**
 * Reads `stream` until the gate's mark `mark`. Resolves to true at the mark (`rest` then gets
 * what followed), or to the text that came instead (bubblewrap's error) once the stream ends.
 */
export function readMark(stream: Readable, mark: number, rest: PassThrough, limitMs = SETUP_TIMEOUT_MS): Promise<true | string> {
  return new Promise((resolve) => {
    let seen: Buffer = Buffer.alloc(0);
    let done = false;
    const finish = (value: true | string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stream.removeListener('data', onData);
      stream.removeListener('end', onEnd);
      stream.removeListener('close', onEnd);
      stream.removeListener('error', onEnd);
      resolve(value);
    };
    const onData = (chunk: Buffer): void => {
      // Before the mark only the sandbox helper speaks (a warning it went on after, or why it
      // stopped); the gate writes nothing else.
      const at = chunk.indexOf(mark);
      if (at >= 0) {
        stream.pause();
        if (at + 1 < chunk.length) rest.write(chunk.subarray(at + 1));
        finish(true);
        return;
      }
      if (seen.length < MAX_HELPER_TEXT) seen = Buffer.concat([seen, chunk]).subarray(0, MAX_HELPER_TEXT);
    };
    const onEnd = (): void => finish(seen.toString('utf8'));
    const timer = setTimeout(() => finish(`${seen.toString('utf8')}\n(no answer within ${limitMs} ms)`), limitMs);
    stream.on('data', onData);
    stream.resume();
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    stream.once('error', onEnd);
  });
}

/**
 * A stream of ours in front of one of the child's: it reads at once (Node resumes a child's
 * unread stdout when the child exits, which would lose the output of a program that ended before
 * the caller listened), and destroying it releases the child's.
 */
export function relay(source: Readable, into = new PassThrough()): PassThrough {
  source.pipe(into);
  into.once('close', () => source.destroy());
  return into;
}

/** Kill what was spawned for a run that is not going to start. */
export function abandon(child: SpawnedProcess): void {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch { /* already gone */ }
  }
  child.stdin?.destroy();
  child.stdout.destroy();
  child.stderr.destroy();
}

/** How long a failed start waits for what it killed to be gone before it reports the failure. */
const ABANDON_WAIT_MS = 5_000;

/**
 * `abandon`, then wait (bounded) until the process has exited, so that a start that fails has
 * left nothing running by the time its error reaches the caller (its sandbox's other processes
 * die with the sandbox's first process, in the kernel, as the group's signal reaches them).
 */
export async function abandonAndWait(child: SpawnedProcess): Promise<void> {
  abandon(child);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    // `exited` where the spawner has it (a terminal's `exit` waits for its output to be released).
    (child.exited ?? child.exit).then(() => undefined, () => undefined),
    new Promise<void>((resolve) => { timer = setTimeout(resolve, ABANDON_WAIT_MS); timer.unref(); }),
  ]);
  clearTimeout(timer);
}

/** The mount check, as an error when it fails; the sandbox's first process when it passes. */
export function checkSandbox(pid: number, check: SandboxCheck): SandboxInit {
  const found = findSandboxInit(pid);
  if (found === undefined) throw mismatch('the sandbox\'s first process could not be found');
  const problem = verifySandboxInit(found, check);
  if (problem !== undefined) throw mismatch(problem);
  // Read after the check: the process the check looked at, still there (its namespace and start time).
  const init = identifySandboxInit(found);
  if (init === undefined) throw mismatch('the sandbox\'s first process is not in a PID namespace of its own');
  return init;
}

/**
 * Resolves once the event loop has polled its descriptors again. libuv's epoll is level-triggered:
 * a descriptor just read from (stderr, for the start mark) is put back on the kernel's ready list
 * and stays there, ahead of any other, until a poll finds it empty. A program let go before that
 * poll, writing stdout then stderr, would have its stderr reported (and read) first.
 */
export function afterNextPoll(): Promise<void> {
  return new Promise((resolve) => { setImmediate(() => setImmediate(resolve)); });
}

export type SandboxedRequest = SpawnRequest & { readonly sandbox: SandboxLaunch };

/**
 * Start a sandboxed run on pipes behind the gate. Resolves once the program is starting, with
 * stderr after the gate's marks; rejects with a coded error, nothing of the run started, when
 * the sandbox could not be set up or does not match its plan.
 */
export async function startGated(spawner: Spawner, request: SandboxedRequest): Promise<SpawnedProcess> {
  const keep = request.stdin === 'pipe';
  const program = getGateProgram([request.shell, ...request.args], keep);
  const child = await spawner.spawn({ ...request, shell: program[0], args: program.slice(1), stdin: 'pipe' });
  const stderr = new PassThrough();
  stderr.once('close', () => child.stderr.destroy());
  const stdout = relay(child.stdout);
  // A gate that is gone when `go` is written (its sandbox ended meanwhile) reports that by its exit.
  child.stdin!.on('error', () => undefined);
  try {
    // After the mark only the program speaks: what follows it in the same read is its output.
    const ready = await readMark(child.stderr, READY, stderr);
    if (ready !== true) throw helperFailed(ready, request.cwd);
    const init = checkSandbox(child.pid, request.sandbox.check);
    // Set up and checked while the start record was made durable; the program acts only after.
    await request.ready;
    // stderr flows into the run's stream from here, and is polled empty once more before the
    // program may write (afterNextPoll): its stdout and stderr then arrive in the order written.
    child.stderr.pipe(stderr);
    await afterNextPoll();
    if (keep) child.stdin!.write('go\n');
    else child.stdin!.end('go\n');
    return { ...child, stdin: keep ? child.stdin : null, stdout, stderr, sandboxInit: init };
  } catch (error) {
    await abandonAndWait(child);
    throw error;
  }
}
