/*
 * Cutting UTF-8 bytes without splitting a character: every cut of output (a head, a middle,
 * a page of a file) goes through these, so none ends in a replacement character.
 */

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** The largest index <= `index` that starts a character (or is the end). */
export function getCharStartBefore(bytes: Buffer, index: number): number {
  let at = Math.max(0, Math.min(index, bytes.length));
  while (at > 0 && at < bytes.length && isContinuation(bytes[at])) at -= 1;
  return at;
}

/** The smallest index >= `index` that starts a character (or is the end). */
export function getCharStartAfter(bytes: Buffer, index: number): number {
  let at = Math.max(0, Math.min(index, bytes.length));
  while (at < bytes.length && isContinuation(bytes[at])) at += 1;
  return at;
}

/** Bytes to drop from the end of `bytes` so it does not end inside a character. */
export function getIncompleteTail(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back];
    if (isContinuation(byte)) continue; // keep looking for the lead byte
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}
