/*
 * Special files are refused before they are opened. Opening a FIFO for reading blocks until a
 * writer appears (forever, and a blocked open(2) ignores the event loop); a device such as
 * /dev/zero never ends; /proc and /sys files lie about their size and some block. A state
 * directory, policy file or vault that names one is a mistake or an attack, so each answers
 * with a coded error at once. The check runs on the path (following links) before open, and
 * the open itself is non-blocking with an fstat after it, so a file swapped in between cannot
 * hang the call either.
 */
import { constants, closeSync, fstatSync, openSync, promises as fs, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { ExecgateError } from '../errors';
import { isInside } from './paths';

const PSEUDO_ROOTS = ['/proc', '/sys', '/dev'];

const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** The real path of `path`, or of its nearest existing ancestor joined with the rest. */
function getRealPath(path: string): string {
  let current = resolve(path);
  let rest = '';
  for (;;) {
    try {
      return rest === '' ? realpathSync(current) : `${realpathSync(current)}${sep}${rest}`;
    } catch {
      const parent = dirname(current);
      if (parent === current) return resolve(path);
      rest = rest === '' ? current.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)) : `${current.slice(parent.length + (parent.endsWith(sep) ? 0 : 1))}${sep}${rest}`;
      current = parent;
    }
  }
}

function describeStats(stats: Stats): string | undefined {
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isSocket()) return 'a socket';
  return undefined;
}

/** What makes `path` special (`a FIFO`, `a file under /proc`), or undefined for an ordinary path. */
export function getSpecialKind(path: string): string | undefined {
  for (const candidate of new Set([resolve(path), getRealPath(path)])) {
    const root = PSEUDO_ROOTS.find((r) => isInside(candidate, r));
    if (root) return `a file under ${root}`;
  }
  try {
    return describeStats(statSync(path));
  } catch {
    return undefined; // missing: the caller's open reports it
  }
}

function specialFile(path: string, what: string, kind: string): ExecgateError {
  return new ExecgateError(
    'EXECGATE_ERR_SPECIAL_FILE',
    `The ${what} \`${path}\` is ${kind}; execgate reads and writes only ordinary files and directories there. Point it at a regular file or directory.`,
    { path, kind },
  );
}

/** Throw EXECGATE_ERR_SPECIAL_FILE when `path` is special. `what` names it for the message. */
export function validateOrdinaryPath(path: string, what: string): void {
  const kind = getSpecialKind(path);
  if (kind !== undefined) throw specialFile(path, what, kind);
}

/** Open a regular file for reading without ever blocking on it; the caller closes the fd. */
export function openRegularFileSync(path: string, what: string): number {
  validateOrdinaryPath(path, what);
  const fd = openSync(path, OPEN_FLAGS);
  const kind = describeStats(fstatSync(fd));
  if (kind !== undefined) {
    closeSync(fd);
    throw specialFile(path, what, kind);
  }
  return fd;
}

/** Read a whole regular file, refusing special files before and after opening it. */
export async function readRegularFile(path: string, what: string): Promise<string> {
  validateOrdinaryPath(path, what);
  const handle = await fs.open(path, OPEN_FLAGS);
  try {
    const kind = describeStats(await handle.stat());
    if (kind !== undefined) throw specialFile(path, what, kind);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
