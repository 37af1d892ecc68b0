/*
 * `execgate vault rotate-key`: re-encrypt every vault entry under a new random key. The new
 * vault and the new key are committed so that a crash at any point leaves a vault that opens
 * with the old key or the new one (see src/vault/keys.ts).
 */
import type { Command } from 'commander';
import { ChangeRecord } from '../../audit/cli-events';
import type { CliIo } from '../io';
import { getCliStores, getOrAddCommand } from './secret-stores';

export function registerVaultCommands(program: Command, io: CliIo): void {
  const vaultCommand = getOrAddCommand(program, 'vault', 'Manage the encrypted vault under $EXECGATE_HOME');
  vaultCommand
    .command('rotate-key')
    .description('Re-encrypt every vault entry under a new key; the old key stops working')
    .action(async () => {
      const { vault } = getCliStores(io);
      // Recorded under the vault lock once the new key is known, before anything is written.
      const change = new ChangeRecord(io.env, 'vault.rotated');
      let result;
      try {
        result = await vault.rotateKey({
          beforeCommit: (next) => change.record({ entries: next.entries, keyStore: next.keyStore, oldKeyId: next.oldKeyId.slice(0, 12), newKeyId: next.newKeyId.slice(0, 12) }),
        });
      } catch (error) {
        throw change.failed(error);
      }
      if (result === undefined) {
        io.stdout.write(`No vault at ${vault.path}; nothing to rotate.\n`);
        return;
      }
      const where = result.keyStore === 'keyring' ? 'the OS keyring' : `the key file ${vault.keyPath}`;
      io.stdout.write(
        `Rotated the vault key: ${result.entries} ${result.entries === 1 ? 'entry' : 'entries'} re-encrypted ` +
          `(key id ${result.oldKeyId.slice(0, 12)} -> ${result.newKeyId.slice(0, 12)}); the new key is in ${where}.\n`,
      );
    });
}
