const decoder = new TextDecoder('utf-8', { fatal: true });

/** A NUL byte near the start (git's rule) or bytes that are not UTF-8 mark a file as binary. */
export function isBinary(content: Buffer): boolean {
  if (content.subarray(0, 8192).includes(0)) return true;
  try {
    decoder.decode(content);
    return false;
  } catch {
    return true;
  }
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
