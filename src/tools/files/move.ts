import { rename } from 'node:fs/promises';
import { isInside } from '../../fs/paths';
import { defineSchema } from '../types';
import { FileTool } from './base';
import { attempt, fileOpError } from './fs-errors';

const SCHEMA = defineSchema('move', 'Move or rename a file or directory inside the working directory. The destination must not exist.', {
  type: 'object',
  properties: {
    source: { type: 'string', description: 'Existing path, relative to the working directory.' },
    destination: { type: 'string', description: 'New path, relative to the working directory; its parent directory must exist.' },
  },
  required: ['source', 'destination'],
  additionalProperties: false,
});

export class MoveTool extends FileTool {
  readonly name = 'move';
  protected readonly schema = SCHEMA;

  protected async run(args: Record<string, unknown>): Promise<string> {
    const source = args.source as string;
    const destination = args.destination as string;
    const { roots } = this.context;
    const from = roots.resolveEntry(source, 'source');
    const to = roots.resolveEntry(destination, 'destination');
    if (!from.exists) throw fileOpError('move', source, 'no such file or directory (ENOENT)');
    // Refused rather than overwritten: a model that picks an existing name has made a mistake.
    if (to.exists) throw fileOpError('move', source, `the destination \`${destination}\` already exists (EEXIST)`);
    if (isInside(to.real, from.real)) throw fileOpError('move', source, 'the destination is inside the source');
    await attempt('move', source, rename(from.real, to.real));
    return `Moved ${from.display} to ${to.display}`;
  }
}
