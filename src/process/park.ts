/*
 * The parked start of an unsandboxed shell (SpawnPlan.parked): what its script runs first, on
 * the command's first line (so the shell's own messages number the lines as written). It reads
 * one line from stdin, the gateway's word that the run's start record is on disk; at end of
 * input (the gateway refused, or died) the command never runs. Then stdin is /dev/null, as for
 * any sync run.
 */
export const PARK = 'read -r __execgate_go || exit 125; unset __execgate_go; exec </dev/null; ';

const PARK_BYTES = Buffer.from(PARK);

/**
 * How many of a parked run's first stderr bytes are looked at for the park's text: bash quotes
 * the whole first line in a syntax error found there, before anything of the line has run, so
 * that message is the first thing on stderr, in one write.
 */
export const PARK_QUOTE_WINDOW = 4096;

/** `chunk` without the park's text, where bash quoted it. */
export function withoutPark(chunk: Buffer): Buffer {
  const at = chunk.indexOf(PARK_BYTES);
  return at < 0 ? chunk : Buffer.concat([chunk.subarray(0, at), chunk.subarray(at + PARK_BYTES.length)]);
}
