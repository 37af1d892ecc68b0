/*
 * A sentinel stands in for an injected secret inside the sandbox. It has the value's length in
 * bytes (so a Content-Length computed by the client stays right after the proxy swaps it) and the
 * value's shape per position (upper case, lower case, digit, other printable ASCII kept as is),
 * so that clients which check a token's format accept it. Each letter or digit is drawn at random
 * per run; the value's punctuation (as in `ghp_` / `sk-` prefixes) is the only thing it shares.
 * Non-ASCII bytes of the value become random lower-case letters.
 */
import { randomInt } from 'node:crypto';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGIT = '0123456789';

export function createSentinel(value: string): string {
  const bytes = Buffer.from(value, 'utf8');
  for (;;) {
    let out = '';
    for (const byte of bytes) {
      const ch = String.fromCharCode(byte);
      if (byte >= 0x41 && byte <= 0x5a) out += pick(UPPER);
      else if (byte >= 0x30 && byte <= 0x39) out += pick(DIGIT);
      else if ((byte >= 0x61 && byte <= 0x7a) || byte >= 0x80 || byte < 0x20 || byte === 0x7f) out += pick(LOWER);
      else out += ch;
    }
    // A value with no letters or digits would give back itself: keep drawing letters then.
    if (out !== value) return out;
    if (!/[A-Za-z0-9]/.test(out)) return Array.from(bytes, () => pick(LOWER)).join('');
  }
}

function pick(alphabet: string): string {
  return alphabet[randomInt(alphabet.length)];
}
