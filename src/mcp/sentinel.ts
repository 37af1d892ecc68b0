/*
 * The working-directory sentinel (seed 001). The bash tool runs each command in the session's
 * tracked directory (the request's `cwd`), with a host prologue that sets an EXIT trap printing
 *
 *     \n<marker>\n<final $PWD>\0
 *
 * The directory ends with a NUL, the one byte a path cannot hold: any other name Linux allows,
 * newlines included, comes back whole.
 * on stdout when the shell exits. The trap also fires when the command calls `exit`, and leaves
 * the command's exit status alone (bash and dash both keep it when the trap does not call exit).
 * The prologue is never shown in results, audit records or policy decisions.
 *
 * Why output cannot move the directory: the marker is 128 random bits, fresh for every call,
 * and only accepted as the last two lines of stdout of a run that ended on its own. Text a
 * command prints (a file it cats, a program's output, the output of an earlier call) cannot
 * know it. A command that inspects its own shell (`trap -p`) can read it, but such a command
 * could just as well `cd`; the directory is not a security boundary, because the gateway checks
 * every call's cwd against the policy's roots anyway.
 *
 * Bash runs the EXIT trap even when killed by SIGTERM, so a timed-out or killed run may print a
 * block: it is stripped like any other, but not believed (seed 001: a command killed before
 * it finished leaves the directory unchanged).
 */
import { randomFillSync } from 'node:crypto';
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';

/** Shown instead of a marker that turns up anywhere else in the output (`trap -p`, say). */
export const MARKER_PLACEHOLDER = '[execgate:cwd-marker]';

export interface Sentinel {
  readonly marker: string;
  /** Shell text for the request's `prologue`. */
  readonly prologue: string;
}

/*
 * Markers are cut from a pool of random bytes filled 256 markers at a time: each marker still
 * has 128 bits of its own, used once, but a call no longer asks the system's generator for 16
 * bytes (a profile of the server at load showed 25-60 us a call in randomFillSync).
 */
const MARKER_BYTES = 16;
const pool = Buffer.alloc(MARKER_BYTES * 256);
let poolOffset = pool.length;

function nextMarkerBytes(): string {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + MARKER_BYTES);
  // Used bytes are cleared, so the pool never holds a marker already handed out.
  pool.fill(0, poolOffset, poolOffset + MARKER_BYTES);
  poolOffset += MARKER_BYTES;
  return hex;
}

export function createSentinel(): Sentinel {
  const marker = `__EXECGATE_CWD_${nextMarkerBytes()}__`;
  return { marker, prologue: prologueFor(marker) };
}

function prologueFor(marker: string): string {
  // One printf, so the block reaches the pipe in one write; errors (a closed stdout) are
  // dropped so they do not show up in the command's stderr.
  return `trap '{ printf "\\n%s\\n%s\\000" ${marker} "$PWD"; } 2>/dev/null' EXIT`;
}

export interface SentinelParse {
  /** The text without the sentinel block, and with any other copy of the marker masked. */
  readonly text: string;
  /** The directory the block named, when it was the last two lines; else undefined. */
  readonly cwd: string | undefined;
  /** Bytes removed with the block (0 when there was none). */
  readonly removedBytes: number;
}

/**
 * Find the last sentinel block in `text` and remove it. `cwd` is set only when the block ends
 * the text exactly (nothing after the directory line) and the directory is absolute.
 */
export function takeSentinel(text: string, marker: string): SentinelParse {
  const start = text.lastIndexOf(`\n${marker}`);
  if (start < 0) return { text: maskMarker(text, marker), cwd: undefined, removedBytes: 0 };
  const afterMarker = start + 1 + marker.length;
  let end = text.length;
  let cwd: string | undefined;
  if (text[afterMarker] === '\n') {
    const nul = text.indexOf('\0', afterMarker + 1);
    end = nul < 0 ? text.length : nul + 1;
    const line = text.slice(afterMarker + 1, nul < 0 ? text.length : nul);
    if (nul === text.length - 1 && line.startsWith('/')) cwd = line;
  } else if (afterMarker < text.length) {
    // The marker is not followed by its newline: not our block; leave the text, mask the marker.
    return { text: maskMarker(text, marker), cwd: undefined, removedBytes: 0 };
  }
  const removed = text.slice(start, end);
  return { text: maskMarker(text.slice(0, start) + text.slice(end), marker), cwd, removedBytes: Buffer.byteLength(removed) };
}

/**
 * Remove the block `\n<marker>\n<directory>\0` from the combined output, where stderr written
 * after the trap may follow it. The last copy goes; other copies of the marker are masked.
 */
export function stripSentinel(text: string, marker: string): string {
  const start = text.lastIndexOf(`\n${marker}\n`);
  if (start < 0) {
    // A block cut short (the process died mid-write) is still removed if it ends the text.
    const bare = text.lastIndexOf(`\n${marker}`);
    if (bare >= 0 && bare + 1 + marker.length === text.length) return maskMarker(text.slice(0, bare), marker);
    return maskMarker(text, marker);
  }
  const nul = text.indexOf('\0', start + 1 + marker.length + 1);
  const end = nul < 0 ? text.length : nul + 1;
  return maskMarker(text.slice(0, start) + text.slice(end), marker);
}

function maskMarker(text: string, marker: string): string {
  if (!text.includes(marker)) return text;
  // The prologue shares the command's first line, so a syntax error there quotes it
  // (`bash: -c: line 1: \`trap '...' EXIT; foo(\``): show the line as the caller wrote it.
  const prologue = `${prologueFor(marker)}; `;
  const bare = text.includes(prologue) ? text.split(prologue).join('') : text;
  return bare.includes(marker) ? bare.split(marker).join(MARKER_PLACEHOLDER) : bare;
}

/** Bytes from the end of a full-output file searched for the block (it sits near the end). */
const FILE_TAIL_BYTES = 256 * 1024;

/**
 * Remove the sentinel block from the tail of a full-output file the gateway spilled, so the
 * path handed to the agent leads to the same text it was shown. Best effort: a file that cannot
 * be rewritten keeps the block (the marker is single-use anyway).
 */
export function stripSentinelFromFile(path: string, marker: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r+');
    const size = fstatSync(fd).size;
    const from = Math.max(0, size - FILE_TAIL_BYTES);
    const tail = Buffer.alloc(size - from);
    let read = 0;
    while (read < tail.length) {
      const n = readSync(fd, tail, read, tail.length - read, from + read);
      if (n === 0) break;
      read += n;
    }
    const needle = Buffer.from(`\n${marker}\n`);
    const start = tail.lastIndexOf(needle);
    if (start < 0) return;
    const nul = tail.indexOf(0x00, start + needle.length);
    const end = nul < 0 ? tail.length : nul + 1;
    const rest = tail.subarray(end, read);
    let written = 0;
    while (written < rest.length) written += writeSync(fd, rest, written, rest.length - written, from + start + written);
    ftruncateSync(fd, from + start + rest.length);
  } catch {
    // Leave the file as it is.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
