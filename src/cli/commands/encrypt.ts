/*
 * `execgate encrypt [--label TEXT]`: store a value read from stdin as an encrypted blob in the
 * vault and print the `<<decrypt:ID>>` token that stands for it.
 */
import type { Command } from 'commander';
import { ChangeRecord } from '../../audit/cli-events';
import type { CliIo } from '../io';
import { readSecretValue } from './secret-input';
import { getCliStores } from './secret-stores';

export function registerEncryptCommand(program: Command, io: CliIo): void {
  program
    .command('encrypt')
    .description('Encrypt a value read from stdin into the vault and print its <<decrypt:ID>> token')
    .option('--label <text>', 'a note shown by `secret list` (not secret, not encrypted)')
    .action(async (flags: { label?: string }) => {
      const { vault } = getCliStores(io);
      const value = await readSecretValue(io, 'the blob');
      // Recorded before it is stored (the id is chosen first so the record can name it).
      const change = new ChangeRecord(io.env, 'secret.set');
      const id = await vault.createBlobId();
      try {
        await vault.encrypt(value, {
          id,
          ...(flags.label === undefined ? {} : { label: flags.label }),
          beforeCommit: () => change.record({ kind: 'decrypt', name: id, store: 'vault' }),
        });
      } catch (error) {
        throw change.failed(error);
      }
      io.stdout.write(`<<decrypt:${id}>>\n`);
    });
}
