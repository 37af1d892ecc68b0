/*
 * The parked start of an unsandboxed shell (SpawnPlan.parked): what its script runs first, on
 * the command's first line (so the shell's own messages number the lines as written). It reads
 * one line from stdin, the gateway's word that the run's start record is on disk; at end of
 * input (the gateway refused, or died) the command never runs. Then stdin is /dev/null, as for
 * any sync run.
 */
import { CLOSE_FDS } from './inherited-fds';

export const PARK = 'read -r __execgate_go || exit 125; unset __execgate_go; exec </dev/null; ';

/**
 * The park of a bash shell: it first closes the descriptors above 2 it inherited (CLOSE_FDS), so
 * that the gateway need not look for any before the spawn (reading every descriptor's flags from
 * /proc cost about 0.4 ms of the event loop per run, half of a run's preparation) nor start a
 * closing bash ahead of the shell. Nothing of the command has run before they are closed, as
 * with that bash; the shell's own messages quote the line without it (withoutPark).
 */
export const PARK_CLOSING = `${CLOSE_FDS}; ${PARK}`;

const PARK_BYTES = Buffer.from(PARK);
const CLOSING_BYTES = Buffer.from(`${CLOSE_FDS}; `);

/**
 * How many of a parked run's first stderr bytes are looked at for the park's text: bash quotes
 * the whole first line in a syntax error found there, before anything of the line has run, so
 * that message is the first thing on stderr, in one write.
 */
export const PARK_QUOTE_WINDOW = 4096;

/** `chunk` without the park's text (either form), where bash quoted it. */
export function withoutPark(chunk: Buffer): Buffer {
  let at = chunk.indexOf(PARK_BYTES);
  if (at < 0) return chunk;
  const end = at + PARK_BYTES.length;
  if (at >= CLOSING_BYTES.length && chunk.subarray(at - CLOSING_BYTES.length, at).equals(CLOSING_BYTES)) at -= CLOSING_BYTES.length;
  return Buffer.concat([chunk.subarray(0, at), chunk.subarray(end)]);
}
