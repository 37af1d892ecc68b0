/*
 * `execgate secret set|list|rm|test`: manage named secrets in the OS keyring and the vault.
 * Values are read from stdin only and are never printed; listings show names and stores.
 * This module also registers `execgate encrypt` and `execgate vault rotate-key`.
 */
import { Option, type Command } from 'commander';
import { ChangeRecord } from '../../audit/cli-events';
import { ExecgateError, isExecgateError } from '../../errors';
import { readFileSync, statSync } from 'node:fs';
import { KeyringUnavailableError, MAX_VALUE_BYTES, isValidSecretName, validateSecretName } from '../../stores';
import { CliExit, type CliIo } from '../io';
import { registerEncryptCommand } from './encrypt';
import { readSecretValue } from './secret-input';
import { findSecretSource, type SecretLocation } from './secret-source';
import { callKeyring, getCliStores, getOrAddCommand, STORE_NAMES, toKeyringError, type StoreName } from './secret-stores';
import { registerVaultCommands } from './vault';

export type { CliIo } from '../io';
export { findSecretSource, getSecretVariable } from './secret-source';
export type { FindSecretOptions, SecretLocation } from './secret-source';

/** An SSH private key file, checked (ssh2 parses it) before anything is stored; never printed. */
function readSshKeyFile(path: string): { text: string; type: string; fingerprint: string } {
  let text: string;
  try {
    if (statSync(path).size > MAX_VALUE_BYTES) throw new Error(`it is larger than ${MAX_VALUE_BYTES} bytes`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ExecgateError('EXECGATE_ERR_SSH_KEY_INVALID', `Could not read the SSH key file ${path}: ${(error as Error).message}. Nothing was stored.`, { problem: 'unreadable' });
  }
  // Lazily: ssh2 is loaded only by commands that handle SSH keys.
  const { parsePrivateSshKey } = require('../../egress/ssh/keys') as typeof import('../../egress/ssh/keys');
  try {
    const key = parsePrivateSshKey(text, `The file ${path}`);
    return { text, type: key.type, fingerprint: key.fingerprint };
  } catch (error) {
    if (error instanceof ExecgateError) throw new ExecgateError(error.code, `${error.message} Nothing was stored.`, error.details);
    throw error;
  }
}

function describeLocation(location: SecretLocation): string {
  return location.source === 'env' ? `env (${location.variable})` : location.source;
}

function storeOption(): Option {
  return new Option('--store <store>', 'keyring or vault').choices(STORE_NAMES);
}

interface ListedEntry {
  kind: 'secret' | 'decrypt';
  name: string;
  store: StoreName;
  label?: string;
}

export function registerSecretCommands(program: Command, io: CliIo): void {
  const secret = getOrAddCommand(program, 'secret', 'Manage named secrets in the OS keyring and the encrypted vault');

  secret
    .command('set')
    .description('Store a secret read from stdin (one trailing newline is removed); never pass values as arguments')
    .argument('<name>', '1-128 characters of A-Z a-z 0-9 . _ - /, starting with a letter or digit')
    .addOption(storeOption())
    .option('--ssh-key <file>', 'store the SSH private key in FILE (checked first; for `delivery: ssh-agent` bindings) instead of reading stdin')
    .addHelpText('after', '\nDefault store: the OS keyring when one is reachable, else the vault.\nExample: printf %s "$TOKEN" | execgate secret set github-token\nExample: execgate secret set deploy-key --ssh-key ~/.ssh/id_ed25519_deploy')
    .action(async (name: string, flags: { store?: StoreName; sshKey?: string }) => {
      validateSecretName(name);
      // A key file is checked before any store is asked: a refusal stores nothing.
      const sshKey = flags.sshKey === undefined ? undefined : readSshKeyFile(flags.sshKey);
      const stores = getCliStores(io);
      // Decide the store before reading the value, so a refusal comes before anyone types it.
      let store = flags.store;
      if (store !== 'vault') {
        const probe = await stores.keyring.probe();
        if (probe.available) store = 'keyring';
        else if (store === 'keyring') throw toKeyringError(new KeyringUnavailableError(probe.reason), `storing <<secret:${name}>>`);
        else store = 'vault';
      }
      const value = sshKey?.text ?? await readSecretValue(io, `<<secret:${name}>>`);
      // Recorded before it is stored: the log never lacks a secret that commands can resolve.
      const change = new ChangeRecord(io.env, 'secret.set');
      try {
        if (store === 'keyring') {
          change.record({ kind: 'secret', name, store });
          await callKeyring(`storing <<secret:${name}>>`, () => stores.keyring.set(name, value));
        } else {
          await stores.vault.set(name, value, { beforeCommit: () => change.record({ kind: 'secret', name, store }) });
        }
      } catch (error) {
        throw change.failed(error);
      }
      io.stdout.write(`${name}: stored in the ${store}${sshKey ? ` (SSH key ${sshKey.type} ${sshKey.fingerprint})` : ''}\n`);
      // Say so when an earlier source would shadow what was just stored.
      const location = await findSecretSource(name, { env: io.env, home: stores.home, keyring: stores.keyring, vault: stores.vault }).catch(
        () => undefined,
      );
      if (location !== undefined && location.source !== store) {
        io.stderr.write(`execgate: note: <<secret:${name}>> resolves from ${describeLocation(location)}, which is checked before the ${store}\n`);
      }
    });

  secret
    .command('list')
    .description('List stored secrets and encrypted blobs: names and stores, never values')
    .option('--json', 'print one JSON object')
    .action(async (flags: { json?: boolean }) => {
      const stores = getCliStores(io);
      const entries: ListedEntry[] = [];
      let keyring: { available: boolean; reason?: string } = { available: true };
      try {
        const accounts = await stores.keyring.accounts();
        // execgate's own accounts (vault keys) start with `_`, which no secret name can.
        for (const account of [...new Set(accounts)].filter(isValidSecretName).sort()) entries.push({ kind: 'secret', name: account, store: 'keyring' });
      } catch (error) {
        if (!(error instanceof KeyringUnavailableError)) throw toKeyringError(error, 'listing secrets');
        keyring = { available: false, reason: (error as Error).message };
      }
      for (const entry of await stores.vault.list()) {
        entries.push(entry.label === undefined
          ? { kind: entry.kind, name: entry.name, store: 'vault' }
          : { kind: entry.kind, name: entry.name, store: 'vault', label: entry.label });
      }
      if (flags.json) {
        io.stdout.write(`${JSON.stringify({ entries, keyring, vault: stores.vault.path })}\n`);
        return;
      }
      if (!keyring.available) io.stderr.write(`execgate: keyring unavailable: ${keyring.reason}\n`);
      for (const entry of entries) {
        io.stdout.write(`${entry.store.padEnd(8)} <<${entry.kind}:${entry.name}>>${entry.label === undefined ? '' : `  ${entry.label}`}\n`);
      }
      if (entries.length === 0) io.stderr.write('execgate: no secrets stored\n');
    });

  secret
    .command('rm')
    .description('Remove a secret from the keyring and/or the vault')
    .argument('<name>')
    .addOption(storeOption())
    .action(async (name: string, flags: { store?: StoreName }) => {
      validateSecretName(name);
      const stores = getCliStores(io);
      const removed: StoreName[] = [];
      // Each store's removal is recorded before it is made.
      if (flags.store === undefined || flags.store === 'keyring') {
        const change = new ChangeRecord(io.env, 'secret.removed');
        try {
          if ((await stores.keyring.get(name)) !== null) {
            change.record({ kind: 'secret', name, stores: ['keyring'] });
            if (await stores.keyring.delete(name)) removed.push('keyring');
          }
        } catch (error) {
          if (isExecgateError(error)) throw change.failed(error);
          if (flags.store === 'keyring' || !(error instanceof KeyringUnavailableError)) throw change.failed(toKeyringError(error, `removing <<secret:${name}>>`));
        }
      }
      if (flags.store === undefined || flags.store === 'vault') {
        const change = new ChangeRecord(io.env, 'secret.removed');
        try {
          if (await stores.vault.remove('secret', name, { beforeCommit: () => change.record({ kind: 'secret', name, stores: ['vault'] }) })) removed.push('vault');
        } catch (error) {
          throw change.failed(error);
        }
      }
      if (removed.length === 0) {
        throw new ExecgateError(
          'EXECGATE_ERR_SECRET_NOT_FOUND',
          `No secret named \`${name}\` in the ${flags.store ?? 'keyring or the vault'}. See \`execgate secret list\`.`,
          { name },
        );
      }
      io.stdout.write(`${name}: removed from the ${removed.join(' and the ')}\n`);
    });

  secret
    .command('test')
    .description('Say whether <<secret:NAME>> resolves and from which source (never the value); exit 1 if it does not')
    .argument('<name>')
    .action(async (name: string) => {
      validateSecretName(name);
      const stores = getCliStores(io);
      let keyringNote = '';
      const location = await findSecretSource(name, {
        env: io.env,
        home: stores.home,
        keyring: stores.keyring,
        vault: stores.vault,
        onKeyringUnavailable: (reason) => { keyringNote = ` (unavailable: ${reason})`; },
      });
      if (location !== undefined) {
        io.stdout.write(`${name}: resolves from ${describeLocation(location)}\n`);
        return;
      }
      io.stdout.write(`${name}: not found (checked env, keyring${keyringNote}, vault); <<secret:${name}>> would stay literal\n`);
      throw new CliExit(1);
    });

  registerEncryptCommand(program, io);
  registerVaultCommands(program, io);
}
