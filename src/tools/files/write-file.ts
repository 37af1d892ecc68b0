import { constants } from 'node:fs';
import { lstat, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ExecgateError } from '../../errors';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { formatBytes } from './binary';
import { attempt, fileOpError } from './fs-errors';
import { O_NOFOLLOW } from './roots';

const SCHEMA = defineSchema('write_file', 'Write text to a file inside the working directory, replacing it if it exists. Missing parent directories are created.', {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'File path, relative to the working directory.' },
    content: { type: 'string', description: 'The complete new content of the file.' },
  },
  required: ['path', 'content'],
  additionalProperties: false,
});

export class WriteFileTool extends FileTool {
  readonly name = 'write_file';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const path = args.path as string;
    const content = args.content as string;
    const { maxWriteBytes } = this.context.limits;
    const bytes = Buffer.byteLength(content, 'utf8');
    if (bytes > maxWriteBytes) {
      throw new ExecgateError(
        'EXECGATE_ERR_FILE_TOO_LARGE',
        `The content for \`${path}\` is ${bytes} bytes; write_file writes at most ${formatBytes(maxWriteBytes)}.`,
        { path, size: bytes, max: maxWriteBytes },
      );
    }
    const target = this.context.roots.resolve(path);
    if (target.exists) {
      const stats = await attempt('write', path, lstat(target.real));
      if (stats.isDirectory()) throw fileOpError('write', path, 'it is a directory');
    } else {
      // Every missing component lies under the checked real path, so creating them stays inside.
      await attempt('create the parent directory of', path, mkdir(dirname(target.real), { recursive: true }));
    }
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | O_NOFOLLOW | constants.O_NONBLOCK;
    const handle = await attempt('write', path, open(target.real, flags, 0o666));
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw fileOpError('write', path, 'it is not a regular file');
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close();
    }
    return `Wrote ${bytes} bytes to ${target.display}`;
  }
}
