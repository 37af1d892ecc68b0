import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ExecgateError } from '../../errors';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { formatBytes, isBinary } from './binary';
import { attempt, fileOpError } from './fs-errors';
import { O_NOFOLLOW } from './roots';

const SCHEMA = defineSchema('read_file', 'Read a UTF-8 text file inside the working directory and return its content. Binary files are reported, not returned.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'File path, relative to the working directory.' },
  },
  required: ['path'],
  additionalProperties: false,
});

export class ReadFileTool extends FileTool {
  readonly name = 'read_file';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const { maxReadBytes } = this.context.limits;
    const target = this.context.roots.resolve(path);
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    const handle = await attempt('read', path, open(target.real, constants.O_RDONLY | O_NOFOLLOW | constants.O_NONBLOCK));
    try {
      const stats = await handle.stat();
      if (stats.isDirectory()) throw fileOpError('read', path, 'it is a directory (use list_dir)');
      if (!stats.isFile()) throw fileOpError('read', path, 'it is not a regular file');
      if (stats.size > maxReadBytes) {
        throw new ExecgateError(
          'EXECGATE_ERR_FILE_TOO_LARGE',
          `The file \`${path}\` is ${stats.size} bytes; read_file returns at most ${formatBytes(maxReadBytes)}.`,
          { path, size: stats.size, max: maxReadBytes },
        );
      }
      // Read one byte past the limit so a file that grew after fstat is still caught.
      const buffer = Buffer.alloc(Math.min(stats.size, maxReadBytes) + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length === buffer.length) break;
      }
      if (length > maxReadBytes) {
        throw new ExecgateError('EXECGATE_ERR_FILE_TOO_LARGE', `The file \`${path}\` is larger than ${formatBytes(maxReadBytes)}, the most read_file returns.`, { path, max: maxReadBytes });
      }
      const content = buffer.subarray(0, length);
      if (isBinary(content)) return `Binary file ${path} (${length} bytes); its content is not shown.`;
      return content.toString('utf8');
    } finally {
      await handle.close();
    }
  }
}
