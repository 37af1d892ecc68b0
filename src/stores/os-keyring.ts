/*
 * Thin access to the OS keyring through @napi-rs/keyring (macOS Keychain, Windows Credential
 * Manager, the Secret Service over D-Bus on Linux), shared by the keyring source and by the
 * vault's key storage.
 *
 * Every failure is sorted into one of two kinds, because they lead to opposite decisions:
 * - unavailable: there is no keyring to talk to (no D-Bus session bus, no Secret Service on the
 *   bus, no native module for this platform). keyring-rs reports these as
 *   "Platform failure: DBus error: ...", raised as soon as the entry is created. Callers carry
 *   on without the keyring. Other platform failures (macOS and Windows report access problems
 *   that way) are not taken as "no keyring": they fail closed.
 * - failed: a keyring answered but refused (collection locked and the unlock prompt dismissed,
 *   access denied, ambiguous entry): "Couldn't access platform storage: ..." and the rest.
 *   Callers fail closed.
 * A lookup of a missing entry is not an error: getPassword resolves null, even when locked.
 *
 * On Linux the Secret Service store is required explicitly: the default would fall back to the
 * kernel keyutils store, which does not persist across reboots and is refused in containers.
 * The module is required lazily so that importing execgate never loads the native addon.
 * Calls go through AsyncEntry (a worker thread): an unlock prompt must not block the event loop.
 */
import type * as KeyringModule from '@napi-rs/keyring';

type Keyring = typeof KeyringModule;

export const DEFAULT_SERVICE = 'execgate';
const DEFAULT_TIMEOUT_MS = 30_000;

export class KeyringUnavailableError extends Error {
  override readonly name = 'KeyringUnavailableError';
}

export class KeyringFailedError extends Error {
  override readonly name = 'KeyringFailedError';
}

let loaded: Keyring | undefined;

function loadKeyring(): Keyring {
  if (loaded === undefined) {
    try {
      loaded = require('@napi-rs/keyring') as Keyring;
    } catch (error) {
      throw new KeyringUnavailableError(`the keyring module cannot be loaded on this platform (${(error as Error).message})`, { cause: error });
    }
  }
  return loaded;
}

/** Sort a keyring-rs error into unavailable / failed. */
export function classifyKeyringError(error: unknown): KeyringUnavailableError | KeyringFailedError {
  if (error instanceof KeyringUnavailableError || error instanceof KeyringFailedError) return error;
  // Errors from the native module may come from another realm (test runners' VM contexts), where
  // `instanceof Error` is false; read `.message` structurally and tolerate an "Error: " prefix.
  const raw = typeof (error as { message?: unknown } | null)?.message === 'string' ? (error as { message: string }).message : String(error);
  const message = raw.replace(/^(?:Error: )+/, '');
  const noBus = /^Platform failure: (DBus error: .*)$/s.exec(message);
  if (noBus) return new KeyringUnavailableError(noBus[1].trim(), { cause: error });
  const storage = /^Couldn't access platform storage: (.*)$/s.exec(message);
  return new KeyringFailedError((storage ? storage[1] : message).trim(), { cause: error });
}

export interface KeyringClientOptions {
  service?: string;
  /** Give up on a keyring call after this long (an unlock prompt nobody answers), default 30 s. */
  timeoutMs?: number;
}

export interface KeyringClient {
  readonly service: string;
  get(account: string): Promise<string | null>;
  set(account: string, value: string): Promise<void>;
  /** True when an entry was deleted, false when there was none. */
  delete(account: string): Promise<boolean>;
  /** Every account stored under the service. */
  accounts(): Promise<string[]>;
  /** Whether a keyring answers at all; the reason when it does not. */
  probe(): Promise<{ available: true } | { available: false; reason: string }>;
}

/** An account name no secret can have (secret names start with a letter or digit). */
const PROBE_ACCOUNT = '__execgate_probe__';

export function createKeyringClient(options: KeyringClientOptions = {}): KeyringClient {
  const service = options.service ?? DEFAULT_SERVICE;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  async function call<T>(operation: string, run: (keyring: Keyring) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new KeyringFailedError(`${operation} did not finish within ${timeoutMs} ms (an unlock prompt may be waiting)`)),
        timeoutMs,
      );
      timer.unref();
    });
    try {
      return await Promise.race([(async () => run(loadKeyring()))(), timeout]);
    } catch (error) {
      throw classifyKeyringError(error);
    } finally {
      clearTimeout(timer);
    }
  }

  function entry(keyring: Keyring, account: string): KeyringModule.AsyncEntry {
    return new keyring.AsyncEntry(service, account, { linux: { store: 'secret-service' } });
  }

  const client: KeyringClient = {
    service,
    get: (account) => call('reading the keyring', (keyring) => entry(keyring, account).getPassword()),
    set: (account, value) => call('writing to the keyring', (keyring) => entry(keyring, account).setPassword(value)),
    delete: (account) => call('deleting from the keyring', (keyring) => entry(keyring, account).deleteCredential()),
    accounts: () =>
      call('listing the keyring', async (keyring) => {
        // Creating an entry first makes an absent keyring fail as "unavailable" like every other call.
        entry(keyring, PROBE_ACCOUNT);
        const found = await keyring.findCredentialsAsync(service);
        return found.map((credential) => credential.account);
      }),
    async probe() {
      try {
        await client.get(PROBE_ACCOUNT);
        return { available: true };
      } catch (error) {
        if (error instanceof KeyringUnavailableError) return { available: false, reason: error.message };
        return { available: true };
      }
    },
  };
  return Object.freeze(client);
}

/** A client for when the keyring is switched off: every call reports it unavailable. */
export function createDisabledKeyringClient(reason: string, service = DEFAULT_SERVICE): KeyringClient {
  const refuse = () => Promise.reject(new KeyringUnavailableError(reason));
  return Object.freeze({
    service,
    get: refuse,
    set: refuse,
    delete: refuse,
    accounts: refuse,
    probe: () => Promise.resolve({ available: false as const, reason }),
  });
}

/** `EXECGATE_KEYRING=off` (or 0, false, no) switches the OS keyring off. */
export function isKeyringDisabled(env: NodeJS.ProcessEnv): boolean {
  return /^(off|0|false|no)$/i.test(env.EXECGATE_KEYRING ?? '');
}
