/*
 * Reading a secret value for `secret set` and `encrypt`. Values come from stdin only, never
 * from argv (argv is visible to every local user in /proc and lands in shell history). From a
 * pipe, the whole input is the value minus ONE trailing newline; from a terminal, one line is
 * read with echo off. The raw bytes are wiped once decoded.
 */
import { ExecgateError } from '../../errors';
import { MAX_VALUE_BYTES } from '../../stores';
import type { CliIo } from '../io';

interface TtyInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

function invalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_SECRET_VALUE_INVALID', message);
}

async function readAll(stdin: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stdin) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk as Uint8Array);
      chunks.push(bytes);
      size += bytes.length;
      if (size > MAX_VALUE_BYTES + 2) throw invalid(`The value on stdin is longer than ${MAX_VALUE_BYTES} bytes.`);
    }
    return Buffer.concat(chunks);
  } finally {
    for (const chunk of chunks) chunk.fill(0);
  }
}

/** One line from a terminal with echo off (raw mode); Ctrl-C cancels. */
function readHidden(stdin: TtyInput, io: CliIo, prompt: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const bytes: number[] = [];
    io.stderr.write(prompt);
    const finish = (error?: Error) => {
      stdin.removeListener('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
      const buffer = Buffer.from(bytes);
      bytes.fill(0);
      if (error) {
        buffer.fill(0);
        reject(error);
      } else resolve(buffer);
    };
    const onData = (chunk: Buffer | string) => {
      for (const byte of typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk) {
        if (byte === 0x03) return finish(new ExecgateError('EXECGATE_ERR_CLI_USAGE', 'Cancelled; nothing was stored.', { cancelled: true }));
        if (byte === 0x0d || byte === 0x0a || byte === 0x04) return finish();
        if (byte === 0x7f || byte === 0x08) {
          // Drop one whole UTF-8 character: its continuation bytes, then its lead byte.
          while (bytes.length > 0 && (bytes[bytes.length - 1] & 0xc0) === 0x80) bytes.pop();
          bytes.pop();
        } else bytes.push(byte);
      }
    };
    stdin.setRawMode!(true);
    stdin.on('data', onData);
    stdin.resume();
  });
}

/** The secret value from stdin, validated: non-empty UTF-8 without NUL. */
export async function readSecretValue(io: CliIo, what: string): Promise<string> {
  const stdin = io.stdin as TtyInput;
  const raw = stdin.isTTY && typeof stdin.setRawMode === 'function'
    ? await readHidden(stdin, io, `Value for ${what} (input hidden, Enter to finish): `)
    : await readAll(stdin);
  try {
    let end = raw.length;
    if (end > 0 && raw[end - 1] === 0x0a) end -= 1;
    if (end > 0 && raw[end - 1] === 0x0d && end < raw.length) end -= 1;
    const bytes = raw.subarray(0, end);
    if (bytes.length === 0) throw invalid(`The value for ${what} on stdin is empty; nothing was stored.`);
    if (bytes.includes(0)) throw invalid(`The value for ${what} contains a NUL byte, which no environment variable can hold; nothing was stored.`);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw invalid(`The value for ${what} is not valid UTF-8; store binary data base64-encoded. Nothing was stored.`);
    }
  } finally {
    raw.fill(0);
  }
}
