/*
 * The stores the secret commands manage, built from the CLI's environment: the vault under
 * `$EXECGATE_HOME` and the OS keyring (service `execgate`). Keyring errors become coded errors.
 */
import type { Command } from 'commander';
import { ExecgateError } from '../../errors';
import { getHome } from '../../home';
import {
  Vault,
  createDisabledKeyringClient,
  createKeyringClient,
  isKeyringDisabled,
  KeyringUnavailableError,
  type KeyringClient,
} from '../../stores';
import type { CliIo } from '../io';

export type StoreName = 'keyring' | 'vault';
export const STORE_NAMES: readonly StoreName[] = ['keyring', 'vault'];

export interface CliStores {
  readonly home: string;
  readonly vault: Vault;
  readonly keyring: KeyringClient;
}

export function getCliStores(io: CliIo): CliStores {
  const home = getHome(io.env);
  if (isKeyringDisabled(io.env)) {
    return {
      home,
      vault: new Vault({ home, env: io.env, keyring: false }),
      keyring: createDisabledKeyringClient(`switched off by EXECGATE_KEYRING=${io.env.EXECGATE_KEYRING}`),
    };
  }
  return { home, vault: new Vault({ home, env: io.env }), keyring: createKeyringClient() };
}

/** A keyring failure as EXECGATE_ERR_KEYRING_UNAVAILABLE (no keyring) or _FAILED (refused). */
export function toKeyringError(error: unknown, doing: string): ExecgateError {
  if (error instanceof KeyringUnavailableError) {
    return new ExecgateError(
      'EXECGATE_ERR_KEYRING_UNAVAILABLE',
      `No OS keyring is reachable for ${doing}: ${error.message}. Use \`--store vault\`, or start a Secret Service in this session.`,
      {},
      { cause: error },
    );
  }
  return new ExecgateError(
    'EXECGATE_ERR_KEYRING_FAILED',
    `The OS keyring refused ${doing}: ${(error as Error).message}. Unlock the keyring and retry.`,
    {},
    { cause: error },
  );
}

/** Run a keyring call, turning its failure into a coded error. */
export async function callKeyring<T>(doing: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toKeyringError(error, doing);
  }
}

/** Find `name` among a command's subcommands, or add it (another module may own the group). */
export function getOrAddCommand(parent: Command, name: string, description: string): Command {
  return parent.commands.find((command) => command.name() === name) ?? parent.command(name).description(description);
}
