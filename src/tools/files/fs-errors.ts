import { ExecgateError } from '../../errors';

const REASONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EEXIST: 'it already exists',
  ENOTDIR: 'a component of the path is not a directory',
  EISDIR: 'it is a directory',
  ENOTEMPTY: 'the directory is not empty',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'it is a symbolic link, which is not followed here',
  EXDEV: 'source and destination are on different file systems',
  EROFS: 'it is read-only here (outside the writable workspace, or kept read-only by the policy)',
};

/** A coded error for a failed file system call, naming the path as the model gave it. */
export function fileOpFailed(action: string, display: string, error: unknown): ExecgateError {
  if (error instanceof ExecgateError) return error;
  const code = (error as NodeJS.ErrnoException)?.code;
  const reason = (code && REASONS[code]) ?? (error instanceof Error ? error.message : String(error));
  return new ExecgateError(
    'EXECGATE_ERR_FILE_OP_FAILED',
    `Cannot ${action} \`${display}\`: ${reason}${code ? ` (${code})` : ''}.`,
    { path: display, errno: code },
    { cause: error },
  );
}

export function fileOpError(action: string, display: string, reason: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_FILE_OP_FAILED', `Cannot ${action} \`${display}\`: ${reason}.`, { path: display });
}

/** So a rejected fs call reaches the model as a coded error naming the path it gave, not a bare errno. */
export function attempt<T>(action: string, display: string, operation: Promise<T>): Promise<T> {
  return operation.catch((error: unknown) => {
    throw fileOpFailed(action, display, error);
  });
}
