/*
 * The name of the user running the CLI, for the `actor` of its runs (`cli:<name>`); the uid
 * where the system has no name for it.
 */
import os from 'node:os';

export function getCurrentUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return String(process.getuid?.() ?? 'unknown');
  }
}
