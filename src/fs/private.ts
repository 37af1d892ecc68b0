/*
 * Files that hold a key: read only when they are a regular file (no link followed: O_NOFOLLOW),
 * owned by this user and closed to others. The checks run on the open descriptor (fstat), so a
 * file swapped in after a check on the path cannot be read instead. A missing file is no error
 * (the caller creates one or looks elsewhere). One rule, a sync face and an async one.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, promises as fs, type Stats } from 'node:fs';
import { ExecgateError, type ErrorCode } from '../errors';

export interface PrivateFileRules {
  /** What the file is, for messages: `audit key file`. */
  readonly what: string;
  /** For a link, a file that is not regular, open to others, or owned by another user. */
  readonly permissionsCode: ErrorCode;
  /** For any other failure to open it. */
  readonly ioCode: ErrorCode;
  /** What else others could do once they read it, e.g. ` and forge audit records`. */
  readonly risk?: string;
  /** More advice after `Run \`chmod 600\` on it`. */
  readonly advice?: string;
}

const FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

/** The error for a failed open, or undefined when the file does not exist. */
function openFailed(error: unknown, path: string, rules: PrivateFileRules): ExecgateError | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return undefined;
  if (code === 'ELOOP') {
    return new ExecgateError(rules.permissionsCode, `The ${rules.what} \`${path}\` is a symbolic link; execgate only reads a regular file it owns. Replace the link with the file itself (mode 0600).`, { path });
  }
  return new ExecgateError(rules.ioCode, `Cannot read the ${rules.what} \`${path}\`: ${code ?? String(error)}.`, { path }, { cause: error });
}

function checkStats(stat: Stats, path: string, rules: PrivateFileRules): void {
  if (!stat.isFile()) throw new ExecgateError(rules.permissionsCode, `The ${rules.what} \`${path}\` is not a regular file.`, { path });
  if (process.platform === 'win32') return;
  if ((stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw new ExecgateError(
      rules.permissionsCode,
      `The ${rules.what} \`${path}\` has mode ${mode}, so other users may read it${rules.risk ?? ''}; execgate refuses to use it. Run \`chmod 600\` on it${rules.advice ?? ''}.`,
      { path, mode },
    );
  }
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
    throw new ExecgateError(rules.permissionsCode, `The ${rules.what} \`${path}\` is owned by another user (uid ${stat.uid}).`, { path });
  }
}

/** The file's text, or undefined when it does not exist. */
export function readPrivateFileSync(path: string, rules: PrivateFileRules): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, FLAGS);
  } catch (error) {
    const failure = openFailed(error, path, rules);
    if (failure) throw failure;
    return undefined;
  }
  try {
    checkStats(fstatSync(fd), path, rules);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** The file's bytes, or undefined when it does not exist; the caller may wipe them. */
export async function readPrivateFile(path: string, rules: PrivateFileRules): Promise<Buffer | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, FLAGS);
  } catch (error) {
    const failure = openFailed(error, path, rules);
    if (failure) throw failure;
    return undefined;
  }
  try {
    checkStats(await handle.stat(), path, rules);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
