/*
 * Importing the stores loads neither libsodium (WebAssembly start-up) nor the native keyring
 * addon; each is loaded by the first operation that needs it.
 */
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp';
import { childEnv, runChild } from './fixtures/run-child';

test('libsodium and @napi-rs/keyring load only when an operation needs them', async () => {
  const temp = makeTempDir('execgate-lazy-');
  try {
    const run = await runChild(
      `
      const heavy = () => Object.keys(require.cache)
        .filter((path) => /libsodium|@napi-rs[\\\\/]keyring/.test(path))
        .map((path) => (path.includes('libsodium') ? 'libsodium' : 'keyring'))
        .filter((name, index, all) => all.indexOf(name) === index)
        .sort();
      const sources = src('refs/sources');
      src('cli/commands/secret');
      const keyringSource = sources.createKeyringSource();
      const vaultSource = sources.createVaultSource({ home: ${JSON.stringify(join(temp.dir, 'home'))}, env: {} });
      emit({ step: 'import', heavy: heavy() });
      await vaultSource.lookup('secret', 'anything');
      emit({ step: 'lookup without a vault', heavy: heavy() });
      await new sources.Vault({ home: ${JSON.stringify(join(temp.dir, 'home'))}, env: {}, keyring: false }).set('a', 'value-of-a');
      emit({ step: 'vault write', heavy: heavy() });
      await keyringSource.lookup('secret', 'anything');
      emit({ step: 'keyring lookup', heavy: heavy() });
      `,
      { env: childEnv({ DBUS_SESSION_BUS_ADDRESS: undefined }) },
    );
    expect(run.lines.filter((line) => 'step' in line)).toEqual([
      { step: 'import', heavy: [] },
      { step: 'lookup without a vault', heavy: [] },
      { step: 'vault write', heavy: ['libsodium'] },
      { step: 'keyring lookup', heavy: ['keyring', 'libsodium'] },
    ]);
  } finally {
    temp.cleanup();
  }
});
