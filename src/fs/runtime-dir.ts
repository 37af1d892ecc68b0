/*
 * Where a gateway keeps its runtime sockets and files (spawn helper, egress proxy): /tmp, not
 * $TMPDIR. Every sandboxed run gets a private /tmp (and its own gateway's temp directory), so
 * runtime directories there are out of every run's reach, whichever gateway made them; a
 * gateway whose TMPDIR is elsewhere would otherwise leave its sockets where another gateway's
 * runs, whose roots may hold that directory, could replace them. /tmp is also short enough for
 * a UNIX socket path. Its temp directory only where /tmp cannot be used.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { tmpdir } from 'node:os';

let base: string | undefined;

export function getRuntimeBase(): string {
  if (base !== undefined) return base;
  try {
    accessSync('/tmp', constants.W_OK | constants.X_OK);
    base = statSync('/tmp').isDirectory() ? '/tmp' : tmpdir();
  } catch {
    base = tmpdir();
  }
  return base;
}
